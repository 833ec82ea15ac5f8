// Client scopes (issue 35): a caller whose mcp::Principal::clients names some clients reaches
// those only. Any other client does not exist for it: every route that names one (a tool's
// client_id, a resource URI, a prompt's argument, completion) answers as for an unknown id, from
// here, before anything reaches the gateway; lists (list_clients, resources/list, completion)
// hold its clients only.
#pragma once

#include <optional>
#include <string>

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// The one answer a scoped caller gets for a client outside its scope, whether the client
// exists or not: reason not_found and this message (it names nothing but the id asked for).
std::string unknown_client_message(const std::string& client_id);
mcp::ToolResult unknown_client_error(const std::string& client_id);

// Whether `caller` reaches the client a call's `client_id` argument names (true when it names
// none, or the caller has no client scope): the one rule of every check below.
bool reaches_client_of(const json& args, const mcp::Principal& caller);

// Binds the server's tasks to the client they work on: a task of a client its caller no
// longer reaches (a key narrowed since) reads as unknown on every task method.
void scope_tasks_to_clients(mcp::Server& server);

// The refusal for a call whose `client_id` argument the caller may not reach; nullopt when it
// may (or the call names no client).
std::optional<mcp::ToolResult> client_scope_refusal(const json& args,
                                                    const mcp::RequestContext& ctx);

// A tool handler that answers client_scope_refusal before `handler` runs; `on_refused` hears
// the refusal (the write log of the action tools).
Handler within_client_scope(Handler handler, RefusalHook on_refused);

}  // namespace agency::tools
