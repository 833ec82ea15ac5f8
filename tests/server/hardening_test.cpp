// Issue 15's reproducers: inputs that once ended the process (non-object messages, deep
// nesting, long strings through a pattern, `format` on a non-string, a malformed answer to the
// server's own request, NUL bytes). Each is answered with an error and the server keeps
// serving, over stdio (serve_stdio on pipes) and over HTTP (the transport on a loopback port),
// with every tool registered against the sample gateway.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include "base/crypto.hpp"
#include "server/json_rpc.hpp"
#include "server/mcp_server.hpp"
#include "state/pg_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/stdio_harness.hpp"
#include "tests/support/action_store.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/pipeline/pipeline.hpp"
#include "tools/registry.hpp"
#include "transport/http_transport.hpp"

namespace {

using agency::testing::StdioHarness;
using agency::testing::ToolHarness;
using json = nlohmann::json;
using namespace std::chrono_literals;

std::string nested(std::size_t depth, char open = '[', char close = ']') {
    return std::string(depth, open) + std::string(depth, close);
}

json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

std::string call_text(int id, const std::string& tool, const std::string& args_text) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":)" +
           args_text + R"(,"_meta":)" + modern_meta().dump() + "}}";
}

// Messages that once ended the process; each must get an answer (or, for a notification,
// nothing) and leave the server serving.
std::vector<std::string> reproducers() {
    const std::string deep = nested(50'000);
    return {
        "[]", "5", R"("s")", "null", "true", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])",
        R"({"jsonrpc":"2.0","id":2,"method":5})",
        R"({"jsonrpc":"2.0","id":3,"method":{"a":[1]}})",
        R"({"jsonrpc":"2.0","id":)" + deep + R"(,"method":"ping"})",
        R"({"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":)" + nested(50'000, '{', '}') +
            "}}",
        R"({"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":)" +
            deep + "}}",
        call_text(6, "list_keywords", R"({"client_id":"demo-dental","x":)" + deep + "}"),
        call_text(7, "get_client", R"({"client_id":")" + std::string(200'000, 'a') + R"(!"})"),
        call_text(8, "list_calls",
                  R"({"client_id":"demo-dental","from":")" + std::string(200'000, '1') + R"("})"),
        call_text(9, "list_calls", R"({"client_id":"demo-dental","from":[1]})"),
        call_text(10, "list_rankings", R"({"client_id":"demo-dental","to":{"a":1}})"),
        call_text(11, "get_client", R"("demo-dental")"),
        R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":["get_client"]}})",
        R"({"jsonrpc":"2.0","id":13,"method":"ping"})" + std::string(1, '\0') + "garbage",
        R"({"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"get_client","arguments":{"client_id":")" +
            std::string(2 * 1024 * 1024, 'b') + R"("},"_meta":)" + modern_meta().dump() + "}}",
    };
}

struct Everything {
    std::shared_ptr<agency::tools::ActionRuntime> rt =
        std::make_shared<agency::tools::ActionRuntime>(
            agency::testing::with_store(agency::tools::ActionSettings{}));
    ToolHarness h{agency::sample::Options{}, agency::tools::Settings{},
                  [rt = rt](agency::mcp::Server& server,
                            const std::shared_ptr<agency::tools::Toolbox>& box) {
                      agency::tools::register_all(server, box, rt);
                  }};
    ~Everything() { rt->audits().stop(); }
};

std::unique_ptr<StdioHarness> start_stdio(agency::mcp::Server& server) {
    agency::mcp::StdioOptions options;
    options.drain_timeout = 2000ms;
    return std::make_unique<StdioHarness>(server, options);
}

// Writes `line` and a ping after it; returns the other replies once the ping is answered and
// `expected` others have arrived (a tool call runs on a worker, so it may answer after the ping).
std::vector<json> send_then_ping(StdioHarness& io, const std::string& line, int ping_id,
                                 std::size_t expected = 1) {
    io.write_line(line);
    io.write_line(json{{"jsonrpc", "2.0"}, {"id", ping_id}, {"method", "ping"}}.dump());
    std::vector<json> others;
    bool pong = false;
    while (!pong || others.size() < expected) {
        json m = io.read_json(10s);
        if (m.is_null()) break;
        if (m.value("id", json()) == ping_id && m.contains("result"))
            pong = true;
        else
            others.push_back(std::move(m));
    }
    EXPECT_TRUE(pong) << "no answer to ping after: " << line.substr(0, 200);
    return others;
}

}  // namespace

