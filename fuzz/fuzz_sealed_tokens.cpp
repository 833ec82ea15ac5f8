// The opening of every token the server hands out and takes back: list cursors (sealed),
// requestState (sealed), confirmation ids (random, looked up in the state database), and the
// tasks/list and tools/list cursors. Input: one selector byte, then the token (or, for the
// "sealed" variants, a JSON payload that the harness seals with the server's own key, so that
// what the server does with a well-sealed but unexpected payload is fuzzed too).
// A forged or altered token must be refused with an error; nothing may crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "base/sealed_token.hpp"
#include "fuzz/fuzz_common.hpp"
#include "server/json_rpc.hpp"
#include "state/store.hpp"

namespace {

using nlohmann::json;

agency::fuzz::ToolServer* g_server = nullptr;
std::shared_ptr<agency::mcp::Session> g_legacy;
std::string g_real_confirmation;
std::int64_t g_id = 0;

json call(const std::string& method, json params, bool modern) {
    agency::mcp::Inbound in;
    if (modern) {
        params["_meta"] = agency::fuzz::modern_meta();
    } else {
        in.session = g_legacy;
    }
    const json message = {
        {"jsonrpc", "2.0"}, {"id", ++g_id}, {"method", method}, {"params", std::move(params)}};
    const auto reply = g_server->server->handle_message(message, in);
    if (!reply) {
        std::fprintf(stderr, "%s got no answer\n", method.c_str());
        std::abort();
    }
    return json::parse(reply->text);
}

// A token the input names must never be taken for one the server issued.
void expect_refused(const json& answer, const char* what) {
    if (answer.contains("error")) return;
    const json& result = answer["result"];
    if (result.value("isError", false)) return;
    std::fprintf(stderr, "a forged %s was accepted: %.2000s\n", what, answer.dump().c_str());
    std::abort();
}

std::optional<json> payload_of(std::string_view text) {
    json payload = json::parse(text, nullptr, false);
    if (payload.is_discarded()) return std::nullopt;
    return payload;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    agency::fuzz::quiet_logs();
    g_server = agency::fuzz::start_tool_server();
    // A legacy (2025-11-25) session for tasks/list, as stdio opens one.
    g_legacy = g_server->server->create_session("");
    agency::fuzz::at_exit([] { g_legacy.reset(); });
    g_server->server->register_session(g_legacy);
    call("initialize",
         {{"protocolVersion", "2025-11-25"},
          {"capabilities", {{"tasks", json::object()}}},
          {"clientInfo", {{"name", "fuzz"}, {"version", "1"}}}},
         false);
    agency::mcp::Inbound in;
    in.session = g_legacy;
    g_server->server->handle_message({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                                     in);
    // A real confirmation, which no token from the input may consume for another call.
    g_real_confirmation =
        g_server->actions->store()
            .create_confirmation("local", "deploy_article", "digest-of-other-arguments", std::chrono::seconds(600))
            .id;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string token(agency::fuzz::as_text(data + 1, size - 1));
    auto& server = *g_server;
    const std::string cursor_key = agency::base::token_key(agency::fuzz::ToolServer::kSecret, "cursor");
    switch (data[0] % 8) {
        case 0: {  // a list cursor, opened by the tool kit directly
            const json filters = {{"keyword", "x"}};
            try {
                server.toolbox->open_cursor({.tool = "list_keywords",
                                             .client_id = "demo-plumbing",
                                             .principal = "local",
                                             .filters = &filters},
                                            token);
                std::fprintf(stderr, "a forged cursor was opened\n");
                std::abort();
            } catch (const agency::mcp::RpcError&) {
            }
            break;
        }
        case 1: {  // a list cursor through a read tool
            if (!json(token).is_string()) break;
            try {
                (void)json(token).dump();
            } catch (const json::exception&) {
                break;  // invalid UTF-8: no transport can deliver it
            }
            expect_refused(call("tools/call",
                                {{"name", "list_keywords"},
                                 {"arguments", {{"client_id", "demo-plumbing"}, {"cursor", token}}}},
                                true),
                           "cursor");
            break;
        }
        case 2: {  // a payload sealed with the cursor key: what the tool does with its fields
            auto payload = payload_of(token);
            if (!payload) break;
            const std::string sealed = agency::crypto::seal(cursor_key, *payload);
            call("tools/call",
                 {{"name", "list_keywords"},
                  {"arguments", {{"client_id", "demo-plumbing"}, {"cursor", sealed}}}},
                 true);
            break;
        }
        case 3:    // a requestState as the input gives it
        case 4: {  // a payload sealed with the server's own key
            std::string state = token;
            if (data[0] % 8 == 4) {
                auto payload = payload_of(token);
                if (!payload) break;
                state = agency::crypto::seal(
                    agency::base::token_key(agency::fuzz::ToolServer::kSecret, "request-state"),
                    *payload);
            }
            try {
                (void)json(state).dump();
            } catch (const json::exception&) {
                break;
            }
            const json answer =
                call("tools/call",
                     {{"name", "deploy_article"},
                      {"arguments", {{"client_id", "demo-plumbing"}, {"article_id", "art-1"}}},
                      {"requestState", state},
                      {"inputResponses",
                       {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}}}},
                     true);
            if (data[0] % 8 == 3) expect_refused(answer, "requestState");
            break;
        }
        case 5: {  // a confirmation id, against the state database
            const auto outcome = server.actions->store().consume_confirmation(
                token, "local", "deploy_article", "digest-of-these-arguments");
            if (outcome == agency::tools::ConfirmOutcome::accepted) {
                std::fprintf(stderr, "a forged confirmation id was accepted\n");
                std::abort();
            }
            break;
        }
        case 6: {  // a confirmation id through the tool
            try {
                (void)json(token).dump();
            } catch (const json::exception&) {
                break;
            }
            expect_refused(call("tools/call",
                                {{"name", "deploy_article"},
                                 {"arguments",
                                  {{"client_id", "demo-plumbing"},
                                   {"article_id", "art-1"},
                                   {"confirmation_id", token}}}},
                                true),
                           "confirmation id");
            break;
        }
        case 7: {  // the tasks/list (legacy) and tools/list cursors
            try {
                (void)json(token).dump();
            } catch (const json::exception&) {
                break;
            }
            call("tasks/list", {{"cursor", token}}, false);
            call("tools/list", {{"cursor", token}}, true);
            break;
        }
    }
    return 0;
}
