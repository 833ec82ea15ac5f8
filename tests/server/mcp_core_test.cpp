// MCP core (Server::handle, both protocol eras) and the stdio transport, driven in-process.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "server/json_rpc.hpp"
#include "server/mcp_server.hpp"
#include "tests/stdio_harness.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/wait.hpp"
#include "transport/stdio_transport.hpp"

namespace {

using namespace agency::testing::core_names;
using namespace std::chrono_literals;
using agency::testing::StdioHarness;

constexpr const char* kVersionKey = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kCapsKey = "io.modelcontextprotocol/clientCapabilities";

// Observations shared between the test tools and the tests.
struct ToolProbe {
    std::atomic<bool> loop_started{false};
    std::atomic<bool> loop_stopped{false};
    agency::testing::Gate slow_release;  // lets `slow` answer before its 500 ms are up
};

json confirm_schema() {
    return {{"type", "object"},
            {"properties", {{"confirm", {{"type", "boolean"}}}}},
            {"required", {"confirm"}}};
}

void register_test_tools(Server& server, ToolProbe& probe) {
    ToolDef echo;
    echo.name = "echo";
    echo.description = "Echoes its text argument.";
    echo.input_schema = {{"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}};
    echo.handler = [](const json& args, RequestContext&) {
        return ToolResult::text("echo:" + args.value("text", std::string()));
    };
    server.add_tool(std::move(echo));

    ToolDef interactive;
    interactive.name = "confirm_deploy";
    interactive.description = "Asks for confirmation, then deploys.";
    interactive.input_schema = {{"type", "object"},
                                {"properties", {{"target", {{"type", "string"}}}}}};
    interactive.interactive = true;
    interactive.handler = [](const json& args, RequestContext& ctx) {
        ctx.progress(1, 2, "asking");
        ctx.log("info", json{{"asking", args.value("target", std::string())}});
        json answer = ctx.ask("confirm", "elicitation/create",
                              {{"message", "Deploy?"}, {"requestedSchema", confirm_schema()}});
        bool yes = answer.value("action", std::string()) == "accept" &&
                   answer.contains("content") && answer["content"].value("confirm", false);
        return ToolResult::text(yes ? "deployed" : "declined");
    };
    server.add_tool(std::move(interactive));

    ToolDef writer;
    writer.name = "write_thing";
    writer.description = "Needs the write scope.";
    writer.input_schema = {{"type", "object"}};
    writer.required_scopes = {"write"};
    writer.handler = [](const json&, RequestContext&) { return ToolResult::text("written"); };
    server.add_tool(std::move(writer));

    ToolDef slow;
    slow.name = "slow";
    slow.description = "Waits 500 ms, or until the test lets it go.";
    slow.input_schema = {{"type", "object"}};
    slow.handler = [&probe](const json&, RequestContext&) {
        (void)probe.slow_release.wait_for(500ms);
        return ToolResult::text("slept");
    };
    server.add_tool(std::move(slow));

    ToolDef loop;
    loop.name = "loop";
    loop.description = "Runs until cancelled (at most 3 s).";
    loop.input_schema = {{"type", "object"}};
    loop.handler = [&probe](const json&, RequestContext& ctx) {
        probe.loop_started = true;
        probe.loop_stopped = agency::testing::wait_for_stop(ctx.stop, 3s);
        return ToolResult::text("loop ended");
    };
    server.add_tool(std::move(loop));
}

std::string request(const json& id, const std::string& method, json params = json::object()) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}
        .dump();
}

json modern_meta() { return {{kVersionKey, "2026-07-28"}, {kCapsKey, json::object()}}; }

json with_meta(json params, json meta = modern_meta()) {
    params["_meta"] = std::move(meta);
    return params;
}

json initialize_params(const std::string& version = "2025-11-25") {
    return {{"protocolVersion", version},
            {"capabilities", {{"elicitation", json::object()}}},
            {"clientInfo", {{"name", "test"}, {"version", "1"}}}};
}

bool wait_until(const std::atomic<bool>& flag, std::chrono::milliseconds limit = 2000ms) {
    return agency::testing::eventually([&] { return flag.load(); }, limit, 1ms);
}

// --- McpCore: Server::handle with a stdio-like Inbound --------------------------------------

class McpCore : public ::testing::Test {
protected:
    void SetUp() override { make_server({}); }

    void make_server(ServerOptions options) {
        options.state_secret = "test-secret";
        server_ = std::make_unique<Server>(std::move(options));
        register_test_tools(*server_, probe_);
        in_ = Inbound{};
        in_.session = server_->create_session("");
    }