TEST(Hardening, StdioAnswersEveryReproducerAndKeepsServing) {
    Everything e;
    auto io = start_stdio(*e.h.server);
    int ping_id = 1000;
    for (const std::string& line : reproducers()) {
        SCOPED_TRACE(line.substr(0, 120));
        std::vector<json> replies = send_then_ping(*io, line, ping_id++);
        ASSERT_EQ(replies.size(), 1u) << "one answer per reproducer";
        const json& reply = replies[0];
        // Either a JSON-RPC error, or a tool error result naming the argument.
        if (reply.contains("error")) {
            EXPECT_TRUE(reply["error"]["code"].is_number_integer());
            EXPECT_NE(reply["error"]["code"], -32603) << "an internal error is no answer: " << reply;
        } else {
            ASSERT_TRUE(reply.contains("result")) << reply;
            EXPECT_TRUE(reply["result"].value("isError", false)) << reply.dump().substr(0, 300);
        }
    }
    EXPECT_TRUE(io->finish());
    EXPECT_EQ(io->exit_code(), 0);
}

TEST(Hardening, LimitsAndTypesAreNamedInTheAnswer) {
    Everything e;
    auto io = start_stdio(*e.h.server);
    auto reply_to = [&](const std::string& line) {
        auto replies = send_then_ping(*io, line, 7000);
        return replies.empty() ? json() : replies[0];
    };
    json deep = reply_to(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":)" +
                         nested(100) + "}}");
    EXPECT_EQ(deep["error"]["code"], -32600);
    EXPECT_NE(deep["error"]["message"].get<std::string>().find("nested deeper than 64"),
              std::string::npos)
        << deep;
    json nul = reply_to(std::string(R"({"jsonrpc":"2.0","id":2,"method":"ping"})") + '\0' + "x");
    EXPECT_EQ(nul["error"]["code"], -32700) << nul;
    json format = reply_to(call_text(3, "list_calls", R"({"client_id":"demo-dental","from":[1]})"));
    const std::string text = format["result"]["content"][0].value("text", "");
    EXPECT_NE(text.find(R"(invalid argument \"from\")"), std::string::npos) << text;
    json date = reply_to(call_text(4, "list_calls", R"({"client_id":"demo-dental","from":"2025-02-30"})"));
    EXPECT_NE(date.dump().find("date YYYY-MM-DD"), std::string::npos) << date;
    // A long argument is quoted cut short, never echoed whole.
    json long_id = reply_to(call_text(5, "get_client",
                                      R"({"client_id":")" + std::string(100'000, 'a') + R"(!"})"));
    EXPECT_LT(long_id.dump().size(), 2000u);
    EXPECT_NE(long_id.dump().find("characters)"), std::string::npos) << long_id.dump().substr(0, 500);
    // Within the limits, a valid deep-ish message still works.
    json fine = reply_to(R"({"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"x":)" +
                         nested(40) + "}}}");
    EXPECT_TRUE(fine.contains("result")) << fine;
}

