// Streamable HTTP transport at /mcp, driven with httplib::Client against an ephemeral port.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>

#include <gtest/gtest.h>
#include <httplib.h>

#include "base/crypto.hpp"
#include "server/mcp_server.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/wait.hpp"
#include "transport/http_transport.hpp"
#include "transport/keys.hpp"

namespace {

using agency::mcp::HttpOptions;
using agency::mcp::KeyStore;
using namespace agency::testing::core_names;
using namespace std::chrono_literals;

constexpr const char* kLegacyVersion = "2025-11-25";
constexpr const char* kModernVersion = "2026-07-28";

void register_http_test_tools(Server& server) {
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
    interactive.input_schema = {{"type", "object"}};
    interactive.interactive = true;
    interactive.handler = [](const json&, RequestContext& ctx) {
        ctx.progress(1, 2, "asking");
        ctx.log("info", "asking for confirmation");
        json answer =
            ctx.ask("confirm", "elicitation/create",
                    {{"message", "Deploy?"},
                     {"requestedSchema",
                      {{"type", "object"}, {"properties", {{"confirm", {{"type", "boolean"}}}}}}}});
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
}

std::string rpc(const json& id, const std::string& method, json params = json::object()) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}
        .dump();
}

json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", kModernVersion},
            {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

json initialize_params() {
    return {{"protocolVersion", kLegacyVersion},
            {"capabilities", {{"elicitation", json::object()}}},
            {"clientInfo", {{"name", "http-test"}, {"version", "1"}}}};
}

json body_json(const httplib::Result& res) {
    if (!res) return nullptr;
    json parsed = json::parse(res->body, nullptr, false);
    return parsed.is_discarded() ? json(nullptr) : parsed;
}

int rpc_error_code(const httplib::Result& res) {
    json body = body_json(res);
    return body.is_object() && body.contains("error") ? body["error"].value("code", 0) : 0;
}

bool is_hex(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
}

// The JSON payloads of an SSE body's data: lines.
std::vector<json> sse_messages(const std::string& stream) {
    std::vector<json> out;
    std::size_t pos = 0;
    while ((pos = stream.find("data: ", pos)) != std::string::npos) {
        pos += 6;
        auto end = stream.find('\n', pos);
        if (end == std::string::npos) break;
        json parsed = json::parse(stream.substr(pos, end - pos), nullptr, false);
        if (!parsed.is_discarded()) out.push_back(std::move(parsed));
        pos = end;
    }
    return out;
}

// Named after the suite (HttpTransport.*); the transport itself is agency::mcp::HttpTransport.
class HttpTransport : public ::testing::Test {
protected:
    HttpTransport() {
        std::signal(SIGPIPE, SIG_IGN);
        ServerOptions options;
        options.state_secret = "http-secret";
        server_ = std::make_unique<Server>(options);
        register_http_test_tools(*server_);
    }
    ~HttpTransport() override {
        if (transport_) transport_->stop();
        if (!keys_path_.empty()) {
            std::error_code ec;
            std::filesystem::remove(keys_path_, ec);
        }
    }

    static HttpOptions default_options() {
        HttpOptions options;
        options.host = "127.0.0.1";
        options.port = 0;
        options.threads = 8;
        options.max_body_bytes = 4096;
        return options;
    }

    void SetUp() override { start(); }

    void start(HttpOptions options = default_options()) {
        if (transport_) transport_->stop();
        transport_ = std::make_unique<agency::mcp::HttpTransport>(*server_, std::move(options));
        port_ = transport_->start();
        ASSERT_GT(port_, 0);
    }

    std::unique_ptr<httplib::Client> client() const {
        auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
        c->set_connection_timeout(2, 0);
        c->set_read_timeout(5, 0);
        return c;
    }

    httplib::Result post(const std::string& body, httplib::Headers headers = {},
                         const std::string& content_type = "application/json") const {
        return client()->Post("/mcp", headers, body, content_type);
    }
    static httplib::Headers legacy_headers(const std::string& session) {
        return {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", kLegacyVersion}};
    }
    static httplib::Headers modern_headers(const std::string& method,
                                           const std::string& name = {}) {
        httplib::Headers h{{"MCP-Protocol-Version", kModernVersion}, {"Mcp-Method", method}};
        if (!name.empty()) h.emplace("Mcp-Name", name);
        return h;
    }

    // initialize + notifications/initialized; returns the session id.
    std::string open_session(httplib::Headers auth = {}) const {
        auto res = post(rpc(1, "initialize", initialize_params()), auth);
        EXPECT_TRUE(res);
        if (!res) return {};
        EXPECT_EQ(res->status, 200) << res->body;
        std::string sid = res->get_header_value("Mcp-Session-Id");
        auto headers = legacy_headers(sid);
        headers.insert(auth.begin(), auth.end());
        auto note = post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", headers);
        EXPECT_TRUE(note);
        if (note) {
            EXPECT_EQ(note->status, 202);
        }
        return sid;
    }

    std::string make_keys_file() {
        keys_path_ = (std::filesystem::temp_directory_path() /
                      ("agency-mcp-keys-" + agency::crypto::random_hex(8) + ".json"))
                         .string();
        return keys_path_;
    }

    std::unique_ptr<Server> server_;
    std::unique_ptr<agency::mcp::HttpTransport> transport_;
    int port_ = 0;
    std::string keys_path_;
};

TEST_F(HttpTransport, InitializeReturnsSessionAndJson) {
    auto res = post(rpc(1, "initialize", initialize_params()));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_NE(res->get_header_value("Content-Type").find("application/json"), std::string::npos);
    std::string sid = res->get_header_value("Mcp-Session-Id");
    EXPECT_EQ(sid.size(), 32u) << sid;
    EXPECT_TRUE(is_hex(sid)) << sid;
    json body = body_json(res);
    EXPECT_EQ(body["result"]["protocolVersion"], kLegacyVersion) << res->body;
    EXPECT_EQ(body["result"]["serverInfo"]["name"], "agency-mcp");

    // The session works for the following requests.
    auto list = post(rpc(2, "tools/list"), legacy_headers(sid));
    ASSERT_TRUE(list);
    EXPECT_EQ(list->status, 200);
    EXPECT_EQ(body_json(list)["result"]["tools"].size(), 3u) << list->body;

    // Two sessions get different ids.
    auto again = post(rpc(1, "initialize", initialize_params()));
    ASSERT_TRUE(again);
    EXPECT_NE(again->get_header_value("Mcp-Session-Id"), sid);
}

TEST_F(HttpTransport, UnknownSessionIs404) {
    auto res = post(rpc(2, "tools/list"), legacy_headers("0123456789abcdef0123456789abcdef"));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
}

TEST_F(HttpTransport, LegacyVersionWithoutSessionIs400) {
    auto res = post(rpc(2, "tools/list"), {{"MCP-Protocol-Version", kLegacyVersion}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
}

TEST_F(HttpTransport, DeleteEndsSession) {
    std::string sid = open_session();
    ASSERT_FALSE(sid.empty());
    auto del = client()->Delete("/mcp", legacy_headers(sid));
    ASSERT_TRUE(del);
    EXPECT_EQ(del->status, 200);
    auto after = post(rpc(3, "tools/list"), legacy_headers(sid));
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, 404);
    auto again = client()->Delete("/mcp", legacy_headers(sid));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 404);
}

TEST_F(HttpTransport, GetIs405) {
    auto res = client()->Get("/mcp");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 405);
    EXPECT_NE(res->get_header_value("Allow").find("POST"), std::string::npos);
}

TEST_F(HttpTransport, ForeignHostIs403) {
    auto res = post(rpc(1, "initialize", initialize_params()), {{"Host", "evil.example.com"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 403);
    EXPECT_TRUE(res->get_header_value("Mcp-Session-Id").empty());
    auto with_port =
        post(rpc(1, "initialize", initialize_params()), {{"Host", "evil.example.com:8787"}});
    ASSERT_TRUE(with_port);
    EXPECT_EQ(with_port->status, 403);
    auto local = post(rpc(1, "initialize", initialize_params()),
                      {{"Host", "localhost:" + std::to_string(port_)}});
    ASSERT_TRUE(local);
    EXPECT_EQ(local->status, 200);
}

TEST_F(HttpTransport, OriginCheck) {
    auto evil =
        post(rpc(1, "initialize", initialize_params()), {{"Origin", "http://evil.example.com"}});
    ASSERT_TRUE(evil);
    EXPECT_EQ(evil->status, 403);
    auto sneaky = post(rpc(1, "initialize", initialize_params()),
                       {{"Origin", "http://localhost.evil.example.com"}});
    ASSERT_TRUE(sneaky);
    EXPECT_EQ(sneaky->status, 403);
    auto local =
        post(rpc(1, "initialize", initialize_params()), {{"Origin", "http://localhost:1234"}});
    ASSERT_TRUE(local);
    EXPECT_EQ(local->status, 200);
}

TEST_F(HttpTransport, AllowedOriginOption) {
    auto options = default_options();
    options.allowed_origins = {"https://app.example.com"};
    start(options);
    auto ok =
        post(rpc(1, "initialize", initialize_params()), {{"Origin", "https://app.example.com"}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
    auto other =
        post(rpc(1, "initialize", initialize_params()), {{"Origin", "https://other.example.com"}});
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 403);
}

TEST_F(HttpTransport, OversizeBodyIs413) {
    json params = initialize_params();
    params["padding"] = std::string(10000, 'x');
    auto res = post(rpc(1, "initialize", params));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 413);
}

TEST_F(HttpTransport, WrongContentTypeIs415) {
    auto res = post(rpc(1, "initialize", initialize_params()), {}, "text/plain");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 415);
}

TEST_F(HttpTransport, MalformedBodies) {
    auto bad_json = post("{nope");
    ASSERT_TRUE(bad_json);
    EXPECT_EQ(bad_json->status, 400);
    EXPECT_EQ(rpc_error_code(bad_json), -32700);
    auto batch = post("[" + rpc(1, "ping") + "]");
    ASSERT_TRUE(batch);
    EXPECT_EQ(batch->status, 400);
    EXPECT_EQ(rpc_error_code(batch), -32600);
    auto invalid = post(R"({"jsonrpc":"2.0","id":1,"method":7})");
    ASSERT_TRUE(invalid);
    EXPECT_EQ(invalid->status, 400);
    EXPECT_EQ(rpc_error_code(invalid), -32600);
}

TEST_F(HttpTransport, NotificationIs202) {
    std::string sid = open_session();  // asserts 202 for notifications/initialized
    auto res =
        post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}})",
             legacy_headers(sid));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 202);
    EXPECT_TRUE(res->body.empty()) << res->body;
}