    // Sends a raw message; returns the parsed reply (null when there was none).
    json send(const std::string& text, const Inbound* in = nullptr) {
        auto reply = server_->handle(text, in ? *in : in_);
        if (!reply) return nullptr;
        json parsed = json::parse(reply->text, nullptr, false);
        EXPECT_FALSE(parsed.is_discarded()) << reply->text;
        // The typed reply says what its text says (transports decide the HTTP status by it).
        const bool error = parsed.is_object() && parsed.contains("error");
        EXPECT_EQ(reply->error_code, error ? parsed["error"].value("code", 0) : 0) << reply->text;
        if (error && reply->error_code == agency::mcp::error_code::rate_limited) {
            EXPECT_EQ(reply->retry_after_s,
                      std::max(1LL, parsed["error"]["data"].value("retryAfterSeconds", 1LL)));
        }
        return parsed;
    }
    json call(const json& id, const std::string& method, json params = json::object(),
              const Inbound* in = nullptr) {
        return send(request(id, method, std::move(params)), in);
    }
    json initialize(const Inbound* in = nullptr, const std::string& version = "2025-11-25") {
        json reply = call(0, "initialize", initialize_params(version), in);
        EXPECT_TRUE(reply.contains("result")) << reply.dump();
        send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", in);
        return reply;
    }
    // A modern request (no session).
    json modern(const json& id, const std::string& method, json params = json::object(),
                json meta = modern_meta()) {
        Inbound stateless;
        return call(id, method, with_meta(std::move(params), std::move(meta)), &stateless);
    }

    static int error_code(const json& reply) {
        if (!reply.is_object() || !reply.contains("error")) return 0;
        return reply["error"].value("code", 0);
    }
    static std::string error_message(const json& reply) {
        return reply.is_object() && reply.contains("error")
                   ? reply["error"].value("message", std::string())
                   : std::string();
    }
    static std::vector<std::string> tool_names(json list_reply) {
        std::vector<std::string> names;
        for (const auto& t : list_reply["result"]["tools"]) names.push_back(t.value("name", ""));
        return names;
    }
    static bool contains(const std::vector<std::string>& names, const std::string& name) {
        return std::find(names.begin(), names.end(), name) != names.end();
    }