// Class 7: the client answers the server's elicitation with an error that is not an object,
// or with a result of the wrong shape. The tool call ends at once with a clear answer, nothing
// is deployed, and the server keeps serving.
TEST(Hardening, MalformedAnswersToTheServersRequestEndTheCall) {
    Everything e;
    json draft = e.h.call("generate_article", {{"client_id", "demo-dental"}, {"keyword", "implants"}})
                     .structured();
    const std::string article = draft.value("article_id", "");
    ASSERT_FALSE(article.empty()) << draft;

    auto io = start_stdio(*e.h.server);
    io->write_line(json{{"jsonrpc", "2.0"},
                        {"id", 1},
                        {"method", "initialize"},
                        {"params",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", {{"elicitation", json::object()}}},
                          {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}
                       .dump());
    ASSERT_TRUE(io->read_response(1).contains("result"));
    io->write_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");

    const std::vector<std::string> answers = {
        R"("error":"boom")", R"("error":[1,2])", R"("error":{"code":"x","message":5})",
        R"("result":{"action":5})", R"("result":"accept")",
        R"("result":{"action":"accept","content":{"confirm":"true"}})",
        R"("result":{"action":"accept","content":{"confirm":1}})"};
    int id = 10;
    for (const std::string& answer : answers) {
        SCOPED_TRACE(answer);
        io->write_line(json{{"jsonrpc", "2.0"},
                            {"id", id},
                            {"method", "tools/call"},
                            {"params",
                             {{"name", "deploy_article"},
                              {"arguments", {{"client_id", "demo-dental"}, {"article_id", article}}}}}}
                           .dump());
        json ask;
        for (int i = 0; i < 10 && ask.is_null(); ++i) {
            json m = io->read_json();
            ASSERT_FALSE(m.is_null()) << "no elicitation request";
            if (m.value("method", "") == "elicitation/create") ask = m;
        }
        io->write_line(R"({"jsonrpc":"2.0","id":)" + ask["id"].dump() + "," + answer + "}");
        json reply = io->read_response(id, nullptr);
        ASSERT_FALSE(reply.is_null()) << "the tool call was never answered";
        const bool refused = reply.contains("error") || reply["result"].value("isError", false);
        EXPECT_TRUE(refused) << reply;
        EXPECT_EQ(reply.dump().find("failed unexpectedly"), std::string::npos) << reply;
        ++id;
    }
    EXPECT_EQ(e.h.gw->count_requests("POST", "deploy_blog"), 0u) << "nothing may be deployed";
    io->write_line(R"({"jsonrpc":"2.0","id":99,"method":"ping"})");
    EXPECT_TRUE(io->read_response(99).contains("result"));
}

// Issue 31, item 3: a client that declares elicitation but answers elicitation/create with
// "Method not found" (@mastra/mcp 0.14 and 1.x) is not told the tool does not exist: it gets the
// confirmation_id preview, the session remembers (no form is asked again), and the id deploys.
TEST(Hardening, DeclaredElicitationAnsweredMethodNotFoundFallsBackToAConfirmationId) {
    Everything e;
    json draft = e.h.call("generate_article", {{"client_id", "demo-dental"}, {"keyword", "bridges"}})
                     .structured();
    const std::string article = draft.value("article_id", "");
    ASSERT_FALSE(article.empty()) << draft;
    auto io = start_stdio(*e.h.server);
    io->write_line(json{{"jsonrpc", "2.0"},
                        {"id", 1},
                        {"method", "initialize"},
                        {"params",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", {{"elicitation", json::object()}}},
                          {"clientInfo", {{"name", "mastra-like"}, {"version", "1"}}}}}}
                       .dump());
    ASSERT_TRUE(io->read_response(1).contains("result"));
    io->write_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    const json args = {{"client_id", "demo-dental"}, {"article_id", article}};
    const auto call = [&](int id, const json& arguments) {
        io->write_line(json{{"jsonrpc", "2.0"},
                            {"id", id},
                            {"method", "tools/call"},
                            {"params", {{"name", "deploy_article"}, {"arguments", arguments}}}}
                           .dump());
    };
    // Reads messages until the call's answer, answering any elicitation with Method not found;
    // counts the forms asked.
    int asked = 0;
    const auto answer_of = [&](int id) {
        for (int i = 0; i < 10; ++i) {
            json m = io->read_json();
            if (m.is_null()) break;
            if (m.value("method", "") == "elicitation/create") {
                ++asked;
                io->write_line(R"({"jsonrpc":"2.0","id":)" + m["id"].dump() +
                               R"(,"error":{"code":-32601,"message":"Method not found"}})");
                continue;
            }
            if (m.contains("id") && m["id"] == id) return m;
        }
        return json();
    };
    for (int id : {10, 11}) {
        call(id, args);
        json reply = answer_of(id);
        ASSERT_TRUE(reply.contains("result")) << reply;
        EXPECT_FALSE(reply["result"].value("isError", false)) << reply;
        const json preview = reply["result"]["structuredContent"];
        EXPECT_EQ(preview.value("status", ""), "confirmation_required") << reply;
        EXPECT_FALSE(preview.value("confirmation_id", "").empty()) << reply;
    }
    EXPECT_EQ(asked, 1) << "the session asks no form again once the client cannot answer one";
    call(12, args);
    json first = answer_of(12);
    json confirmed = args;
    confirmed["confirmation_id"] = first["result"]["structuredContent"]["confirmation_id"];
    call(13, confirmed);
    json done = answer_of(13);
    EXPECT_EQ(done["result"]["structuredContent"].value("status", ""), "published") << done;
    EXPECT_EQ(e.h.gw->count_requests("POST", "deploy_blog"), 1u);
}

TEST(Hardening, TaskTtlBeyondTheCapIsCapped) {
    Everything e;
    agency::mcp::Inbound in;
    in.era = agency::mcp::Era::legacy;
    in.session = e.h.server->create_session("ttl-session");
    e.h.server->register_session(in.session);
    ASSERT_TRUE(e.h.server->handle(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})",
        in));
    for (const std::string ttl : {"1e300", "9223372036854775807", "1e19"}) {
        const std::string message =
            R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_seo_audit","arguments":{"client_id":"demo-dental","url":"https://www.brightsmile.example/"},"task":{"ttl":)" +
            ttl + "}}}";
        auto reply = e.h.server->handle(message, in);
        ASSERT_TRUE(reply);
        json r = json::parse(reply->text);
        ASSERT_TRUE(r["result"].contains("task")) << r;
        EXPECT_EQ(r["result"]["task"]["ttl"], 24 * 60 * 60 * 1000) << ttl;
    }
}

