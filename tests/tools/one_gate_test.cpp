// The action gate's promises on the paths between features (issue 45): nothing runs twice,
// nothing goes out that a person did not approve on that path, and no caller spends past its
// budget, whatever carried the approval, whichever instance a retry reaches, and however the
// caller gave up. Two instances share one store (a SQLite file; a PostgreSQL database) and one
// sample gateway on a loopback port, as two processes behind a balancer would; a "restart" is a
// third instance opened on the same store.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "server/mcp_server.hpp"
#include "state/open_store.hpp"
#include "state/store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/registry.hpp"

namespace one_gate_test {

namespace fs = std::filesystem;
using namespace agency::testing::tool_names;
using json = nlohmann::json;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;
constexpr const char* kSecret = "one-gate-test-secret-of-32-characters!";

// One server process: its own gateway client, tools, action runtime and MCP core, on the store
// every instance shares.
struct Instance {
    std::shared_ptr<ActionRuntime> rt;
    std::unique_ptr<agency::mcp::Server> server;
    int next_id = 1;

    Instance(const std::string& gateway_url, std::shared_ptr<agency::state::Store> store,
             const std::string& spool = {}) {
        agency::gateway::Config config;
        config.base_url = gateway_url;
        config.backoff_base = 2ms;
        config.max_attempts = 3;
        auto client = std::make_shared<agency::gateway::Client>(config);
        agency::tools::Settings settings;
        settings.secret = kSecret;
        auto box = std::make_shared<agency::tools::Toolbox>(client, std::move(settings));
        ActionSettings actions;
        actions.store = std::move(store);
        actions.write_log_spool = spool;
        rt = std::make_shared<ActionRuntime>(agency::testing::with_store(std::move(actions)));
        agency::mcp::ServerOptions options;
        options.state_secret = kSecret;
        options.task_store = rt->shared_store();
        server = std::make_unique<agency::mcp::Server>(options);
        agency::tools::register_all(*server, box, rt);
    }
    ~Instance() { rt->audits().stop(); }

    // A modern tools/call; `capabilities` as the client declares them; `stop` fires when the
    // caller gives up (a closed connection, notifications/cancelled).
    json call(const Principal& who, const std::string& tool, const json& args,
              const json& capabilities = json::object(), const json& round = json::object(),
              std::stop_token stop = {}) {
        json params = {{"name", tool}, {"arguments", args}};
        if (round.is_object()) params.update(round);
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities",
                            capabilities.is_object() ? capabilities : json::object()}};
        const json message = {
            {"jsonrpc", "2.0"}, {"id", next_id++}, {"method", "tools/call"}, {"params", params}};
        agency::mcp::Inbound in;
        in.principal = who;
        in.stop = std::move(stop);
        auto text = server->handle_message(message, in);
        return text ? json::parse(text->text) : json(nullptr);
    }
};

const json kEliciting = {{"elicitation", json::object()}};
// A client that can be asked and renders MCP Apps views.
const json kViews = {
    {"elicitation", json::object()},
    {"extensions", {{"io.modelcontextprotocol/ui", {{"mimeTypes", {"text/html;profile=mcp-app"}}}}}}};
const json kAccept = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};

Principal caller(const std::string& name, std::optional<std::int64_t> budget = std::nullopt) {
    Principal p;
    p.name = "key:" + name;
    p.authenticated = true;
    p.action_budget = budget;
    return p;
}

json tool_error(const json& response) {
    const json& result = response.value("result", json::object());
    if (!result.value("isError", false)) return nullptr;
    const json e = json::parse(result["content"][0].value("text", ""), nullptr, false);
    return e.is_object() ? e.value("error", json()) : json();
}

// Whether a call was turned down: a tool error, or a JSON-RPC error.
bool refused(const json& response) {
    return response.contains("error") || tool_error(response).is_object();
}

// A sample gateway on a loopback port and a store the instances share.
class OneGate : public ::testing::TestWithParam<std::string> {
protected:
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};
    fs::path dir = fs::temp_directory_path() / ("agency-gate-" + agency::crypto::random_hex(6));
    std::string where;  // the SQLite file or the PostgreSQL URL

    void SetUp() override {
        gateway_server.start("127.0.0.1", 0);
        fs::create_directories(dir);
        where = GetParam() == "sqlite" ? (dir / "state.db").string()
                                       : agency::testing::pg_fresh_database();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    // A new process on the shared store.
    std::unique_ptr<Instance> instance(const std::string& spool = {}) {
        return std::make_unique<Instance>(gateway_server.base_url(),
                                          agency::state::open_store(where), spool);
    }
    // The write log's rows of `tool`, as the store holds them.
    static std::vector<agency::state::WriteLogEntry> rows_of(Instance& on, const std::string& tool) {
        std::vector<agency::state::WriteLogEntry> out;
        on.rt->store().read_write_log({.tool = tool},
                                      [&](const auto& e) { out.push_back(e); });
        return out;
    }
    std::size_t posts(const std::string& action) const { return gw->count_requests("POST", action); }
};