    // Modern multi-round-trip helpers (confirm_deploy).
    // First round: returns the input_required result.
    json first_round(const json& args = {{"target", "prod"}}) {
        json reply = modern(1, "tools/call", {{"name", "confirm_deploy"}, {"arguments", args}});
        EXPECT_TRUE(reply.contains("result")) << reply.dump();
        return reply;
    }
    json retry(const json& id, const json& state, const json& args = {{"target", "prod"}},
               const json& responses = accept()) {
        json params = {{"name", "confirm_deploy"}, {"arguments", args}};
        if (!responses.is_null()) params["inputResponses"] = responses;
        if (!state.is_null()) params["requestState"] = state;
        return modern(id, "tools/call", std::move(params));
    }
    static json accept() {
        return {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    }

    ToolProbe probe_;
    std::unique_ptr<Server> server_;
    Inbound in_;
};

TEST_F(McpCore, MalformedJsonIsParseErrorWithNullId) {
    json reply = send(R"({"jsonrpc":"2.0","id":1,"method":)");
    EXPECT_EQ(error_code(reply), -32700);
    ASSERT_TRUE(reply.contains("id"));
    EXPECT_TRUE(reply["id"].is_null());
}

TEST_F(McpCore, WrongFieldTypesAreInvalidRequest) {
    struct Case {
        const char* text;
        json expected_id;
    };
    const std::vector<Case> cases = {
        {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", 1},
        {R"({"id":2,"method":"ping"})", 2},
        {R"({"jsonrpc":"2.0","id":3,"method":42})", 3},
        {R"({"jsonrpc":"2.0","id":4,"method":"ping","params":"x"})", 4},
        {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", nullptr},
        {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", nullptr},
        {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", nullptr},
        {R"("just a string")", nullptr},
        {R"({"jsonrpc":"2.0","id":5})", 5},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        json reply = send(c.text);
        EXPECT_EQ(error_code(reply), -32600);
        ASSERT_TRUE(reply.contains("id"));
        EXPECT_EQ(reply["id"], c.expected_id);
        EXPECT_FALSE(reply.contains("result"));
    }
}

TEST_F(McpCore, BatchArrayIsRejected) {
    json reply = send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
    ASSERT_TRUE(reply.is_object());
    EXPECT_EQ(error_code(reply), -32600);
    EXPECT_TRUE(reply["id"].is_null());
    EXPECT_NE(error_message(reply).find("batch"), std::string::npos);
}

TEST_F(McpCore, UnknownMethodIsMethodNotFound) {
    initialize();
    json reply = call(7, "tools/frobnicate");
    EXPECT_EQ(error_code(reply), -32601);
    EXPECT_EQ(reply["id"], 7);
}

TEST_F(McpCore, NotificationsAndStrayResponsesGetNoReply) {
    EXPECT_FALSE(server_->handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", in_));
    EXPECT_FALSE(server_->handle(R"({"jsonrpc":"2.0","method":"notifications/whatever",
                                    "params":{"x":1}})",
                                 in_));
    // An unknown method as a notification is still not answered.
    EXPECT_FALSE(server_->handle(R"({"jsonrpc":"2.0","method":"no/such/method"})", in_));
    // Responses with no pending request are ignored.
    EXPECT_FALSE(server_->handle(R"({"jsonrpc":"2.0","id":"agency-999","result":{}})", in_));
    EXPECT_FALSE(
        server_->handle(R"({"jsonrpc":"2.0","id":17,"error":{"code":-1,"message":"nope"}})", in_));
}

TEST_F(McpCore, RequestBeforeInitializeIsRejected) {
    json reply = call(1, "tools/list");
    EXPECT_EQ(error_code(reply), -32602);
    EXPECT_NE(error_message(reply).find("initialize"), std::string::npos) << reply.dump();
    EXPECT_EQ(reply["id"], 1);
}

TEST_F(McpCore, PingBeforeInitializeWorks) {
    json reply = call("p", "ping");
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    EXPECT_EQ(reply["result"], json::object());
    EXPECT_EQ(reply["id"], "p");
}

TEST_F(McpCore, InitializeNegotiatesVersion) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"2025-11-25", "2025-11-25"},
        {"2025-06-18", "2025-06-18"},
        {"1999-01-01", "2025-11-25"},
        {"2026-07-28", "2025-11-25"},
    };
    for (const auto& [asked, expected] : cases) {
        SCOPED_TRACE(asked);
        Inbound in;
        in.session = server_->create_session("");
        json reply = call(1, "initialize", initialize_params(asked), &in);
        ASSERT_TRUE(reply.contains("result")) << reply.dump();
        EXPECT_EQ(reply["result"]["protocolVersion"], expected);
        EXPECT_EQ(in.session->protocol_version, expected);
    }
}

TEST_F(McpCore, InitializeReportsServerInfoAndCapabilities) {
    json reply = initialize();
    json result = reply["result"];
    EXPECT_EQ(result["serverInfo"]["name"], "agency-mcp");
    EXPECT_TRUE(result["serverInfo"].contains("version"));
    json caps = result["capabilities"];
    EXPECT_TRUE(caps.contains("tools"));
    EXPECT_TRUE(caps.contains("logging"));
    EXPECT_TRUE(caps.contains("completions"));
    EXPECT_EQ(in_.session->client_capabilities, json({{"elicitation", json::object()}}));
    EXPECT_TRUE(in_.session->initialized);
}

TEST_F(McpCore, SecondInitializeIsRejected) {
    initialize();
    json reply = call(2, "initialize", initialize_params());
    EXPECT_NE(error_code(reply), 0) << reply.dump();
    EXPECT_FALSE(reply.contains("result"));
    EXPECT_EQ(in_.session->protocol_version, "2025-11-25");
}

TEST_F(McpCore, ToolsListReturnsRegisteredTools) {
    initialize();
    json reply = call(1, "tools/list");
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    auto names = tool_names(reply);
    EXPECT_EQ(names,
              (std::vector<std::string>{"echo", "confirm_deploy", "write_thing", "slow", "loop"}));
    EXPECT_FALSE(reply["result"].contains("nextCursor"));
    json echo = reply["result"]["tools"][0];
    EXPECT_EQ(echo["inputSchema"]["type"], "object");
    EXPECT_EQ(echo["description"], "Echoes its text argument.");
    // Legacy results carry none of the 2026 fields.
    EXPECT_FALSE(reply["result"].contains("resultType"));
}

TEST_F(McpCore, ToolsListPaginates) {
    ServerOptions options;
    options.tools_page_size = 2;
    make_server(options);
    initialize();
    std::vector<std::string> all;
    json params = json::object();
    int pages = 0;
    for (; pages < 10; ++pages) {
        json reply = call(pages + 1, "tools/list", params);
        ASSERT_TRUE(reply.contains("result")) << reply.dump();
        auto names = tool_names(reply);
        EXPECT_LE(names.size(), 2u);
        all.insert(all.end(), names.begin(), names.end());
        if (!reply["result"].contains("nextCursor")) break;
        ASSERT_TRUE(reply["result"]["nextCursor"].is_string());
        params = {{"cursor", reply["result"]["nextCursor"]}};
    }
    EXPECT_EQ(pages + 1, 3);
    EXPECT_EQ(all,
              (std::vector<std::string>{"echo", "confirm_deploy", "write_thing", "slow", "loop"}));
}

TEST_F(McpCore, ForgedCursorIsInvalidParams) {
    ServerOptions options;
    options.tools_page_size = 2;
    make_server(options);
    initialize();
    for (json cursor : {json("not a cursor!"), json("dG9vbHM6OTk"), json("eHl6"), json(42)}) {
        SCOPED_TRACE(cursor.dump());
        json reply = call(1, "tools/list", {{"cursor", cursor}});
        EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    }
}

TEST_F(McpCore, ToolsCallRoundTrip) {
    initialize();
    json reply = call(3, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}});
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    EXPECT_EQ(reply["id"], 3);
    EXPECT_EQ(reply["result"]["content"][0]["type"], "text");
    EXPECT_EQ(reply["result"]["content"][0]["text"], "echo:hi");
    EXPECT_EQ(reply["result"]["isError"], false);
}