TEST(Hardening, HttpAnswersEveryReproducerAndKeepsServing) {
    Everything e;
    agency::mcp::HttpOptions options;
    options.port = 0;
    options.max_body_bytes = 8 * 1024 * 1024;
    agency::mcp::HttpTransport transport(*e.h.server, options);
    const int port = transport.start();
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(30, 0);
    const httplib::Headers headers = {{"MCP-Protocol-Version", "2026-07-28"},
                                      {"Accept", "application/json, text/event-stream"}};
    for (const std::string& body : reproducers()) {
        SCOPED_TRACE(body.substr(0, 120));
        auto res = client.Post("/mcp", headers, body, "application/json");
        ASSERT_TRUE(res) << "no answer";
        EXPECT_LT(res->status, 500) << res->body.substr(0, 300);
        json reply = json::parse(res->body, nullptr, false);
        if (!reply.is_discarded() && reply.contains("error")) {
            EXPECT_NE(reply["error"]["code"], -32603) << res->body.substr(0, 300);
        }
    }
    // A session's client answers a request the server never sent with a malformed error: 202.
    auto init = client.Post(
        "/mcp", {{"Accept", "application/json, text/event-stream"}},
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})",
        "application/json");
    ASSERT_TRUE(init);
    ASSERT_EQ(init->status, 200) << init->body;
    const std::string session = init->get_header_value("Mcp-Session-Id");
    auto answer = client.Post("/mcp",
                              {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"},
                               {"Accept", "application/json, text/event-stream"}},
                              R"({"jsonrpc":"2.0","id":"agency-1","error":"boom"})",
                              "application/json");
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 202) << answer->body;
    auto ping = client.Post("/mcp",
                            {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"},
                             {"Accept", "application/json, text/event-stream"}},
                            R"({"jsonrpc":"2.0","id":2,"method":"ping"})", "application/json");
    ASSERT_TRUE(ping);
    EXPECT_EQ(ping->status, 200);
}