// Finding 1: one "yes" in an input_required round acts once, though the same answer round
// reaches the other instance, and a restarted one.
TEST_P(OneGate, AnAnswerRoundActsOnceOnEveryInstanceAndAfterARestart) {
    auto a = instance();
    auto b = instance();
    const Principal who = caller("alice");
    const json args = {{"client_id", kPlumbing}, {"keyword", "emergency plumber"}};
    const json first = a->call(who, "generate_article", args, kEliciting);
    ASSERT_EQ(first["result"].value("resultType", ""), "input_required") << first.dump();
    const json round = {{"requestState", first["result"]["requestState"]},
                        {"inputResponses", kAccept}};

    const json done = a->call(who, "generate_article", args, kEliciting, round);
    ASSERT_EQ(tool_error(done), nullptr) << done.dump();
    EXPECT_EQ(posts("generate_blog"), 1u);

    const json on_b = b->call(who, "generate_article", args, kEliciting, round);
    ASSERT_TRUE(on_b.contains("error")) << on_b.dump();
    EXPECT_NE(on_b["error"].value("message", "").find("already used"), std::string::npos)
        << on_b.dump();
    a.reset();
    auto restarted = instance();
    const json after = restarted->call(who, "generate_article", args, kEliciting, round);
    EXPECT_TRUE(after.contains("error")) << after.dump();
    EXPECT_EQ(posts("generate_blog"), 1u) << "one approval, one article";
}

// Finding 2: a caller that gives up once the POST has left does not free its idempotency key:
// the same key again answers with what the first call did, and nothing is sent twice.
TEST_P(OneGate, AGiveUpAfterThePostKeepsTheKeyAndItsOutcome) {
    auto a = instance();
    auto b = instance();
    const Principal who = caller("bob");
    gw->inject(Fault{.target = "generate_keywords", .mode = FaultMode::slow, .delay_ms = 700});
    const json args = {{"client_id", kDental}, {"seed", "implants"}, {"idempotency_key", "k-1"}};
    std::stop_source give_up;
    std::jthread watcher([&] {
        (void)agency::testing::eventually([&] { return posts("generate_keywords") != 0; }, 2000ms,
                                          2ms);
        give_up.request_stop();
    });
    a->call(who, "generate_keyword_ideas", args, {}, {}, give_up.get_token());
    watcher.join();
    ASSERT_EQ(posts("generate_keywords"), 1u);

    // The retry reaches the other instance, as through a balancer.
    const json again = b->call(who, "generate_keyword_ideas", args);
    ASSERT_EQ(tool_error(again), nullptr) << again.dump();
    EXPECT_TRUE(again["result"]["structuredContent"].value("replayed", false)) << again.dump();
    EXPECT_EQ(posts("generate_keywords"), 1u) << "the first call's POST is the only one";
}

// Finding 2: giving up is not a way around the budget. A budget of 2 and 6 give-ups after the
// POST: 2 POSTs, then the budget refuses.
TEST_P(OneGate, GivingUpNeverSpendsPastTheBudget) {
    auto a = instance();
    const Principal who = caller("carol", 2);
    std::size_t refused = 0;
    for (int i = 0; i < 6; ++i) {
        const std::size_t before = posts("generate_keywords");
        gw->inject(Fault{.target = "generate_keywords", .mode = FaultMode::slow, .delay_ms = 300});
        std::stop_source give_up;
        std::jthread watcher([&] {
            (void)agency::testing::eventually(
                [&] { return posts("generate_keywords") != before; }, 500ms, 2ms);
            give_up.request_stop();
        });
        const json r = a->call(who, "generate_keyword_ideas",
                               {{"client_id", kDental}, {"seed", "crowns " + std::to_string(i)}},
                               {}, {}, give_up.get_token());
        watcher.join();
        const json e = tool_error(r);
        if (e.is_object() && e.value("reason", "") == "budget") ++refused;
    }
    EXPECT_EQ(posts("generate_keywords"), 2u);
    EXPECT_EQ(refused, 4u);
}

