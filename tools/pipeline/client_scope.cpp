#include "tools/pipeline/client_scope.hpp"
#include "server/mcp_server.hpp"

#include <algorithm>

namespace agency::tools {

std::string unknown_client_message(const std::string& client_id) {
    return "no client with id \"" + client_id +
           "\" is reachable with this key; list_clients gives the ids it can reach";
}

mcp::ToolResult unknown_client_error(const std::string& client_id) {
    return tool_error("not_found", unknown_client_message(client_id));
}

namespace {

// The client id a call's arguments name, as the caller wrote it; nullopt when they name none.
std::optional<std::string> named_client_id(const json& args) {
    if (!args.is_object()) return std::nullopt;
    auto id = args.find("client_id");
    if (id == args.end()) return std::nullopt;
    return id->is_string() ? id->get<std::string>() : id->dump();
}

}  // namespace

bool reaches_client_of(const json& args, const mcp::Principal& caller) {
    if (caller.clients.empty()) return true;
    const auto client_id = named_client_id(args);
    return !client_id || caller.reaches_client(*client_id);
}

void scope_tasks_to_clients(mcp::Server& server) {
    // A task records the arguments of the call that made it, its client_id among them.
    server.set_task_reach(
        [](const std::string&, const json& arguments, const mcp::Principal& caller) {
            return reaches_client_of(arguments, caller);
        });
}

std::optional<mcp::ToolResult> client_scope_refusal(const json& args,
                                                    const mcp::RequestContext& ctx) {
    if (reaches_client_of(args, ctx.principal)) return std::nullopt;
    return unknown_client_error(*named_client_id(args));
}

Handler within_client_scope(Handler handler, RefusalHook on_refused) {
    return [handler = std::move(handler), on_refused = std::move(on_refused)](
               const json& args, mcp::RequestContext& ctx) -> mcp::ToolResult {
        if (auto refusal = client_scope_refusal(args, ctx)) {
            if (on_refused) on_refused(args, ctx, *refusal);
            return std::move(*refusal);
        }
        return handler(args, ctx);
    };
}

}  // namespace agency::tools
