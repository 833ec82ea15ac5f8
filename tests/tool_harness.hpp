// A tool server wired to the sample gateway over loopback HTTP, for tool tests: the sample
// gateway on an ephemeral port, a gateway::Client on it, a Toolbox, and an mcp::Server with
// the tools registered. call() goes through Server::handle_message as a modern (2026-07-28)
// request, exactly as a transport would hand it over.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "server/mcp_server.hpp"
#include "tools/reads/read_tools.hpp"
#include "tools/registry.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {
struct ActionSettings;  // tools/pipeline/action_runtime.hpp
}  // namespace agency::tools

namespace agency::testing {

using json = nlohmann::json;

// What one tools/call gave back.
struct ToolReply {
    json response;      // the whole JSON-RPC response
    int rpc_error = 0;  // JSON-RPC error code; 0 when there is a result
    json result;        // result (null on an RPC error)

    bool is_error() const { return result.is_object() && result.value("isError", false); }
    const json& structured() const {
        static const json none;
        auto it = result.find("structuredContent");
        return it == result.end() ? none : *it;
    }
    // A tool error's {"reason", "message", ...} (null when the call succeeded).
    json tool_error() const {
        if (!is_error()) return nullptr;
        const json text = json::parse(result["content"][0].value("text", ""), nullptr, false);
        return text.is_object() && text.contains("error") ? text["error"] : json(nullptr);
    }
    std::string reason() const {
        const json e = tool_error();
        return e.is_object() ? e.value("reason", "") : "";
    }
};

using Registrar = std::function<void(mcp::Server&, const std::shared_ptr<tools::Toolbox>&)>;

struct ToolHarness {
    std::shared_ptr<sample::Gateway> gw;
    std::unique_ptr<sample::Server> gateway_server;
    std::shared_ptr<gateway::Client> client;
    std::shared_ptr<tools::Toolbox> box;
    std::unique_ptr<mcp::Server> server;
    int next_id = 1;

    // `tune` adjusts the gateway client's settings (short timeouts for fault tests).
    explicit ToolHarness(sample::Options options = {}, tools::Settings settings = {},
                         const Registrar& registrar = tools::register_read_tools,
                         const std::function<void(gateway::Config&)>& tune = {})
        : gw(std::make_shared<sample::Gateway>(std::move(options))),
          gateway_server(std::make_unique<sample::Server>(gw)) {
        gateway_server->start("127.0.0.1", 0);
        gateway::Config config;
        config.base_url = gateway_server->base_url();
        config.backoff_base = std::chrono::milliseconds(2);
        config.max_attempts = 3;
        config.read_timeout = std::chrono::seconds(10);
        config.connect_timeout = std::chrono::seconds(3);
        if (tune) tune(config);
        client = std::make_shared<gateway::Client>(config);
        if (settings.secret.empty()) settings.secret = "tool-harness-secret";
        box = std::make_shared<tools::Toolbox>(client, std::move(settings));
        mcp::ServerOptions server_options;
        server_options.state_secret = "tool-harness-state";
        server = std::make_unique<mcp::Server>(server_options);
        registrar(*server, box);
    }

    static json modern_meta() {
        return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    }

    // One JSON-RPC request as a modern, stateless caller named `principal`.
    json request(const std::string& method, json params, const std::string& principal = "local") {
        mcp::Principal who;
        who.name = principal;
        return request_as(who, method, std::move(params));
    }

    // As above for a caller with its own scopes (e.g. read only).
    json request_as(const mcp::Principal& principal, const std::string& method, json params) {
        params["_meta"] = modern_meta();
        const json message = {{"jsonrpc", "2.0"},
                              {"id", next_id++},
                              {"method", method},
                              {"params", std::move(params)}};
        mcp::Inbound in;
        in.principal = principal;
        auto text = server->handle_message(message, in);
        return text ? json::parse(text->text) : json(nullptr);
    }

    // A modern tools/call from a client that declares elicitation, as `principal`: the whole
    // JSON-RPC response (an input_required round carries the form).
    json eliciting_call(const std::string& tool, const json& args, const json& responses = nullptr,
                        const json& state = nullptr, const std::string& principal = "local") {
        json params = {{"name", tool}, {"arguments", args}};
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities",
                            {{"elicitation", json::object()}}}};
        if (!responses.is_null()) params["inputResponses"] = responses;
        if (!state.is_null()) params["requestState"] = state;
        const json message = {{"jsonrpc", "2.0"}, {"id", next_id++}, {"method", "tools/call"},
                              {"params", params}};
        mcp::Inbound in;
        in.principal.name = principal;
        auto text = server->handle_message(message, in);
        return text ? json::parse(text->text) : json(nullptr);
    }

    ToolReply call(const std::string& tool, const json& args,
                   const std::string& principal = "local") {
        mcp::Principal who;
        who.name = principal;
        return call_as(who, tool, args);
    }

    ToolReply call_as(const mcp::Principal& principal, const std::string& tool, const json& args) {
        ToolReply reply;
        reply.response = request_as(principal, "tools/call", {{"name", tool}, {"arguments", args}});
        if (reply.response.contains("error")) {
            reply.rpc_error = reply.response["error"].value("code", 0);
        } else {
            reply.result = reply.response.value("result", json());
        }
        return reply;
    }

    // The tool definitions as tools/list gives them.
    json tools(const std::string& principal = "local") {
        return request("tools/list", json::object(), principal)["result"]["tools"];
    }
    json tools_as(const mcp::Principal& principal) {
        return request_as(principal, "tools/list", json::object())["result"]["tools"];
    }

    // Requests the sample gateway has received so far (reads, actions and discovery).
    std::size_t requests() const { return gw->request_log().size(); }
};

}  // namespace agency::testing

// The names the tool tests write unqualified, declared once: such a test says `using namespace
// agency::testing::tool_names;`. None of them means anything else in a test, so the directive
// is safe in a unity batch too.
namespace agency::testing::tool_names {
using agency::mcp::Principal, agency::sample::Fault, agency::sample::FaultMode,
    agency::testing::ToolHarness, agency::testing::ToolReply, agency::tools::ActionRuntime,
    agency::tools::ActionSettings;
}  // namespace agency::testing::tool_names