TEST_F(McpCore, UnknownToolIsProtocolError) {
    initialize();
    json reply = call(1, "tools/call", {{"name", "nope"}, {"arguments", json::object()}});
    EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    EXPECT_FALSE(reply.contains("result"));
    json missing_name = call(2, "tools/call", {{"arguments", json::object()}});
    EXPECT_EQ(error_code(missing_name), -32602) << missing_name.dump();
}

TEST_F(McpCore, NonObjectArgumentsAreInvalidParams) {
    initialize();
    for (json args : {json::array({1, 2}), json("text"), json(5)}) {
        SCOPED_TRACE(args.dump());
        json reply = call(1, "tools/call", {{"name", "echo"}, {"arguments", args}});
        EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    }
}

TEST_F(McpCore, ScopeHidesAndRefusesWriteTool) {
    Inbound reader;
    reader.session = server_->create_session("");
    reader.principal = Principal{"reader", {"read"}};
    initialize(&reader);
    auto names = tool_names(call(1, "tools/list", json::object(), &reader));
    EXPECT_TRUE(contains(names, "echo"));
    EXPECT_FALSE(contains(names, "write_thing"));

    json reply = call(2, "tools/call", {{"name", "write_thing"}}, &reader);
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    EXPECT_EQ(reply["result"]["isError"], true);
    std::string text = reply["result"]["content"][0]["text"];
    EXPECT_NE(text.find("scope"), std::string::npos) << text;
    EXPECT_EQ(text.find("written"), std::string::npos);

    // The default principal has both scopes.
    initialize();
    EXPECT_TRUE(contains(tool_names(call(3, "tools/list")), "write_thing"));
    json ok = call(4, "tools/call", {{"name", "write_thing"}});
    EXPECT_EQ(ok["result"]["content"][0]["text"], "written") << ok.dump();
}

TEST_F(McpCore, LoggingSetLevel) {
    initialize();
    EXPECT_EQ(error_code(call(1, "logging/setLevel", {{"level", "loud"}})), -32602);
    EXPECT_EQ(error_code(call(2, "logging/setLevel", json::object())), -32602);
    json ok = call(3, "logging/setLevel", {{"level", "error"}});
    ASSERT_TRUE(ok.contains("result")) << ok.dump();
    EXPECT_EQ(in_.session->log_level.load(), 4);
}

TEST_F(McpCore, CompletionReturnsEmptyValues) {
    initialize();
    json reply = call(1, "completion/complete",
                      {{"ref", {{"type", "ref/prompt"}, {"name", "x"}}},
                       {"argument", {{"name", "a"}, {"value", "b"}}}});
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    EXPECT_EQ(reply["result"], json({{"completion", {{"values", json::array()}}}}));
    EXPECT_EQ(error_code(call(2, "completion/complete", json::object())), -32602);
}

TEST_F(McpCore, InteractiveToolWithoutChannelFailsCleanly) {
    // Server::handle with no channel cannot ask the client anything: an error, not a hang.
    initialize();
    json reply = call(1, "tools/call", {{"name", "confirm_deploy"}});
    EXPECT_TRUE(reply.contains("error") ||
                (reply.contains("result") && reply["result"]["isError"] == true))
        << reply.dump();
}

// --- modern era -----------------------------------------------------------------------------

TEST_F(McpCore, ModernServerDiscover) {
    json reply = modern(1, "server/discover");
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    json r = reply["result"];
    ASSERT_TRUE(r["supportedVersions"].is_array());
    EXPECT_NE(
        std::find(r["supportedVersions"].begin(), r["supportedVersions"].end(), json("2026-07-28")),
        r["supportedVersions"].end());
    EXPECT_NE(
        std::find(r["supportedVersions"].begin(), r["supportedVersions"].end(), json("2025-11-25")),
        r["supportedVersions"].end());
    EXPECT_TRUE(r["capabilities"].contains("tools"));
    EXPECT_EQ(r["resultType"], "complete");
    EXPECT_TRUE(r["ttlMs"].is_number_integer());
    EXPECT_TRUE(r["cacheScope"] == "private" || r["cacheScope"] == "public");
    EXPECT_EQ(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "agency-mcp");
}