// Finding 3: the view's approval token names a store record, but that record is no
// confirmation_id; and view_decide acts only where the request is offered the tool it approves.
TEST_P(OneGate, AViewTokenIsNoConfirmationAndObeysTheToolSelection) {
    auto a = instance();
    const Principal who = caller("dave");
    const json& views = kViews;
    const json draft = a->call(who, "generate_article",
                               {{"client_id", kDental}, {"keyword", "whitening"}}, views);
    const std::string article = draft["result"]["structuredContent"].value("article_id", "");
    ASSERT_FALSE(article.empty()) << draft.dump();
    const json args = {{"client_id", kDental}, {"article_id", article}};
    const json asked = a->call(who, "deploy_article", args, views);
    const std::string token =
        asked["result"]["_meta"]["agency-mcp/approval"].value("token", "");
    ASSERT_FALSE(token.empty()) << asked.dump();
    // What anyone who sees the token reads in it.
    const auto payload =
        agency::crypto::base64url_decode(std::string_view(token).substr(0, token.find('.')));
    ASSERT_TRUE(payload);
    const std::string record = json::parse(*payload)["b"].value("confirmation", "");
    ASSERT_FALSE(record.empty());

    json with_id = args;
    with_id["confirmation_id"] = record;
    const json stolen = a->call(who, "deploy_article", with_id);
    EXPECT_EQ(tool_error(stolen).value("reason", ""), "confirmation") << stolen.dump();
    EXPECT_EQ(posts("deploy_blog"), 0u) << "the token's record is not a confirmation_id";

    Principal narrowed = who;
    narrowed.selection.tools = {"view_decide", "list_articles"};
    const json decided = a->call(narrowed, "view_decide",
                                 {{"approval", token}, {"decision", "approve"}}, views);
    EXPECT_TRUE(tool_error(decided).is_object()) << decided.dump();
    EXPECT_EQ(posts("deploy_blog"), 0u) << "the request's tools leave deploy_article out";

    const json approved =
        a->call(who, "view_decide", {{"approval", token}, {"decision", "approve"}}, views);
    EXPECT_EQ(tool_error(approved), nullptr) << approved.dump();
    EXPECT_EQ(posts("deploy_blog"), 1u);
}

// Finding 1, the other carriers: a confirmation_id and a view's approval token, each spent on
// one instance, act nowhere again: not on the other instance, not after a restart.
TEST_P(OneGate, AConfirmationIdAndAViewTokenActOnceOnEveryInstanceAndAfterARestart) {
    auto a = instance();
    auto b = instance();
    const Principal who = caller("frank");
    const json& views = kViews;
    const auto draft = [&](const std::string& keyword) {
        const json d = a->call(who, "generate_article", {{"client_id", kDental}, {"keyword", keyword}});
        return d["result"]["structuredContent"].value("article_id", "");
    };
    const std::string first = draft("onlays");
    const std::string second = draft("inlays");
    ASSERT_FALSE(first.empty());
    ASSERT_FALSE(second.empty());

    // A confirmation_id (the two-step preview of a client that cannot be asked).
    json args = {{"client_id", kDental}, {"article_id", first}};
    const json preview = a->call(who, "deploy_article", args);
    args["confirmation_id"] = preview["result"]["structuredContent"].value("confirmation_id", "");
    ASSERT_FALSE(args["confirmation_id"].get<std::string>().empty()) << preview.dump();
    ASSERT_EQ(tool_error(a->call(who, "deploy_article", args)), nullptr);
    EXPECT_EQ(posts("deploy_blog"), 1u);
    EXPECT_TRUE(refused(b->call(who, "deploy_article", args)));

    // A view's token, approved on the other instance than the one that showed it.
    const json asked =
        a->call(who, "deploy_article", {{"client_id", kDental}, {"article_id", second}}, views);
    const std::string token = asked["result"]["_meta"]["agency-mcp/approval"].value("token", "");
    ASSERT_FALSE(token.empty()) << asked.dump();
    const json approve = {{"approval", token}, {"decision", "approve"}};
    ASSERT_EQ(tool_error(b->call(who, "view_decide", approve, views)), nullptr);
    EXPECT_EQ(posts("deploy_blog"), 2u);
    EXPECT_TRUE(refused(a->call(who, "view_decide", approve, views)));

    a.reset();
    b.reset();
    auto restarted = instance();
    EXPECT_TRUE(refused(restarted->call(who, "deploy_article", args)));
    EXPECT_TRUE(refused(restarted->call(who, "view_decide", approve, views)));
    EXPECT_EQ(posts("deploy_blog"), 2u) << "two approvals, two deploys, on any instance";
}

