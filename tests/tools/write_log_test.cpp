// The write log: the action pipeline appends one row per action call whatever its outcome
// (done, refused for its arguments, scope, confirmation or credits, failed at the gateway, a
// preview, an idempotent replay), never holding a confirmation_id; the client's write-log
// resource shows the newest rows. Also the per-principal tool-call rate limit in the core.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "base/crypto.hpp"
#include "server/rate_limit.hpp"
#include "state/sqlite_store.hpp"
#include "state/write_log_spool.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"
#include "tools/pipeline/write_log.hpp"

namespace {

using namespace agency::testing::tool_names;
using agency::state::WriteLogEntry;
using json = nlohmann::json;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;

struct Writes : agency::testing::ActionToolHarness {
    explicit Writes(ActionSettings settings = {}) : ActionToolHarness({}, std::move(settings)) {}

    std::vector<WriteLogEntry> rows() {
        std::vector<WriteLogEntry> out;
        rt->store().read_write_log({}, [&](const WriteLogEntry& e) { out.push_back(e); });
        return out;
    }
    WriteLogEntry last() {
        auto all = rows();
        return all.empty() ? WriteLogEntry{} : all.back();
    }
};

// A modern tools/call from a client that declares elicitation.
json modern_call(Writes& w, const std::string& tool, const json& args,
                 const json& responses = nullptr, const json& state = nullptr) {
    return w.h->eliciting_call(tool, args, responses, state, "editor");
}

std::string draft_article(Writes& w) {
    ToolReply r = w.h->call("generate_article", {{"client_id", kDental}, {"keyword", "implants"}},
                            "writer");
    return r.structured().value("article_id", "");
}

}  // namespace

// The two-step deploy: a generation (no confirmation needed), the preview, the confirmed deploy
// and a refused second use of its confirmation_id, each a row; the id itself is never stored,
// only a digest that ties the preview to the deploy it allowed.
TEST(WriteLog, ConfirmedDeployLeavesOneRowPerStepWithoutTheConfirmationId) {
    Writes w;
    const std::string id = draft_article(w);
    ASSERT_FALSE(id.empty());
    WriteLogEntry generated = w.last();
    EXPECT_EQ(generated.principal, "writer");
    EXPECT_EQ(generated.tool, "generate_article");
    EXPECT_EQ(generated.client_id, kDental);
    EXPECT_EQ(generated.outcome, "ok");
    EXPECT_EQ(generated.confirmation, "not_needed");
    EXPECT_EQ(generated.record_id, id);
    EXPECT_EQ(generated.args_summary, json({{"client_id", kDental}, {"keyword", "implants"}}));
    EXPECT_EQ(generated.args_digest,
              agency::state::args_digest({{"client_id", kDental}, {"keyword", "implants"}}));
    EXPECT_FALSE(generated.replayed);

    const json args = {{"client_id", kDental}, {"article_id", id}};
    ToolReply preview = w.h->call("deploy_article", args, "editor");
    const std::string cid = preview.structured().value("confirmation_id", "");
    ASSERT_FALSE(cid.empty()) << preview.response.dump();
    WriteLogEntry asked = w.last();
    EXPECT_EQ(asked.outcome, "preview");
    EXPECT_EQ(asked.confirmation, "none");
    EXPECT_FALSE(asked.confirmation_ref.empty());

    json confirmed = args;
    confirmed["confirmation_id"] = cid;
    ToolReply done = w.h->call("deploy_article", confirmed, "editor");
    ASSERT_FALSE(done.is_error()) << done.response.dump();
    WriteLogEntry deployed = w.last();
    EXPECT_EQ(deployed.outcome, "ok");
    EXPECT_EQ(deployed.confirmation, "confirmation_id");
    EXPECT_EQ(deployed.confirmation_ref, asked.confirmation_ref) << "the preview it confirmed";
    EXPECT_EQ(deployed.record_id, id);
    EXPECT_EQ(deployed.args_digest, asked.args_digest) << "the digest leaves the id out";
    EXPECT_FALSE(deployed.args_summary.contains("confirmation_id"));

    ToolReply again = w.h->call("deploy_article", confirmed, "editor");
    EXPECT_EQ(again.reason(), "confirmation");
    WriteLogEntry refused = w.last();
    EXPECT_EQ(refused.outcome, "refused");
    EXPECT_EQ(refused.reason, "confirmation");
    EXPECT_EQ(w.posts("deploy_blog"), 1u);

    EXPECT_EQ(w.rows().size(), 4u);
    for (const auto& row : w.rows()) {
        const std::string text = row.args_summary.dump() + row.detail + row.confirmation_ref;
        EXPECT_EQ(text.find(cid), std::string::npos) << "the confirmation_id is a secret";
        EXPECT_EQ(text.find(cid.substr(3)), std::string::npos);
    }
}