TEST_F(McpCore, ModernToolsListHasCacheFields) {
    json reply = modern(1, "tools/list");
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    json r = reply["result"];
    EXPECT_EQ(r["resultType"], "complete");
    EXPECT_TRUE(r["ttlMs"].is_number_integer());
    EXPECT_TRUE(r.contains("cacheScope"));
    EXPECT_TRUE(contains(tool_names(reply), "echo"));
}

TEST_F(McpCore, ModernToolsCall) {
    json reply = modern(1, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "m"}}}});
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    EXPECT_EQ(reply["result"]["resultType"], "complete");
    EXPECT_EQ(reply["result"]["content"][0]["text"], "echo:m");
}

TEST_F(McpCore, ModernUnsupportedVersion) {
    json meta = {{kVersionKey, "2099-01-01"}, {kCapsKey, json::object()}};
    json reply = modern(1, "tools/list", json::object(), meta);
    EXPECT_EQ(error_code(reply), -32022) << reply.dump();
    json data = reply["error"]["data"];
    EXPECT_EQ(data["requested"], "2099-01-01");
    ASSERT_TRUE(data["supported"].is_array());
    EXPECT_NE(std::find(data["supported"].begin(), data["supported"].end(), json("2026-07-28")),
              data["supported"].end());
}

TEST_F(McpCore, ModernMissingClientCapabilities) {
    json reply = modern(1, "tools/list", json::object(), {{kVersionKey, "2026-07-28"}});
    EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    EXPECT_NE(error_message(reply).find("clientCapabilities"), std::string::npos);
}

TEST_F(McpCore, ModernPingIsRemoved) {
    EXPECT_EQ(error_code(modern(1, "ping")), -32601);
    EXPECT_EQ(error_code(modern(2, "logging/setLevel", {{"level", "info"}})), -32601);
}

TEST_F(McpCore, MrtrInputRequiredThenComplete) {
    json first = first_round();
    json r = first["result"];
    EXPECT_EQ(r["resultType"], "input_required");
    EXPECT_EQ(r["inputRequests"]["confirm"]["method"], "elicitation/create");
    EXPECT_EQ(r["inputRequests"]["confirm"]["params"]["message"], "Deploy?");
    ASSERT_TRUE(r["requestState"].is_string());
    EXPECT_FALSE(r.contains("content"));

    json done = retry(2, r["requestState"]);
    ASSERT_TRUE(done.contains("result")) << done.dump();
    EXPECT_EQ(done["id"], 2);
    EXPECT_EQ(done["result"]["resultType"], "complete");
    EXPECT_EQ(done["result"]["content"][0]["text"], "deployed");
}

TEST_F(McpCore, MrtrDeclineIsPassedToTheTool) {
    json first = first_round();
    json decline = {{"confirm", {{"action", "decline"}}}};
    json done = retry(2, first["result"]["requestState"], {{"target", "prod"}}, decline);
    EXPECT_EQ(done["result"]["content"][0]["text"], "declined") << done.dump();
}

TEST_F(McpCore, MrtrReplayedStateIsRejected) {
    json state = first_round()["result"]["requestState"];
    json done = retry(2, state);
    ASSERT_EQ(done["result"]["resultType"], "complete") << done.dump();
    json replay = retry(3, state);
    EXPECT_EQ(error_code(replay), -32602) << replay.dump();
    EXPECT_NE(error_message(replay).find("already used"), std::string::npos) << replay.dump();
}

TEST_F(McpCore, MrtrAlteredStateIsRejected) {
    std::string state = first_round()["result"]["requestState"];
    ASSERT_GT(state.size(), 10u);
    std::string altered = state;
    altered[5] = altered[5] == 'A' ? 'Q' : 'A';
    json reply = retry(2, altered);
    EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    // Altering the MAC part is caught as well.
    std::string bad_mac = state;
    auto dot = bad_mac.find('.');
    ASSERT_NE(dot, std::string::npos);
    bad_mac[dot + 2] = bad_mac[dot + 2] == 'A' ? 'Q' : 'A';
    EXPECT_EQ(error_code(retry(3, bad_mac)), -32602);
    EXPECT_EQ(error_code(retry(4, "garbage")), -32602);
    // The untouched state still works: rejection did not consume it.
    json ok = retry(5, state);
    EXPECT_EQ(ok["result"]["content"][0]["text"], "deployed") << ok.dump();
}

TEST_F(McpCore, MrtrStateBoundToArguments) {
    json state = first_round({{"target", "prod"}})["result"]["requestState"];
    json reply = retry(2, state, {{"target", "staging"}});
    EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    EXPECT_NE(error_message(reply).find("arguments"), std::string::npos);
}