// Finding 8: an action that ran while the store was down is in the write log, once. The store
// goes down while the POST is at the gateway: the caller still hears the outcome, the row waits
// in the spool file, and when the store is back it is appended with the key's result, so the
// same idempotency key is answered from it; a restart that finds the spool adds nothing twice.
TEST_P(OneGate, AnActionThatRanWhileTheStoreWasDownIsInTheWriteLogOnce) {
    if (GetParam() != "postgresql") GTEST_SKIP() << "the store is taken down through PostgreSQL";
    const std::string spool = (dir / "write-log.spool").string();
    auto a = instance(spool);
    const Principal who = caller("erin");
    const json args = {{"client_id", kDental}, {"keyword", "bridges"}, {"idempotency_key", "k-down"}};
    gw->inject(Fault{.target = "generate_blog", .mode = FaultMode::slow, .delay_ms = 1500});
    json reply;
    std::jthread call([&] { reply = a->call(who, "generate_article", args); });
    // Its POST held at the gateway (not a read before it): the store goes down then.
    (void)agency::testing::eventually([&] { return gw->posts_in_flight() != 0; }, 4000ms, 2ms);
    ASSERT_EQ(gw->posts_in_flight(), 1u);
    agency::testing::pg_allow_connections(where, false);
    call.join();
    ASSERT_EQ(posts("generate_blog"), 1u);
    ASSERT_EQ(tool_error(reply), nullptr) << reply.dump();
    const std::string article = reply["result"]["structuredContent"].value("article_id", "");
    ASSERT_FALSE(article.empty()) << reply.dump();
    EXPECT_EQ(a->rt->write_log().spooled(), 1u);
    ASSERT_TRUE(fs::exists(spool));

    agency::testing::pg_allow_connections(where, true);
    a->rt->write_log().flush();
    EXPECT_EQ(a->rt->write_log().spooled(), 0u);
    auto rows = rows_of(*a, "generate_article");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].outcome, "ok");
    EXPECT_EQ(rows[0].record_id, article);
    EXPECT_EQ(rows[0].principal, who.name);

    // A restart on the same spool appends nothing again; the key answers from its result.
    a.reset();
    auto b = instance(spool);
    b->rt->write_log().flush();
    EXPECT_EQ(rows_of(*b, "generate_article").size(), 1u);
    const json again = b->call(who, "generate_article", args);
    ASSERT_EQ(tool_error(again), nullptr) << again.dump();
    EXPECT_EQ(again["result"]["structuredContent"].value("article_id", ""), article);
    EXPECT_EQ(posts("generate_blog"), 1u) << "the first call's POST is the only one";
}

// Finding 8: a caller that cannot act leaves one row and a count per kind of refusal, not one
// row per try; another kind of refusal, or another caller, is a row of its own.
TEST_P(OneGate, RefusalsOfOneKindAreOneRowAndACount) {
    auto a = instance();
    Principal reader = caller("reader");
    reader.scopes = {"read"};
    for (int i = 0; i < 121; ++i)
        a->call(reader, "generate_article", {{"client_id", kDental}, {"keyword", "veneers"}});
    Principal other = caller("other-reader");
    other.scopes = {"read"};
    a->call(other, "generate_article", {{"client_id", kDental}, {"keyword", "veneers"}});
    EXPECT_EQ(posts("generate_blog"), 0u);
    auto rows = rows_of(*a, "generate_article");
    ASSERT_EQ(rows.size(), 2u) << "the first refusal of each caller, at once";
    a->rt->write_log().flush(true);
    rows = rows_of(*a, "generate_article");
    ASSERT_EQ(rows.size(), 3u);
    std::size_t counted = 0;
    for (const auto& row : rows) {
        EXPECT_EQ(row.outcome, "refused");
        EXPECT_EQ(row.reason, "scope");
        if (row.detail.find("120 more refusal(s)") != std::string::npos) {
            EXPECT_EQ(row.principal, reader.name);
            ++counted;
        }
    }
    EXPECT_EQ(counted, 1u) << "one row counts the other 120";
}

INSTANTIATE_TEST_SUITE_P(Stores, OneGate, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

}  // namespace one_gate_test