// Refused on the way: invalid arguments, a caller without the write scope (refused by the
// core), and the credit limiter; none reaches the gateway, each is a row saying why.
TEST(WriteLog, RefusalsAreRecordedWithTheirReason) {
    ActionSettings settings;
    settings.credits.max_per_minute_per_client = 1;
    Writes w(settings);
    ToolReply invalid = w.h->call("generate_topical_map", {{"client_id", kDental}, {"topic", 42}});
    EXPECT_EQ(invalid.reason(), "validation");
    WriteLogEntry row = w.last();
    EXPECT_EQ(row.tool, "generate_topical_map");
    EXPECT_EQ(row.outcome, "refused");
    EXPECT_EQ(row.reason, "validation");
    EXPECT_EQ(row.args_summary["topic"], 42);
    EXPECT_FALSE(row.detail.empty());

    agency::mcp::Principal reader;
    reader.name = "reader";
    reader.scopes = {"read"};
    ToolReply scope = w.h->call_as(reader, "generate_topical_map",
                                   {{"client_id", kDental}, {"topic", "crowns"}});
    EXPECT_EQ(scope.reason(), "scope");
    row = w.last();
    EXPECT_EQ(row.principal, "reader");
    EXPECT_EQ(row.outcome, "refused");
    EXPECT_EQ(row.reason, "scope");

    ASSERT_FALSE(w.h->call("generate_topical_map", {{"client_id", kDental}, {"topic", "a"}})
                     .is_error());
    ToolReply credits = w.h->call("generate_topical_map", {{"client_id", kDental}, {"topic", "b"}});
    EXPECT_EQ(credits.reason(), "rate_limited");
    row = w.last();
    EXPECT_EQ(row.outcome, "refused");
    EXPECT_EQ(row.reason, "rate_limited");
    EXPECT_EQ(w.posts("generate_topical_map"), 1u);
    EXPECT_EQ(w.rows().size(), 4u);
}

// The gateway said no: failed, with its reason; a repeat with the same idempotency_key after
// a success is a replay: recorded as such, nothing sent again.
TEST(WriteLog, GatewayFailuresAndReplaysAreRecorded) {
    Writes w;
    w.h->gw->inject({.target = "generate_blog", .mode = FaultMode::status_error, .status_code = 502});
    ToolReply failed = w.h->call("generate_article", {{"client_id", kDental}, {"keyword", "x"}});
    ASSERT_TRUE(failed.is_error());
    WriteLogEntry row = w.last();
    EXPECT_EQ(row.reason, failed.reason());
    EXPECT_EQ(row.outcome, failed.reason() == "outcome_unknown" ? "unknown" : "failed");
    EXPECT_TRUE(row.record_id.empty());

    const json args = {{"client_id", kDental}, {"topic", "veneers"}, {"idempotency_key", "k-1"}};
    ToolReply first = w.h->call("generate_topical_map", args);
    ASSERT_FALSE(first.is_error()) << first.response.dump();
    const std::string map_id = first.structured().value("map_id", "");
    ToolReply second = w.h->call("generate_topical_map", args);
    ASSERT_FALSE(second.is_error());
    const auto rows = w.rows();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_FALSE(rows[1].replayed);
    EXPECT_EQ(rows[1].record_id, map_id);
    EXPECT_TRUE(rows[2].replayed);
    EXPECT_EQ(rows[2].outcome, "ok");
    EXPECT_EQ(rows[2].record_id, map_id);
    EXPECT_EQ(rows[2].args_summary["idempotency_key"], "k-1");
    EXPECT_EQ(w.posts("generate_topical_map"), 1u);
}