TEST(JsonLimits, CountsDepthAndStringsOutsideAndInsideStrings) {
    using agency::mcp::check_json_limits;
    agency::mcp::JsonLimits limits{.max_depth = 3, .max_string_bytes = 8};
    EXPECT_EQ(check_json_limits(R"([[["abcd"]]])", limits), "");
    EXPECT_NE(check_json_limits(R"([[[[1]]]])", limits), "");
    EXPECT_EQ(check_json_limits(R"(["[[[[[[", "]]]"])", limits), "") << "brackets inside strings";
    EXPECT_EQ(check_json_limits(R"(["a\"[[[["])", limits), "") << "an escaped quote";
    EXPECT_NE(check_json_limits(R"(["abcdefghi"])", limits), "");
    EXPECT_NE(check_json_limits(R"({"abcdefghi":1})", limits), "") << "keys count too";
    EXPECT_NE(check_json_limits(std::string("[1]\0", 4), limits), "");
    EXPECT_NE(check_json_limits(R"(["abcdefghijk)", limits), "") << "an unterminated string";
}

// The state database locked by another process while serving: the call is refused with what
// happened and what to do, not "failed unexpectedly", and nothing reaches the gateway.
TEST(Hardening, LockedStateDatabaseIsAnActionableToolError) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("agency-lock-" + agency::crypto::random_hex(6));
    fs::create_directories(dir);
    const std::string path = (dir / "state.db").string();
    {
        auto rt = std::make_shared<agency::tools::ActionRuntime>(
            agency::testing::on_sqlite(agency::tools::ActionSettings{.audit_workers = 1}, path));
        ToolHarness h{agency::sample::Options{}, agency::tools::Settings{},
                      [rt](agency::mcp::Server& server,
                           const std::shared_ptr<agency::tools::Toolbox>& box) {
                          agency::tools::register_all(server, box, rt);
                      }};
        sqlite3* other = nullptr;
        ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
        auto reply = h.call("generate_keyword_ideas", {{"client_id", "demo-dental"},
                                                       {"seed", "implants"},
                                                       {"idempotency_key", "lock-1"}});
        sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(other);
        EXPECT_EQ(reply.reason(), "state_unavailable") << reply.response;
        EXPECT_NE(reply.tool_error().value("message", "").find("locked"), std::string::npos);
        EXPECT_EQ(h.gw->count_requests("POST", "generate_keywords"), 0u);
        // Once the lock is gone, the same call goes through.
        auto again = h.call("generate_keyword_ideas", {{"client_id", "demo-dental"},
                                                       {"seed", "implants"},
                                                       {"idempotency_key", "lock-1"}});
        EXPECT_FALSE(again.is_error()) << again.response;
        rt->audits().stop();
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
}

// Issue 30: a PostgreSQL outage was told to the caller as a SQLite file "locked by another
// process ... check --state-db". The message names the store that failed. SQLite's words stay
// as they were; PostgreSQL's carry libpq's reason (here a real refused connection: no server
// listens on the port) and point at --state-url.
TEST(Hardening, StateUnavailableNamesTheStoreThatFailed) {
    using agency::state::StoreError;
    const auto message = [](const agency::mcp::ToolResult& r) {
        return json::parse(r.content.at(0).value("text", "{}"))["error"].value("message", "");
    };
    const auto locked =
        agency::tools::state_unavailable(StoreError("database is locked", StoreError::Kind::busy));
    EXPECT_NE(message(locked).find("locked by another process"), std::string::npos);
    EXPECT_NE(message(locked).find("--state-db"), std::string::npos);
    EXPECT_EQ(message(locked).find("PostgreSQL"), std::string::npos);

    // A port nothing listens on: bound, never listened, so connecting is refused.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    const std::string url =
        "postgresql://agency:hunter2@127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/agency";
    try {
        agency::state::PgStore store(url);
        ADD_FAILURE() << "connected to a port nothing listens on";
    } catch (const StoreError& e) {
        EXPECT_EQ(e.backend(), StoreError::Backend::postgres);
        const auto reply = agency::tools::state_unavailable(e);
        const std::string text = message(reply);
        EXPECT_NE(text.find("PostgreSQL"), std::string::npos) << text;
        EXPECT_NE(text.find("--state-url"), std::string::npos) << text;
        EXPECT_NE(text.find("refused"), std::string::npos) << "libpq's reason: " << text;
        EXPECT_EQ(text.find("locked by another process"), std::string::npos) << text;
        EXPECT_EQ(text.find("--state-db"), std::string::npos) << text;
        EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
    }
    ::close(fd);
}

// The same through a tool call, with the shared store gone while serving: its connections
// dropped and the database refusing new ones. (StoreBackends: run beside the PostgreSQL
// cluster; tests/CMakeLists.txt.)
TEST(StoreBackends, PostgreSqlOutageWhileServingIsToldAsPostgreSql) {
    const std::string url = agency::testing::pg_fresh_database();
    auto store = std::make_shared<agency::state::PgStore>(url);
    auto rt = std::make_shared<agency::tools::ActionRuntime>(agency::testing::with_store(
        agency::tools::ActionSettings{.store = store, .audit_workers = 1}));
    ToolHarness h{
        agency::sample::Options{}, agency::tools::Settings{},
        [rt](agency::mcp::Server& server, const std::shared_ptr<agency::tools::Toolbox>& box) {
            agency::tools::register_all(server, box, rt);
        }};
    const json args = {
        {"client_id", "demo-dental"}, {"seed", "implants"}, {"idempotency_key", "pg-out-1"}};
    // From the cluster's own database: a database cannot refuse connections to itself.
    const std::string name = url.substr(url.rfind('/') + 1);
    agency::testing::pg_exec(url.substr(0, url.rfind('/') + 1) + "postgres",
                             "ALTER DATABASE " + name +
                                 " ALLOW_CONNECTIONS false; SELECT pg_terminate_backend(pid) "
                                 "FROM pg_stat_activity WHERE datname = '" +
                                 name + "'");
    auto reply = h.call("generate_keyword_ideas", args);
    EXPECT_EQ(reply.reason(), "state_unavailable") << reply.response;
    const std::string text = reply.tool_error().value("message", "");
    EXPECT_NE(text.find("PostgreSQL"), std::string::npos) << text;
    EXPECT_NE(text.find("--state-url"), std::string::npos) << text;
    EXPECT_EQ(text.find("locked by another process"), std::string::npos) << text;
    EXPECT_EQ(text.find("--state-db"), std::string::npos) << text;
    EXPECT_EQ(h.gw->count_requests("POST", "generate_keywords"), 0u);
    rt->audits().stop();
}