TEST_F(HttpTransport, LegacyToolCall) {
    std::string sid = open_session();
    auto res = post(rpc(4, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}),
                    legacy_headers(sid));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    json body = body_json(res);
    EXPECT_EQ(body["id"], 4);
    EXPECT_EQ(body["result"]["content"][0]["text"], "echo:hi") << res->body;
}

TEST_F(HttpTransport, ModernRequestWithHeaders) {
    json params = {{"name", "echo"}, {"arguments", {{"text", "m"}}}, {"_meta", modern_meta()}};
    auto res = post(rpc(1, "tools/call", params), modern_headers("tools/call", "echo"));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    json body = body_json(res);
    EXPECT_EQ(body["result"]["resultType"], "complete") << res->body;
    EXPECT_EQ(body["result"]["content"][0]["text"], "echo:m");
    EXPECT_TRUE(res->get_header_value("Mcp-Session-Id").empty());

    auto discover = post(rpc(2, "server/discover", {{"_meta", modern_meta()}}),
                         modern_headers("server/discover"));
    ASSERT_TRUE(discover);
    EXPECT_EQ(discover->status, 200) << discover->body;
    EXPECT_TRUE(body_json(discover)["result"].contains("supportedVersions"));
}

TEST_F(HttpTransport, ModernBase64NameHeader) {
    // "=?base64?ZWNobw==?=" is "echo".
    json params = {{"name", "echo"}, {"arguments", json::object()}, {"_meta", modern_meta()}};
    auto res =
        post(rpc(1, "tools/call", params), modern_headers("tools/call", "=?base64?ZWNobw==?="));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(HttpTransport, ModernMethodHeaderMismatch) {
    json params = {{"name", "echo"}, {"arguments", json::object()}, {"_meta", modern_meta()}};
    auto res = post(rpc(1, "tools/call", params), modern_headers("tools/list", "echo"));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_EQ(rpc_error_code(res), -32020) << res->body;
    EXPECT_EQ(body_json(res)["id"], 1);

    auto no_method = post(rpc(2, "tools/list", {{"_meta", modern_meta()}}),
                          {{"MCP-Protocol-Version", kModernVersion}});
    ASSERT_TRUE(no_method);
    EXPECT_EQ(no_method->status, 400);
    EXPECT_EQ(rpc_error_code(no_method), -32020) << no_method->body;
}

TEST_F(HttpTransport, ModernMissingNameHeader) {
    json params = {{"name", "echo"}, {"arguments", json::object()}, {"_meta", modern_meta()}};
    auto res = post(rpc(1, "tools/call", params), modern_headers("tools/call"));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_EQ(rpc_error_code(res), -32020) << res->body;

    auto wrong = post(rpc(2, "tools/call", params), modern_headers("tools/call", "write_thing"));
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 400);
    EXPECT_EQ(rpc_error_code(wrong), -32020) << wrong->body;
}