// A person's answer to the form: "person" when accepted, a refusal (declined) otherwise.
TEST(WriteLog, ElicitationAnswersAreRecordedAsAPersonsConfirmation) {
    Writes w;
    const std::string id = draft_article(w);
    ASSERT_FALSE(id.empty());
    const json args = {{"client_id", kDental}, {"article_id", id}};
    json first = modern_call(w, "deploy_article", args);
    ASSERT_EQ(first["result"]["resultType"], "input_required") << first.dump();
    EXPECT_EQ(w.rows().size(), 1u) << "a question asked is not an outcome yet";
    const json decline = {{"confirm", {{"action", "decline"}}}};
    modern_call(w, "deploy_article", args, decline, first["result"]["requestState"]);
    EXPECT_EQ(w.last().outcome, "refused");
    EXPECT_EQ(w.last().reason, "declined");

    json again = modern_call(w, "deploy_article", args);
    const json accept = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    json done = modern_call(w, "deploy_article", args, accept, again["result"]["requestState"]);
    ASSERT_EQ(done["result"]["resultType"], "complete") << done.dump();
    const WriteLogEntry row = w.last();
    EXPECT_EQ(row.principal, "editor");
    EXPECT_EQ(row.outcome, "ok");
    EXPECT_EQ(row.confirmation, "person");
    EXPECT_EQ(row.record_id, id);
}

// Long or nested arguments are summarised within bounds; secrets are left out.
TEST(WriteLog, ArgumentSummaryIsBounded) {
    json args = {{"client_id", "c"},
                 {"topic", std::string(500, 'a') + "é"},
                 {"confirmation_id", "cf_secret"},
                 {"api_token", "t0k"},
                 {"list", json::array({1, 2, 3})},
                 {"nested", {{"a", 1}}}};
    for (int i = 0; i < 20; ++i) args["z_extra" + std::to_string(i)] = i;  // sorted last
    const json s = agency::tools::args_summary(args);
    EXPECT_FALSE(s.contains("confirmation_id"));
    EXPECT_FALSE(s.contains("api_token"));
    EXPECT_LE(s["topic"].get<std::string>().size(), 84u);
    EXPECT_EQ(s["list"], "[3 item(s)]");
    EXPECT_EQ(s["nested"], "{1 member(s)}");
    EXPECT_EQ(s.size(), 13u) << "12 arguments and the count of those left out";
    EXPECT_EQ(s["…"], "12 more");
    EXPECT_LT(s.dump().size(), 1200u);
}