TEST_F(McpCore, MrtrStateBoundToPrincipal) {
    json state = first_round()["result"]["requestState"];
    Inbound other;
    other.principal = Principal{"someone-else", {"read", "write"}};
    json reply = call(2, "tools/call",
                      with_meta({{"name", "confirm_deploy"},
                                 {"arguments", {{"target", "prod"}}},
                                 {"inputResponses", accept()},
                                 {"requestState", state}}),
                      &other);
    EXPECT_EQ(error_code(reply), -32602) << reply.dump();
}

TEST_F(McpCore, MrtrInputResponsesWithoutStateAreNotTrusted) {
    // Answers the server never asked for (no requestState) must not reach the tool: either
    // the call is refused (-32602) or the question is asked again.
    json reply = retry(2, nullptr);
    if (reply.contains("error")) {
        EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    } else {
        ASSERT_TRUE(reply.contains("result")) << reply.dump();
        EXPECT_EQ(reply["result"]["resultType"], "input_required") << reply.dump();
        EXPECT_FALSE(reply["result"].contains("content")) << reply.dump();
    }
}

TEST_F(McpCore, MrtrStateFromAnotherServerIsRejected) {
    json state = first_round()["result"]["requestState"];
    ServerOptions options;
    options.state_secret = "another-secret";
    Server other(options);
    ToolProbe probe;
    register_test_tools(other, probe);
    Inbound stateless;
    auto reply = other.handle(request(2, "tools/call",
                                      with_meta({{"name", "confirm_deploy"},
                                                 {"arguments", {{"target", "prod"}}},
                                                 {"inputResponses", accept()},
                                                 {"requestState", state}})),
                              stateless);
    ASSERT_TRUE(reply);
    EXPECT_EQ(error_code(json::parse(reply->text)), -32602) << reply->text;
    EXPECT_EQ(reply->error_code, -32602);
}

TEST_F(McpCore, MrtrStateExpiresByTheServerClock) {
    agency::testing::ManualClock clock;
    ServerOptions options;
    options.clock = &clock;
    options.state_ttl = std::chrono::seconds(60);
    make_server(options);
    json state = first_round()["result"]["requestState"];
    clock.advance(std::chrono::seconds(61));
    json reply = retry(2, state);
    EXPECT_EQ(error_code(reply), -32602) << reply.dump();
    EXPECT_NE(error_message(reply).find("requestState integrity check failed: it has expired"),
              std::string::npos)
        << reply.dump();
}

TEST_F(McpCore, SessionsExpireByTheServerClock) {
    agency::testing::ManualClock clock;
    ServerOptions options;
    options.clock = &clock;
    make_server(options);
    server_->register_session(server_->create_session("idle-session"));
    EXPECT_EQ(server_->expire_sessions(std::chrono::minutes(1)), 0u);
    clock.advance(std::chrono::minutes(2));
    EXPECT_EQ(server_->expire_sessions(std::chrono::minutes(1)), 1u);
    EXPECT_EQ(server_->find_session("idle-session"), nullptr);
}

// --- stdio transport ------------------------------------------------------------------------

class StdioTransport : public ::testing::Test {
protected:
    StdioTransport() {
        ServerOptions options;
        options.state_secret = "stdio-secret";
        server_ = std::make_unique<Server>(options);
        register_test_tools(*server_, probe_);
    }
    std::unique_ptr<StdioHarness> start(agency::mcp::StdioOptions options = {}) {
        options.drain_timeout = 2000ms;
        return std::make_unique<StdioHarness>(*server_, options);
    }
    static void initialize(StdioHarness& io) {
        io.write_line(request(0, "initialize", initialize_params()));
        json reply = io.read_response(0);
        ASSERT_TRUE(reply.contains("result")) << reply.dump();
        io.write_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    }

    ToolProbe probe_;
    std::unique_ptr<Server> server_;
};

TEST_F(StdioTransport, InitializeAndToolCall) {
    auto io = start();
    initialize(*io);
    io->write_line(request(1, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "x"}}}}));
    json reply = io->read_json();
    EXPECT_EQ(reply["id"], 1) << reply.dump();
    EXPECT_EQ(reply["result"]["content"][0]["text"], "echo:x");
    EXPECT_TRUE(io->finish());
    EXPECT_EQ(io->exit_code(), 0);
}

TEST_F(StdioTransport, BlankAndMalformedLines) {
    auto io = start();
    io->write_line("");
    io->write_line("   ");
    io->write_line("{not json");
    json error = io->read_json();
    EXPECT_EQ(error["error"]["code"], -32700) << error.dump();
    EXPECT_TRUE(error["id"].is_null());
    io->write_line(request(1, "ping"));
    json pong = io->read_json();
    EXPECT_EQ(pong["id"], 1) << pong.dump();
    EXPECT_TRUE(pong.contains("result"));
}