TEST_F(HttpTransport, ModernUnsupportedVersion) {
    json meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
    auto res = post(rpc(1, "tools/list", {{"_meta", meta}}),
                    {{"MCP-Protocol-Version", "2099-01-01"}, {"Mcp-Method", "tools/list"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_EQ(rpc_error_code(res), -32022) << res->body;
    EXPECT_EQ(body_json(res)["error"]["data"]["requested"], "2099-01-01") << res->body;
}

TEST_F(HttpTransport, ModernVersionHeaderMismatch) {
    auto res = post(rpc(1, "tools/list", {{"_meta", modern_meta()}}),
                    {{"MCP-Protocol-Version", "2099-01-01"}, {"Mcp-Method", "tools/list"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_EQ(rpc_error_code(res), -32020) << res->body;
}

TEST_F(HttpTransport, ModernUnknownMethodIs404) {
    auto res = post(rpc(1, "foo/bar", {{"_meta", modern_meta()}}), modern_headers("foo/bar"));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
    EXPECT_EQ(rpc_error_code(res), -32601) << res->body;
}

TEST_F(HttpTransport, ModernErrorsMapToHttpStatus) {
    // Missing clientCapabilities: -32602 travels as 400.
    json meta = {{"io.modelcontextprotocol/protocolVersion", kModernVersion}};
    auto res = post(rpc(1, "tools/list", {{"_meta", meta}}), modern_headers("tools/list"));
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_EQ(rpc_error_code(res), -32602) << res->body;
    // Unknown tool: -32602 / 400 as well.
    json params = {{"name", "nope"}, {"_meta", modern_meta()}};
    auto unknown = post(rpc(2, "tools/call", params), modern_headers("tools/call", "nope"));
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->status, 400);
    EXPECT_EQ(rpc_error_code(unknown), -32602) << unknown->body;
}

// A caller over its tool-call rate limit gets 429 with Retry-After in both eras; another
// caller keeps its own bucket; time (a ManualClock) refills it. tools/list is not limited.
TEST_F(HttpTransport, CallerOverItsRateLimitGets429WithRetryAfter) {
    transport_->stop();
    transport_.reset();
    agency::testing::ManualClock clock;
    // The server and the transport use the clock until they are gone (the refusal summary is
    // written as the server ends): both go before it.
    struct Release {
        std::function<void()> go;
        ~Release() { go(); }
    } release{[this] {
        if (transport_) transport_->stop();
        transport_.reset();
        server_.reset();
    }};
    ServerOptions options;
    options.state_secret = "http-secret";
    options.clock = &clock;
    options.rate_limit = {.per_minute = 60, .burst = 2};
    server_ = std::make_unique<Server>(options);
    register_http_test_tools(*server_);
    HttpOptions http = default_options();
    http.clock = &clock;
    const std::string path = make_keys_file();
    const std::string alice = KeyStore::add(path, "alice", {"read", "write"});
    const std::string bob = KeyStore::add(path, "bob", {"read", "write"});
    http.keys = std::make_shared<const KeyStore>(KeyStore::load(path));
    start(http);

    json params = {{"name", "echo"}, {"arguments", {{"text", "m"}}}, {"_meta", modern_meta()}};
    auto as = [&](const std::string& key) {
        auto h = modern_headers("tools/call", "echo");
        h.emplace("Authorization", "Bearer " + key);
        return h;
    };
    for (int i = 0; i < 2; ++i) {
        auto ok = post(rpc(i, "tools/call", params), as(alice));
        ASSERT_TRUE(ok);
        EXPECT_EQ(ok->status, 200) << ok->body;
    }
    auto over = post(rpc(3, "tools/call", params), as(alice));
    ASSERT_TRUE(over);
    EXPECT_EQ(over->status, 429) << over->body;
    EXPECT_EQ(over->get_header_value("Retry-After"), "1");
    EXPECT_EQ(rpc_error_code(over), -32029) << over->body;
    const json error = body_json(over)["error"];
    EXPECT_EQ(error["data"]["retryAfterSeconds"], 1);
    EXPECT_NE(error.value("message", "").find("retry in 1 s"), std::string::npos) << error;

    auto other = post(rpc(4, "tools/call", params), as(bob));
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 200) << "bob has a bucket of his own: " << other->body;
    auto h = modern_headers("tools/list");
    h.emplace("Authorization", "Bearer " + alice);
    auto list = post(rpc(5, "tools/list", {{"_meta", modern_meta()}}), h);
    ASSERT_TRUE(list);
    EXPECT_EQ(list->status, 200) << "only tool calls count";

    // A legacy session's call over the limit is 429 as well.
    httplib::Headers auth{{"Authorization", "Bearer " + alice}};
    const std::string sid = open_session(auth);
    auto legacy = legacy_headers(sid);
    legacy.insert(auth.begin(), auth.end());
    auto legacy_over = post(rpc(6, "tools/call", {{"name", "echo"}, {"arguments", json::object()}}),
                            legacy);
    ASSERT_TRUE(legacy_over);
    EXPECT_EQ(legacy_over->status, 429) << legacy_over->body;
    EXPECT_FALSE(legacy_over->get_header_value("Retry-After").empty());

    clock.advance(1s);  // one call a second refills
    auto again = post(rpc(7, "tools/call", params), as(alice));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200) << again->body;
}

TEST_F(HttpTransport, ModernInteractiveToolIsInputRequired) {
    json params = {
        {"name", "confirm_deploy"}, {"arguments", json::object()}, {"_meta", modern_meta()}};
    auto first = post(rpc(1, "tools/call", params), modern_headers("tools/call", "confirm_deploy"));
    ASSERT_TRUE(first);
    EXPECT_EQ(first->status, 200);
    json body = body_json(first);
    ASSERT_EQ(body["result"]["resultType"], "input_required") << first->body;
    params["requestState"] = body["result"]["requestState"];
    params["inputResponses"] = {
        {"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    auto second =
        post(rpc(2, "tools/call", params), modern_headers("tools/call", "confirm_deploy"));
    ASSERT_TRUE(second);
    EXPECT_EQ(second->status, 200);
    EXPECT_EQ(body_json(second)["result"]["content"][0]["text"], "deployed") << second->body;
}

TEST_F(HttpTransport, InteractiveToolStreamsOverLegacySse) {
    std::string sid = open_session();
    ASSERT_FALSE(sid.empty());

    std::mutex mutex;
    std::condition_variable changed;
    std::string stream;
    bool finished = false;
    int status = -1;
    std::string content_type;

    std::thread caller([&] {
        auto c = client();
        httplib::Request req;
        req.method = "POST";
        req.path = "/mcp";
        req.headers = {{"Content-Type", "application/json"},
                       {"Accept", "application/json, text/event-stream"},
                       {"Mcp-Session-Id", sid},
                       {"MCP-Protocol-Version", kLegacyVersion}};
        req.body = rpc(9, "tools/call",
                       {{"name", "confirm_deploy"},
                        {"arguments", json::object()},
                        {"_meta", {{"progressToken", 77}}}});
        req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t,
                                   std::uint64_t) {
            std::lock_guard lock(mutex);
            stream.append(data, size);
            changed.notify_all();
            return true;
        };
        auto res = c->send(req);
        std::lock_guard lock(mutex);
        if (res) {
            status = res->status;
            content_type = res->get_header_value("Content-Type");
        }
        finished = true;
        changed.notify_all();
    });

    json ask;
    {
        std::unique_lock lock(mutex);
        changed.wait_for(lock, 3s, [&] {
            for (const auto& m : sse_messages(stream))
                if (m.value("method", "") == "elicitation/create") {
                    ask = m;
                    return true;
                }
            return finished;
        });
    }
    if (ask.is_null()) {
        caller.join();
        FAIL() << "no elicitation/create on the stream: " << stream;
    }
    EXPECT_EQ(ask["params"]["message"], "Deploy?");
    ASSERT_TRUE(ask.contains("id"));

    json answer = {{"jsonrpc", "2.0"},
                   {"id", ask["id"]},
                   {"result", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    auto ack = post(answer.dump(), legacy_headers(sid));
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->status, 202);

    {
        std::unique_lock lock(mutex);
        changed.wait_for(lock, 3s, [&] { return finished; });
    }
    caller.join();
    EXPECT_EQ(status, 200);
    EXPECT_NE(content_type.find("text/event-stream"), std::string::npos) << content_type;
    auto messages = sse_messages(stream);
    ASSERT_FALSE(messages.empty()) << stream;
    json last = messages.back();
    EXPECT_EQ(last["id"], 9) << stream;
    EXPECT_EQ(last["result"]["content"][0]["text"], "deployed") << stream;
    // Progress and log notifications came on the same stream, before the result.
    bool progress = false;
    bool log = false;
    for (json m : messages) {
        if (m.value("method", "") == "notifications/progress") progress = true;
        if (m.value("method", "") == "notifications/message") log = true;
    }
    EXPECT_TRUE(progress) << stream;
    EXPECT_TRUE(log) << stream;
}

// A legacy client that declared no capability to be asked through gets an interactive tool's
// answer as plain JSON: the call runs inline, with no stream to hold open.
TEST_F(HttpTransport, InteractiveToolAnswersPlainJsonToAClientThatCannotBeAsked) {
    ToolDef quiet;
    quiet.name = "ask_if_possible";
    quiet.description = "Asks only a client that can answer.";
    quiet.input_schema = {{"type", "object"}};
    quiet.interactive = true;
    quiet.handler = [](const json&, RequestContext& ctx) {
        if (ctx.client_supports("elicitation")) return ToolResult::text("asked");
        return ToolResult::text("not asked");
    };
    server_->add_tool(std::move(quiet));
    json params = initialize_params();
    params["capabilities"] = json::object();
    auto init = post(rpc(1, "initialize", params));
    ASSERT_TRUE(init);
    std::string sid = init->get_header_value("Mcp-Session-Id");
    ASSERT_FALSE(sid.empty());
    auto headers = legacy_headers(sid);
    headers.emplace("Accept", "application/json, text/event-stream");
    auto res = post(rpc(3, "tools/call", {{"name", "ask_if_possible"}}), headers);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_NE(res->get_header_value("Content-Type").find("application/json"), std::string::npos)
        << res->get_header_value("Content-Type");
    EXPECT_EQ(body_json(res)["result"]["content"][0]["text"], "not asked") << res->body;

    // The same tool for a client with elicitation still streams.
    std::string asking = open_session();
    auto streamed = post(rpc(4, "tools/call", {{"name", "ask_if_possible"}}),
                         [&] {
                             auto h = legacy_headers(asking);
                             h.emplace("Accept", "application/json, text/event-stream");
                             return h;
                         }());
    ASSERT_TRUE(streamed);
    EXPECT_EQ(streamed->status, 200);
    // A quick call with nothing sent before its reply still goes out as JSON (stream_grace).
    auto messages = sse_messages(streamed->body);
    json reply = messages.empty() ? body_json(streamed) : messages.back();
    EXPECT_EQ(reply["result"]["content"][0]["text"], "asked") << streamed->body;
}

TEST_F(HttpTransport, AnswerFromAnotherSessionIsIgnored) {
    // The elicitation answer must come from the session that was asked.
    std::string sid = open_session();
    std::string intruder = open_session();
    std::mutex mutex;
    std::condition_variable changed;
    std::string stream;
    bool finished = false;
    std::thread caller([&] {
        auto c = client();
        httplib::Request req;
        req.method = "POST";
        req.path = "/mcp";
        req.headers = {{"Content-Type", "application/json"},
                       {"Accept", "application/json, text/event-stream"},
                       {"Mcp-Session-Id", sid}};
        req.body = rpc(9, "tools/call", {{"name", "confirm_deploy"}});
        req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t,
                                   std::uint64_t) {
            std::lock_guard lock(mutex);
            stream.append(data, size);
            changed.notify_all();
            return true;
        };
        c->send(req);
        std::lock_guard lock(mutex);
        finished = true;
        changed.notify_all();
    });
    json ask;
    {
        std::unique_lock lock(mutex);
        changed.wait_for(lock, 3s, [&] {
            for (const auto& m : sse_messages(stream))
                if (m.value("method", "") == "elicitation/create") ask = m;
            return !ask.is_null() || finished;
        });
    }
    if (ask.is_null()) {
        caller.join();
        FAIL() << "no elicitation/create on the stream: " << stream;
    }
    json answer = {{"jsonrpc", "2.0"},
                   {"id", ask["id"]},
                   {"result", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    post(answer.dump(), legacy_headers(intruder));
    {
        std::unique_lock lock(mutex);
        EXPECT_FALSE(changed.wait_for(lock, 200ms, [&] { return finished; }));
    }
    // The rightful session declines; the tool sees that answer.
    answer["result"] = {{"action", "decline"}};
    post(answer.dump(), legacy_headers(sid));
    {
        std::unique_lock lock(mutex);
        changed.wait_for(lock, 3s, [&] { return finished; });
    }
    caller.join();
    auto messages = sse_messages(stream);
    ASSERT_FALSE(messages.empty());
    EXPECT_EQ(messages.back()["result"]["content"][0]["text"], "declined") << stream;
}

TEST_F(HttpTransport, ApiKeys) {
    std::string path = make_keys_file();
    std::string rw = KeyStore::add(path, "rw", {"read", "write"});
    std::string ro = KeyStore::add(path, "ro", {"read"});
    auto options = default_options();
    options.keys = std::make_shared<const KeyStore>(KeyStore::load(path));
    start(options);

    auto anonymous = post(rpc(1, "initialize", initialize_params()));
    ASSERT_TRUE(anonymous);
    EXPECT_EQ(anonymous->status, 401);
    EXPECT_FALSE(anonymous->get_header_value("WWW-Authenticate").empty());

    auto wrong = post(rpc(1, "initialize", initialize_params()), {{"X-API-Key", "amcp_nope"}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401);

    auto by_header = post(rpc(1, "initialize", initialize_params()), {{"X-API-Key", rw}});
    ASSERT_TRUE(by_header);
    EXPECT_EQ(by_header->status, 200);
    auto by_bearer =
        post(rpc(1, "initialize", initialize_params()), {{"Authorization", "Bearer " + rw}});
    ASSERT_TRUE(by_bearer);
    EXPECT_EQ(by_bearer->status, 200);

    auto names = [&](const std::string& key) {
        std::string sid = open_session({{"X-API-Key", key}});
        auto headers = legacy_headers(sid);
        headers.emplace("X-API-Key", key);
        auto res = post(rpc(2, "tools/list"), headers);
        std::vector<std::string> out;
        EXPECT_TRUE(res);
        if (!res) return out;
        EXPECT_EQ(res->status, 200) << res->body;
        json body = body_json(res);
        for (const auto& t : body["result"]["tools"]) out.push_back(t.value("name", ""));
        EXPECT_FALSE(out.empty()) << res->body;
        return out;
    };
    auto rw_tools = names(rw);
    auto ro_tools = names(ro);
    EXPECT_NE(std::find(rw_tools.begin(), rw_tools.end(), "write_thing"), rw_tools.end());
    EXPECT_NE(std::find(ro_tools.begin(), ro_tools.end(), "echo"), ro_tools.end());
    EXPECT_EQ(std::find(ro_tools.begin(), ro_tools.end(), "write_thing"), ro_tools.end());

    // A session belongs to the key that opened it.
    std::string rw_session = open_session({{"X-API-Key", rw}});
    auto headers = legacy_headers(rw_session);
    headers.emplace("X-API-Key", ro);
    auto hijack = post(rpc(3, "tools/list"), headers);
    ASSERT_TRUE(hijack);
    EXPECT_EQ(hijack->status, 404);

    // Modern requests are authenticated too.
    json params = {{"name", "write_thing"}, {"_meta", modern_meta()}};
    auto ro_write = post(rpc(4, "tools/call", params), {{"X-API-Key", ro},
                                                        {"MCP-Protocol-Version", kModernVersion},
                                                        {"Mcp-Method", "tools/call"},
                                                        {"Mcp-Name", "write_thing"}});
    ASSERT_TRUE(ro_write);
    json body = body_json(ro_write);
    EXPECT_EQ(body["result"]["isError"], true) << ro_write->body;
}

TEST_F(HttpTransport, PublicHostWithoutKeysThrows) {
    auto options = default_options();
    options.host = "0.0.0.0";
    agency::mcp::HttpTransport transport(*server_, options);
    EXPECT_THROW(transport.start(), std::runtime_error);
}

TEST_F(HttpTransport, LoopbackHostNames) {
    EXPECT_TRUE(agency::mcp::is_loopback_host("127.0.0.1"));
    EXPECT_TRUE(agency::mcp::is_loopback_host("localhost"));
    EXPECT_TRUE(agency::mcp::is_loopback_host("::1"));
    EXPECT_FALSE(agency::mcp::is_loopback_host("0.0.0.0"));
    EXPECT_FALSE(agency::mcp::is_loopback_host("example.com"));
}

}  // namespace

namespace {

// Sends a raw HTTP request, waits for the response headers, then closes the connection.
bool send_and_hang_up(int port, const std::string& body, const httplib::Headers& headers) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return false;
    }
    std::string request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nContent-Type: application/json\r\n"
                          "Accept: application/json, text/event-stream\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n";
    for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
    request += "\r\n" + body;
    bool ok = ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size());
    std::string seen;
    char buffer[512];
    while (ok && seen.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        seen.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return ok && seen.find("text/event-stream") != std::string::npos;
}

}  // namespace

// 2026-07-28: closing the response stream of a request cancels it.
TEST_F(HttpTransport, ModernClosedStreamCancelsTheCall) {
    std::atomic<bool> started{false};
    std::atomic<bool> stopped{false};
    ToolDef loop;
    loop.name = "loop";
    loop.description = "Runs until cancelled (at most 5 s).";
    loop.input_schema = {{"type", "object"}};
    loop.handler = [&](const json&, RequestContext& ctx) {
        started = true;
        stopped = agency::testing::wait_for_stop(ctx.stop, 5s);
        return ToolResult::text("loop ended");
    };
    server_->add_tool(std::move(loop));
    auto options = default_options();
    options.keepalive = 50ms;
    start(options);

    json params = {{"name", "loop"}, {"arguments", json::object()}, {"_meta", modern_meta()}};
    ASSERT_TRUE(send_and_hang_up(port_, rpc(7, "tools/call", params), modern_headers("tools/call", "loop")));
    EXPECT_TRUE(started.load());
    (void)agency::testing::eventually([&] { return stopped.load(); }, 2000ms, 10ms);
    EXPECT_TRUE(stopped.load()) << "the call kept running after its stream was closed";
}

// A modern call that fails before running keeps its HTTP status even on the streamed path.
TEST_F(HttpTransport, ModernStreamedCallErrorsKeepTheirStatus) {
    json params = {{"name", "no_such_tool"}, {"arguments", json::object()}, {"_meta", modern_meta()}};
    auto headers = modern_headers("tools/call", "no_such_tool");
    headers.emplace("Accept", "application/json, text/event-stream");
    auto res = post(rpc(8, "tools/call", params), headers);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    EXPECT_EQ(rpc_error_code(res), -32602);
}

namespace {

// Routes beside /mcp: exact paths, headers and query seen, HEAD answered, no key asked even
// when keys guard the endpoint, and the Host guard still in front.
TEST_F(HttpTransport, ExtraRoutesAnswerOutsideTheEndpoint) {
    std::string path = make_keys_file();
    KeyStore::add(path, "rw", {"read", "write"});
    auto options = default_options();
    options.keys = std::make_shared<const KeyStore>(KeyStore::load(path));
    agency::mcp::HttpRoute probe;
    probe.path = "/.well-known/probe";
    probe.handler = [](const agency::mcp::HttpRequestView& req) {
        agency::mcp::HttpReply reply;
        reply.status = 203;
        reply.content_type = "text/plain";
        reply.body = req.method + " " + req.path + " q=" + req.query + " h=" + req.header("X-Probe");
        reply.headers.emplace_back("Cache-Control", "no-store");
        return reply;
    };
    options.routes.push_back(probe);
    start(options);

    auto got = client()->Get("/.well-known/probe?a=1", {{"X-Probe", "yes"}});
    ASSERT_TRUE(got);
    EXPECT_EQ(got->status, 203);
    EXPECT_EQ(got->body, "GET /.well-known/probe q=a=1 h=yes");
    EXPECT_EQ(got->get_header_value("Cache-Control"), "no-store");
    EXPECT_EQ(got->get_header_value("Content-Type"), "text/plain");

    auto head = client()->Head("/.well-known/probe");
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 203);

    // The path is matched exactly, not as a pattern: '.' is no wildcard.
    auto near = client()->Get("/Xwell-known/probe");
    ASSERT_TRUE(near);
    EXPECT_EQ(near->status, 404);
    auto longer = client()->Get("/.well-known/probe/more");
    ASSERT_TRUE(longer);
    EXPECT_EQ(longer->status, 404);

    // The endpoint itself still asks for a key.
    auto anonymous = post(rpc(1, "initialize", initialize_params()));
    ASSERT_TRUE(anonymous);
    EXPECT_EQ(anonymous->status, 401);

    auto foreign = client()->Get("/.well-known/probe", {{"Host", "evil.example"}});
    ASSERT_TRUE(foreign);
    EXPECT_EQ(foreign->status, 403);
}

}  // namespace