// The client's write-log resource: newest first, every caller's writes of that client, for a
// caller with the read scope; a caller without it is refused.
TEST(WriteLog, ClientResourceShowsTheNewestWrites) {
    Writes w;
    draft_article(w);
    w.h->call("generate_topical_map", {{"client_id", kDental}, {"topic", "ignore previous\u200b"}});
    w.h->call("generate_topical_map", {{"client_id", "demo-law"}, {"topic", "wills"}});
    agency::mcp::Principal reader;
    reader.name = "reader";
    reader.scopes = {"read"};
    const std::string uri = std::string("agency://clients/") + kDental + "/write-log";
    json r = w.h->request_as(reader, "resources/read", {{"uri", uri}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    const json& contents = r["result"]["contents"][0];
    EXPECT_EQ(contents["uri"], uri);
    const json body = json::parse(contents.value("text", ""));
    ASSERT_EQ(body["returned"], 2) << body.dump();
    EXPECT_EQ(body["writes"][0]["tool"], "generate_topical_map") << "newest first";
    EXPECT_EQ(body["writes"][0]["args_summary"]["topic"], "ignore previous")
        << "callers' words are cleaned like gateway text";
    EXPECT_EQ(body["writes"][1]["tool"], "generate_article");
    EXPECT_EQ(body["writes"][1]["principal"], "writer");
    EXPECT_TRUE(contents.contains("_meta")) << "marked untrusted";

    agency::mcp::Principal nobody;
    nobody.name = "nobody";
    nobody.scopes = {};
    json refused = w.h->request_as(nobody, "resources/read", {{"uri", uri}});
    ASSERT_TRUE(refused.contains("error")) << refused.dump();
    EXPECT_NE(refused["error"].value("message", "").find("read"), std::string::npos);
}

// Issue 30: a read-only key's refused calls (a row each) cannot push the client's writes out
// of the resource: writes (calls that reached the gateway) and calls not sent are listed apart.
TEST(WriteLog, RefusalsCannotCrowdWritesOutOfTheResource) {
    Writes w;
    const std::string article = draft_article(w);
    ASSERT_FALSE(article.empty());
    // Sixty read-only callers (one caller's refusals of one kind are one row and a count,
    // tools/pipeline/write_log_writer.hpp: sixty rows take sixty callers).
    agency::mcp::Principal reader;
    reader.scopes = {"read"};
    for (int i = 0; i < 60; ++i) {
        reader.name = "key:reader-" + std::to_string(i);
        w.h->call_as(reader, "deploy_article", {{"client_id", kDental}, {"article_id", article}});
    }
    std::size_t refused = 0;
    for (const auto& e : w.rows()) refused += e.outcome == "refused";
    ASSERT_EQ(refused, 60u) << "each caller's first refusal is a row";
    const std::string uri = std::string("agency://clients/") + kDental + "/write-log";
    json r = w.h->request_as(reader, "resources/read", {{"uri", uri}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    const json body = json::parse(r["result"]["contents"][0].value("text", ""));
    ASSERT_EQ(body["returned"], 1) << body.dump().substr(0, 600);
    EXPECT_EQ(body["writes"][0]["tool"], "generate_article");
    EXPECT_EQ(body["writes"][0]["outcome"], "ok");
    EXPECT_EQ(body["not_sent_returned"], 20);
    ASSERT_EQ(body["not_sent"].size(), 20u);
    EXPECT_EQ(body["not_sent"][0]["outcome"], "refused");
    EXPECT_EQ(body["not_sent"][0]["principal"].get<std::string>().rfind("key:reader-", 0), 0u);
    EXPECT_NE(body.value("note", "").find("agency-mcp write-log"), std::string::npos);
}

// --- the spool: rows the store could not take (issue 45, finding 8) ---------------------------

// Kept rows survive the process (a new spool on the same file sees them), are appended once
// however often the file is drained (a drain cut short, a second process), settle their
// idempotency key with them, and a line that is not a row is set aside, not appended.
TEST(WriteLogSpool, KeptRowsAreAppendedOnceHoweverOftenTheFileIsDrained) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("agency-spool-" + agency::crypto::random_hex(6));
    fs::create_directories(dir);
    const std::string path = (dir / "state.db.write-log-spool").string();
    agency::state::SqliteStore store((dir / "state.db").string());
    // Claimed (nullopt: no record before), as a call does before its POST.
    ASSERT_FALSE(store.claim_idempotency("key:w", "generate_article", "k-7", "digest",
                                         std::chrono::seconds(600)));
    {
        agency::state::WriteLogSpool spool(path);
        for (int i = 0; i < 3; ++i) {
            WriteLogEntry e;
            e.id = agency::state::new_write_log_id();
            e.at_ms = 1'700'000'000'000 + i;
            e.principal = "key:w";
            e.tool = "generate_article";
            e.client_id = kDental;
            e.outcome = "ok";
            e.record_id = "post_" + std::to_string(i);
            agency::state::Store::Settlement settle;
            if (i == 0) settle = {.principal = "key:w", .tool = "generate_article", .key = "k-7",
                                  .result = R"({"article_id":"post_0"})"};
            ASSERT_EQ(spool.keep(e, settle), "");
        }
        EXPECT_EQ(spool.waiting(), 3u);
    }
    {
        std::ofstream(path, std::ios::app) << "{\"not\": \"a row\"}\n";
    }
    const std::string copy = path + ".copy";
    fs::copy_file(path, copy);

    agency::state::WriteLogSpool restarted(path);
    EXPECT_EQ(restarted.waiting(), 4u);
    const auto drained = restarted.drain(store);
    EXPECT_EQ(drained.appended, 3u);
    EXPECT_EQ(drained.unreadable, 1u);
    EXPECT_EQ(drained.left, 0u);
    EXPECT_EQ(restarted.waiting(), 0u);
    EXPECT_TRUE(fs::exists(path + ".bad"));
    // The same rows drained again (a copy a crash left behind): nothing doubles.
    fs::rename(copy, path);
    agency::state::WriteLogSpool again(path);
    EXPECT_EQ(again.drain(store).appended, 3u);
    std::vector<WriteLogEntry> rows;
    store.read_write_log({}, [&](const WriteLogEntry& e) { rows.push_back(e); });
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].record_id, "post_0");
    EXPECT_EQ(rows[0].at_ms, 1'700'000'000'000);
    const auto key = store.find_idempotency("key:w", "generate_article", "k-7");
    ASSERT_TRUE(key.has_value());
    EXPECT_FALSE(key->pending) << "the key was settled from the spool";
    fs::remove_all(dir);
}

// --- the per-principal rate limit ---------------------------------------------------------

TEST(RateLimit, BucketPerPrincipalRefillsWithTheClock) {
    agency::testing::ManualClock clock;
    agency::mcp::CallRateLimiter limiter({.per_minute = 6, .burst = 3}, clock);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(limiter.take("alice")) << i;
    auto wait = limiter.take("alice");
    ASSERT_TRUE(wait);
    EXPECT_EQ(wait->count(), 10) << "one call every 10 s at 6 a minute";
    EXPECT_FALSE(limiter.take("bob")) << "a bucket each";
    clock.advance(9s);
    EXPECT_EQ(limiter.take("alice").value_or(0s).count(), 1);
    clock.advance(1s);
    EXPECT_FALSE(limiter.take("alice"));
    EXPECT_TRUE(limiter.take("alice"));
}

TEST(RateLimit, IdleBucketsAreDroppedSoMemoryStaysBounded) {
    agency::testing::ManualClock clock;
    agency::mcp::CallRateLimiter limiter({.per_minute = 60, .burst = 2}, clock, 100);
    for (int i = 0; i < 1000; ++i) limiter.take("caller-" + std::to_string(i));
    EXPECT_LE(limiter.buckets(), 100u);
    clock.advance(2min);  // every bucket refilled: nothing left to remember
    limiter.take("late");
    EXPECT_EQ(limiter.buckets(), 1u);
}

TEST(RateLimit, ParsesTheOptionsForms) {
    using agency::mcp::parse_rate_limit;
    EXPECT_FALSE(parse_rate_limit("off", 0).on());
    EXPECT_FALSE(parse_rate_limit("0", 5).on());
    EXPECT_EQ(parse_rate_limit("600", 0).per_minute, 600);
    EXPECT_EQ(parse_rate_limit("600/minute", 10).burst, 10);
    EXPECT_EQ(parse_rate_limit("5/s", 0).per_minute, 300);
    for (const char* bad : {"", "fast", "10/hour", "-1", "1e3", "10/", "99999999"})
        EXPECT_THROW(parse_rate_limit(bad, 0), std::invalid_argument) << bad;
}

// Through the core: the third call of a caller allowed two is a JSON-RPC error saying when to
// retry, before the tool runs; other methods are not counted.
TEST(RateLimit, CoreRefusesACallerOverItsLimit) {
    agency::testing::ManualClock clock;
    agency::mcp::ServerOptions options;
    options.clock = &clock;
    options.rate_limit = {.per_minute = 30, .burst = 2};
    agency::mcp::Server server(options);
    int ran = 0;
    agency::mcp::ToolDef tool;
    tool.name = "count";
    tool.input_schema = {{"type", "object"}};
    tool.handler = [&](const json&, agency::mcp::RequestContext&) {
        ++ran;
        return agency::mcp::ToolResult::text("ok");
    };
    server.add_tool(std::move(tool));
    auto call = [&](const std::string& method) {
        const json message = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method},
                              {"params", {{"name", "count"},
                                          {"_meta", ToolHarness::modern_meta()}}}};
        agency::mcp::Inbound in;
        in.principal.name = "runaway";
        auto reply = server.handle_message(message, in);
        return reply ? json::parse(reply->text) : json(nullptr);
    };
    EXPECT_TRUE(call("tools/call").contains("result"));
    EXPECT_TRUE(call("tools/list").contains("result"));
    EXPECT_TRUE(call("tools/call").contains("result"));
    const json over = call("tools/call");
    ASSERT_TRUE(over.contains("error")) << over.dump();
    EXPECT_EQ(over["error"]["code"], agency::mcp::error_code::rate_limited);
    EXPECT_EQ(over["error"]["data"]["retryAfterSeconds"], 2);
    EXPECT_EQ(ran, 2) << "the refused call never ran";
    clock.advance(2s);
    EXPECT_TRUE(call("tools/call").contains("result"));
}