TEST_F(StdioTransport, OversizeLineIsRejectedAndNextLineWorks) {
    agency::mcp::StdioOptions options;
    options.max_message_bytes = 256;
    auto io = start(options);
    initialize(*io);
    std::string big = request(
        1, "tools/call", {{"name", "echo"}, {"arguments", {{"text", std::string(2000, 'x')}}}});
    // The oversize line and the next one arrive in a single write.
    io->write_raw(big + "\n" +
                  request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "ok"}}}}) +
                  "\n");
    json error = io->read_json();
    ASSERT_TRUE(error.contains("error")) << error.dump();
    EXPECT_EQ(error["error"]["code"], -32600);
    EXPECT_NE(error["error"]["message"].get<std::string>().find("too large"), std::string::npos);
    json next = io->read_json();
    EXPECT_EQ(next["id"], 2) << next.dump();
    EXPECT_EQ(next["result"]["content"][0]["text"], "echo:ok");
    // Spread over several writes as well.
    io->write_raw(big.substr(0, 1000));
    io->write_raw(big.substr(1000) + "\n");
    io->write_line(request(3, "ping"));
    json error2 = io->read_json();
    EXPECT_EQ(error2["error"]["code"], -32600) << error2.dump();
    json pong = io->read_json();
    EXPECT_EQ(pong["id"], 3) << pong.dump();
}

TEST_F(StdioTransport, InteractiveToolAsksOverLegacyStdio) {
    auto io = start();
    initialize(*io);
    io->write_line(request(5, "tools/call",
                           {{"name", "confirm_deploy"},
                            {"arguments", {{"target", "prod"}}},
                            {"_meta", {{"progressToken", "tok"}}}}));
    std::vector<json> seen;
    json ask;
    for (int i = 0; i < 5 && ask.is_null(); ++i) {
        json m = io->read_json();
        ASSERT_FALSE(m.is_null()) << "no elicitation request";
        if (m.value("method", "") == "elicitation/create")
            ask = m;
        else
            seen.push_back(m);
    }
    ASSERT_TRUE(ask.contains("id"));
    EXPECT_EQ(ask["params"]["message"], "Deploy?");
    // Progress and log notifications arrived before the request (and thus before the result).
    bool progress = false;
    bool log = false;
    for (json m : seen) {
        if (m.value("method", "") == "notifications/progress") {
            progress = true;
            EXPECT_EQ(m["params"]["progressToken"], "tok");
        }
        if (m.value("method", "") == "notifications/message") {
            log = true;
            EXPECT_EQ(m["params"]["level"], "info");
        }
    }
    EXPECT_TRUE(progress);
    EXPECT_TRUE(log);

    io->write_line(json{{"jsonrpc", "2.0"},
                        {"id", ask["id"]},
                        {"result", {{"action", "accept"}, {"content", {{"confirm", true}}}}}}
                       .dump());
    json reply = io->read_response(5);
    ASSERT_TRUE(reply.contains("result")) << reply.dump();
    EXPECT_EQ(reply["result"]["content"][0]["text"], "deployed");
}

TEST_F(StdioTransport, ClientErrorAnswerFailsTheCall) {
    auto io = start();
    initialize(*io);
    io->write_line(request(6, "tools/call", {{"name", "confirm_deploy"}}));
    json ask;
    for (int i = 0; i < 5 && ask.is_null(); ++i) {
        json m = io->read_json();
        ASSERT_FALSE(m.is_null());
        if (m.value("method", "") == "elicitation/create") ask = m;
    }
    io->write_line(json{{"jsonrpc", "2.0"},
                        {"id", ask["id"]},
                        {"error", {{"code", -32601}, {"message", "no elicitation here"}}}}
                       .dump());
    json reply = io->read_response(6);
    ASSERT_FALSE(reply.is_null());
    EXPECT_TRUE(reply.contains("error") || reply["result"]["isError"] == true) << reply.dump();
}

TEST_F(StdioTransport, SlowCallDoesNotBlockPing) {
    auto io = start();
    initialize(*io);
    auto t0 = std::chrono::steady_clock::now();
    io->write_line(request(10, "tools/call", {{"name", "slow"}}));
    io->write_line(request(11, "ping"));
    json first = io->read_json();
    EXPECT_EQ(first["id"], 11) << first.dump();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 400ms);
    probe_.slow_release.open();  // the ping was answered while `slow` still ran
    json second = io->read_json();
    EXPECT_EQ(second["id"], 10) << second.dump();
    EXPECT_EQ(second["result"]["content"][0]["text"], "slept");
}

TEST_F(StdioTransport, CancelledCallStopsAndIsNotAnswered) {
    auto io = start();
    initialize(*io);
    io->write_line(request(20, "tools/call", {{"name", "loop"}}));
    ASSERT_TRUE(wait_until(probe_.loop_started));
    io->write_line(
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":20,"reason":"test"}})");
    EXPECT_TRUE(wait_until(probe_.loop_stopped, 1000ms));
    io->write_line(request(21, "ping"));
    json pong = io->read_json();
    EXPECT_EQ(pong["id"], 21) << pong.dump();
    ASSERT_TRUE(io->finish());
    for (const auto& m : io->remaining()) EXPECT_NE(m.value("id", json()), json(20)) << m.dump();
}

// One registry of calls in flight: a call is found by session, caller and id, and the entry a
// transport made for a queued call is the one the core finds when it runs.
TEST(CallsInFlight, ACancelReachesOnlyTheCallersOwnCall) {
    agency::mcp::CallsInFlight calls;
    const json id = 7;
    const auto alice = calls.enter(nullptr, "alice", id);
    const auto bob = calls.enter(nullptr, "bob", id);
    EXPECT_EQ(calls.enter(nullptr, "alice", id), alice) << "the same call: one entry";
    calls.cancel(nullptr, "bob", id);
    EXPECT_TRUE(bob->cancelled());
    EXPECT_FALSE(alice->cancelled()) << "bob's cancel stopped alice's call with the same id";
    calls.cancel(nullptr, "alice", json(8));
    EXPECT_FALSE(alice->cancelled());
    calls.cancel_all();
    EXPECT_TRUE(alice->cancelled());
}

TEST(CallsInFlight, AnEntryLastsWhileItsCallIsHeld) {
    agency::mcp::CallsInFlight calls;
    const json id = "r1";
    std::weak_ptr<agency::mcp::CallsInFlight::Call> first;
    {
        const auto call = calls.enter(nullptr, "alice", id);
        first = call;
    }
    EXPECT_TRUE(first.expired());
    const auto again = calls.enter(nullptr, "alice", id);
    calls.cancel(nullptr, "alice", id);
    EXPECT_TRUE(again->cancelled()) << "a finished call's id is free for the next call";
}

// A call still waiting for a worker when its notifications/cancelled arrives must not be
// answered either (the spec only lets a server ignore cancellations of unknown or finished
// requests).
TEST_F(StdioTransport, CancelledWhileQueuedIsNotAnswered) {
    agency::mcp::StdioOptions options;
    options.workers = 1;
    auto io = start(options);
    initialize(*io);
    io->write_line(request(30, "tools/call", {{"name", "slow"}}));  // occupies the only worker
    io->write_line(request(31, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "q"}}}}));
    io->write_line(
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":31}})");
    json slow = io->read_response(30);
    EXPECT_EQ(slow["result"]["content"][0]["text"], "slept") << slow.dump();
    ASSERT_TRUE(io->finish());
    for (const auto& m : io->remaining()) EXPECT_NE(m.value("id", json()), json(31)) << m.dump();
}

TEST_F(StdioTransport, ModernRequestsNeedNoInitialize) {
    auto io = start();
    io->write_line(
        request(1, "tools/call", with_meta({{"name", "echo"}, {"arguments", {{"text", "s"}}}})));
    json reply = io->read_json();
    EXPECT_EQ(reply["id"], 1) << reply.dump();
    EXPECT_EQ(reply["result"]["resultType"], "complete");
    EXPECT_EQ(reply["result"]["content"][0]["text"], "echo:s");
    // Modern interactive tools never write a request to the client: input_required instead.
    io->write_line(request(2, "tools/call", with_meta({{"name", "confirm_deploy"}})));
    json ask = io->read_json();
    EXPECT_EQ(ask["id"], 2) << ask.dump();
    EXPECT_EQ(ask["result"]["resultType"], "input_required");
}

TEST_F(StdioTransport, EofEndsServe) {
    auto io = start();
    io->write_line(request(1, "ping"));
    EXPECT_EQ(io->read_json()["id"], 1);
    EXPECT_TRUE(io->finish(1000ms));
    EXPECT_EQ(io->exit_code(), 0);
}

TEST_F(StdioTransport, LastLineWithoutNewlineIsAnswered) {
    auto io = start();
    io->write_raw(request(1, "ping"));
    ASSERT_TRUE(io->finish());
    auto rest = io->remaining();
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0]["id"], 1);
}

TEST_F(StdioTransport, ToolsChangedNotificationReachesSession) {
    auto io = start();
    initialize(*io);
    // Make sure notifications/initialized was processed (messages are handled in order).
    io->write_line(request(1, "ping"));
    EXPECT_EQ(io->read_json()["id"], 1);
    server_->notify_tools_changed();
    json note = io->read_json();
    EXPECT_EQ(note.value("method", ""), "notifications/tools/list_changed") << note.dump();
}

}  // namespace
