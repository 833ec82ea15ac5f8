// The action tools end to end: MCP tools/call -> guard (scope, idempotency, credits) ->
// gateway client -> sample gateway over loopback HTTP, with its fault injection and request log.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "base/crypto.hpp"
#include "server/mcp_server.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

namespace {

using namespace agency::testing::tool_names;
using json = nlohmann::json;
namespace fs = std::filesystem;

using namespace agency::testing::sample_clients;

const std::vector<std::string> kActionTools = {
    "run_seo_audit",        "refresh_backlinks",     "generate_keyword_ideas",
    "generate_topical_map", "generate_article",      "optimize_page",
    "index_url",            "generate_press_release", "generate_gbp_post",
    "run_local_grid_scan",  "analyze_llm_visibility", "generate_outreach_email"};

// Destructive: act only after confirmation.
const std::vector<std::string> kConfirmedTools = {"deploy_article", "send_prospect_email"};

// A harness whose server has every tool, the action tools over `runtime`.
struct Actions : agency::testing::ActionToolHarness {
    explicit Actions(ActionSettings settings = {}) : ActionToolHarness({}, std::move(settings)) {}

    std::size_t all_posts() const {
        std::size_t n = 0;
        for (const auto& r : h->gw->request_log()) n += r.method == "POST";
        return n;
    }
    std::size_t rows(const std::string& resource, const std::string& client) const {
        return h->gw->rows(resource, client).size();
    }

    json output_schema(const std::string& tool) {
        for (const auto& t : h->tools())
            if (t["name"] == tool) return t.value("outputSchema", json());
        return nullptr;
    }

    // A successful call whose structuredContent conforms to the tool's output schema.
    json ok(const std::string& tool, const json& args, const std::string& principal = "local") {
        ToolReply r = h->call(tool, args, principal);
        EXPECT_EQ(r.rpc_error, 0) << r.response.dump();
        EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 800);
        if (r.is_error() || r.rpc_error) return nullptr;
        agency::tools::InputValidator validator(output_schema(tool));
        EXPECT_EQ(validator.validate(r.structured()), "") << tool << ": " << r.structured().dump();
        return r.structured();
    }

    // Polls get_audit_status until the audit is finished (or 5 s pass).
    json await_audit(const std::string& client, const std::string& audit_id) {
        json status;
        (void)agency::testing::eventually(
            [&] {
                status = ok("get_audit_status", {{"client_id", client}, {"audit_id", audit_id}});
                const std::string s = status.value("status", "");
                return s == "succeeded" || s == "failed";
            },
            std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
        return status;
    }
};

std::size_t rows_with(const json& rows, const std::string& field, const std::string& value) {
    std::size_t n = 0;
    for (const auto& row : rows) n += row.value(field, "") == value;
    return n;
}

}  // namespace

TEST(ActionTools, ReadOnlyCallerSeesNoneAndCausesNoPost) {
    Actions a;
    agency::mcp::Principal reader;
    reader.name = "reader";
    reader.scopes = {"read"};
    std::set<std::string> listed;
    for (const auto& t : a.h->tools_as(reader)) listed.insert(t["name"].get<std::string>());
    for (const auto& tool : kActionTools) EXPECT_FALSE(listed.count(tool)) << tool;
    for (const auto& tool : kConfirmedTools) EXPECT_FALSE(listed.count(tool)) << tool;
    EXPECT_TRUE(listed.count("get_audit_status")) << "reading a job's status needs only read";
    EXPECT_TRUE(listed.count("list_clients"));

    std::set<std::string> all;
    for (const auto& t : a.h->tools()) all.insert(t["name"].get<std::string>());
    for (const auto& tool : kActionTools) EXPECT_TRUE(all.count(tool)) << tool;
    for (const auto& tool : kConfirmedTools) EXPECT_TRUE(all.count(tool)) << tool;

    a.h->gw->clear_log();
    for (const auto& tool : kActionTools) {
        ToolReply r = a.h->call_as(reader, tool, {{"client_id", kDental}});
        EXPECT_TRUE(r.is_error()) << tool;
        EXPECT_EQ(r.reason(), "scope") << tool << ": " << r.response.dump();
    }
    for (const auto& tool : kConfirmedTools) {
        ToolReply r = a.h->call_as(reader, tool,
                                   {{"client_id", kDental}, {"article_id", "x"}, {"email_id", "x"}});
        EXPECT_EQ(r.reason(), "scope") << tool << ": " << r.response.dump();
    }
    EXPECT_EQ(a.h->requests(), 0u) << "a refused call sends nothing to the gateway";
}

TEST(ActionTools, AnnotationsAndMapping) {
    Actions a;
    for (const auto& t : a.h->tools()) {
        const std::string name = t["name"];
        if (std::find(kActionTools.begin(), kActionTools.end(), name) == kActionTools.end())
            continue;
        SCOPED_TRACE(name);
        EXPECT_EQ(t["annotations"]["readOnlyHint"], false);
        EXPECT_EQ(t["annotations"]["destructiveHint"], false);
        const bool idempotent = name == "refresh_backlinks" || name == "run_seo_audit";
        EXPECT_EQ(t["annotations"]["idempotentHint"], idempotent);
        EXPECT_TRUE(t["inputSchema"]["properties"].contains("idempotency_key"));
    }
    bool documented = false;
    for (const auto& doc : a.catalog)
        if (doc.name == "generate_article") {
            documented = true;
            EXPECT_EQ(doc.gateway_action, "generate_blog");
            EXPECT_NE(doc.mapping.find("generate_blog"), std::string::npos);
        }
    EXPECT_TRUE(documented);
}

TEST(ActionTools, GenerateArticleDraftsOneBlog) {
    Actions a;
    const std::size_t before = a.rows("blogs", kDental);
    json r = a.ok("generate_article", {{"client_id", kDental}, {"keyword", "teeth whitening cost"}});
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r["ok"], true);
    EXPECT_EQ(r["status"], "drafted");
    EXPECT_FALSE(r.value("title", "").empty());
    EXPECT_GT(r.value("word_count", 0), 0);
    const std::string article_id = r.value("article_id", "");
    ASSERT_FALSE(article_id.empty());
    const json blogs = a.h->gw->rows("blogs", kDental);
    EXPECT_EQ(blogs.size(), before + 1);
    EXPECT_EQ(rows_with(blogs, "id", article_id), 1u) << "the article is readable at the gateway";
    EXPECT_EQ(a.posts("generate_blog"), 1u);
}

TEST(ActionTools, ServerErrorAfterCreateMakesOneRecord) {
    Actions a;
    const std::size_t before = a.rows("blogs", kDental);
    a.h->gw->inject({.target = "generate_blog", .mode = FaultMode::fail_after});
    json r = a.ok("generate_article", {{"client_id", kDental}, {"keyword", "dental implants"}});
    ASSERT_TRUE(r.is_object());
    EXPECT_FALSE(r.value("article_id", "").empty()) << "recovered from the gateway's rows";
    EXPECT_EQ(a.rows("blogs", kDental), before + 1) << "exactly one new blog";
    EXPECT_EQ(a.posts("generate_blog"), 1u) << "never re-sent";
}

TEST(ActionTools, IdempotencyKeyReplaysTheFirstResult) {
    Actions a;
    const json args = {{"client_id", kDental}, {"keyword", "invisalign"}, {"idempotency_key", "k-1"}};
    json first = a.ok("generate_article", args);
    json again = a.ok("generate_article", args);
    EXPECT_EQ(again.value("replayed", false), true) << "a replay says it is one";
    again.erase("replayed");
    again.erase("first_called_at");
    EXPECT_EQ(first, again);
    EXPECT_EQ(a.posts("generate_blog"), 1u);

    json other = args;
    other["keyword"] = "braces";
    ToolReply r = a.h->call("generate_article", other);
    EXPECT_TRUE(r.is_error());
    EXPECT_EQ(r.reason(), "validation") << r.response.dump();
    EXPECT_EQ(a.posts("generate_blog"), 1u) << "a reused key sends nothing";

    // Keys belong to their principal.
    a.ok("generate_article", args, "someone-else");
    EXPECT_EQ(a.posts("generate_blog"), 2u);
}

TEST(ActionTools, KeyIsFreeAgainWhenNothingWasCreated) {
    Actions a;
    a.h->gw->inject({.target = "generate_gbp_post", .mode = FaultMode::status_error,
                     .status_code = 503});
    const json args = {{"client_id", kLaw}, {"topic", "free consultations"}, {"idempotency_key", "gbp-1"}};
    EXPECT_TRUE(a.h->call("generate_gbp_post", args).is_error());
    json r = a.ok("generate_gbp_post", args);
    EXPECT_EQ(r["status"], "drafted");
    EXPECT_EQ(a.posts("generate_gbp_post"), 2u);
}

TEST(ActionTools, StatusErrorIsAToolErrorWithStatusCode) {
    Actions a;
    const std::size_t before = a.rows("blogs", kDental);
    a.h->gw->inject({.target = "generate_blog", .mode = FaultMode::status_error, .status_code = 502});
    ToolReply r = a.h->call("generate_article", {{"client_id", kDental}, {"keyword", "veneers"}});
    ASSERT_TRUE(r.is_error()) << r.response.dump();
    EXPECT_EQ(r.tool_error().value("status_code", 0), 502) << r.response.dump();
    EXPECT_EQ(a.posts("generate_blog"), 1u);
    EXPECT_EQ(a.rows("blogs", kDental), before);
}

TEST(ActionTools, BurstBeyondTheCapIsRefused) {
    ActionSettings settings;
    settings.credits.max_per_minute_per_client = 3;
    Actions a(settings);
    int accepted = 0;
    int refused = 0;
    for (int i = 0; i < 6; ++i) {
        ToolReply r = a.h->call("generate_topical_map",
                                {{"client_id", kDental}, {"topic", "topic " + std::to_string(i)}});
        if (!r.is_error()) {
            ++accepted;
        } else {
            EXPECT_EQ(r.reason(), "rate_limited") << r.response.dump();
            EXPECT_GT(r.tool_error().value("retry_after_s", 0), 0);
            ++refused;
        }
    }
    EXPECT_EQ(accepted, 3);
    EXPECT_EQ(refused, 3);
    EXPECT_EQ(a.posts("generate_topical_map"), 3u) << "refused calls never reach the gateway";
    // The cap is per client.
    a.ok("generate_topical_map", {{"client_id", kLaw}, {"topic", "estate planning"}});
}

TEST(ActionTools, LimiterBoundsInFlightPerClient) {
    agency::tools::CreditLimiter limiter({.max_in_flight_per_client = 2, .max_per_minute_per_client = 100});
    auto p1 = limiter.try_acquire("a");
    auto p2 = limiter.try_acquire("a");
    ASSERT_TRUE(std::holds_alternative<agency::tools::CreditLimiter::Permit>(p1));
    ASSERT_TRUE(std::holds_alternative<agency::tools::CreditLimiter::Permit>(p2));
    EXPECT_TRUE(std::holds_alternative<agency::tools::CreditLimiter::Refusal>(limiter.try_acquire("a")));
    EXPECT_TRUE(std::holds_alternative<agency::tools::CreditLimiter::Permit>(limiter.try_acquire("b")));
    {
        auto released = std::move(p1);  // destroyed at the end of this scope
    }
    EXPECT_TRUE(std::holds_alternative<agency::tools::CreditLimiter::Permit>(limiter.try_acquire("a")));
}

TEST(ActionTools, AuditIsQueuedThenSucceeds) {
    Actions a;
    const std::string url = "https://www.brightsmiledental.example/new-services";
    const auto started = std::chrono::steady_clock::now();
    json queued = a.ok("run_seo_audit", {{"client_id", kDental}, {"url", url}});
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
    ASSERT_TRUE(queued.is_object());
    EXPECT_EQ(queued["status"], "queued");
    // The client's own site (its website, www. or not): nothing to flag.
    EXPECT_FALSE(queued.contains("warning")) << queued.dump();
    const std::string audit_id = queued.value("audit_id", "");
    ASSERT_FALSE(audit_id.empty());

    // Another site's page: queued as asked, and flagged, naming both hosts.
    json other_site = a.ok("run_seo_audit", {{"client_id", kDental},
                                             {"url", "https://competitor-dentist.example/"}});
    ASSERT_TRUE(other_site.is_object());
    const std::string warning = other_site.value("warning", "");
    EXPECT_NE(warning.find("competitor-dentist.example"), std::string::npos) << other_site.dump();
    EXPECT_NE(warning.find("brightsmiledental.example"), std::string::npos) << other_site.dump();

    json status = a.await_audit(kDental, audit_id);
    ASSERT_EQ(status["status"], "succeeded") << status.dump();
    EXPECT_TRUE(status["score"].is_number());
    EXPECT_TRUE(status["issues_found"].is_number());
    const std::string report_id = status.value("report_id", "");
    EXPECT_EQ(rows_with(a.h->gw->rows("seo_reports", kDental), "id", report_id), 1u);
    // The finished audit's issues are readable by the read tool.
    ToolReply issues = a.h->call("get_audit_issues", {{"client_id", kDental}, {"audit_id", report_id}});
    EXPECT_FALSE(issues.is_error()) << issues.response.dump().substr(0, 400);

    ToolReply other = a.h->call("get_audit_status", {{"client_id", kLaw}, {"audit_id", audit_id}});
    EXPECT_EQ(other.reason(), "not_found") << "an audit is reported only for its client";
}

TEST(ActionTools, AuditFailureCarriesTheGatewayError) {
    Actions a;
    a.h->gw->inject({.target = "seo_audit", .mode = FaultMode::status_error, .status_code = 504});
    json queued = a.ok("run_seo_audit", {{"client_id", kDental}, {"url", "https://fail.example/"}});
    ASSERT_TRUE(queued.is_object());
    json status = a.await_audit(kDental, queued["audit_id"]);
    EXPECT_EQ(status["status"], "failed") << status.dump();
    EXPECT_EQ(status["ok"], false);
    EXPECT_EQ(status["error"].value("status_code", 0), 504) << status.dump();
}

TEST(ActionTools, RunningAuditIsCompletedAfterRestartWithoutDuplicate) {
    const fs::path dir = fs::temp_directory_path() / ("agency-actions-" + agency::crypto::random_hex(6));
    const std::string path = (dir / "state.db").string();
    const std::string url = "https://www.brightsmile.example/restart-check";
    Actions a;  // the gateway; its own runtime is in memory
    std::string job_id;
    {
        // The previous process: its job was running and its POST had reached the gateway.
        agency::state::SqliteStore previous(path);
        job_id = previous.create_job("seo_audit", kDental, "local", {{"url", url}}).id;
        ASSERT_TRUE(previous.claim_job(job_id, "i_previous", std::chrono::seconds(30), false));
        a.h->client->act("seo_audit", kDental, {{"url", url}});
    }
    ASSERT_EQ(rows_with(a.h->gw->rows("seo_reports", kDental), "url", url), 1u);

    // The next process: a fresh jobs runner over the reopened file.
    auto store = std::make_shared<agency::state::SqliteStore>(path);
    agency::tools::AuditJobs jobs(store, 1, {.instance_id = "i_test"});
    jobs.start(a.h->box);
    std::optional<agency::state::Job> job;
    (void)agency::testing::eventually(
        [&] {
            job = store->job(job_id);
            return job && job->status == "succeeded";
        },
        std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
    jobs.stop();
    ASSERT_TRUE(job);
    EXPECT_EQ(job->status, "succeeded") << job->error.dump();
    EXPECT_TRUE(job->result["score"].is_number());
    const json reports = a.h->gw->rows("seo_reports", kDental);
    ASSERT_EQ(rows_with(reports, "url", url), 1u);
    for (const auto& row : reports)
        if (row.value("url", "") == url) {
            EXPECT_EQ(job->result["report_id"], row["id"]);
        }
    EXPECT_EQ(a.posts("seo_audit"), 1u) << "the report was found, so nothing was sent again";
    EXPECT_TRUE(store->unfinished_jobs().empty());
    std::error_code ec;
    fs::remove_all(dir, ec);
}

TEST(ActionTools, OutreachDraftIsStoredNotSent) {
    Actions a;
    json r = a.ok("generate_outreach_email",
                  {{"client_id", kLaw}, {"prospect", "https://legal-resources.example/guides"}});
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r["status"], "drafted");
    const std::string email_id = r.value("email_id", "");
    ASSERT_FALSE(email_id.empty());
    auto draft = a.rt->store().draft(email_id, "local");
    ASSERT_TRUE(draft);
    EXPECT_EQ(draft->client_id, kLaw);
    EXPECT_EQ(draft->recipient, "editor@legal-resources.example");
    EXPECT_EQ(draft->recipient, r["recipient"]);
    EXPECT_FALSE(draft->subject.empty());
    EXPECT_FALSE(draft->html.empty());
    EXPECT_EQ(draft->status, "draft");
    EXPECT_EQ(a.posts("generate_outreach_email"), 1u);
    EXPECT_EQ(a.posts("send_prospect_email"), 0u);
}

TEST(ActionTools, ContextFillsGridAndVisibilityFields) {
    Actions a;
    json grid = a.ok("run_local_grid_scan", {{"client_id", kDental}, {"keyword", "dentist"}});
    ASSERT_TRUE(grid.is_object());
    EXPECT_FALSE(grid.value("scan_id", "").empty());
    bool saw_coordinates = false;
    for (const auto& req : a.h->gw->request_log()) {
        if (req.method != "POST" || req.target != "run_grid_search") continue;
        const json body = json::parse(req.detail);
        saw_coordinates = body["lat"].is_number() && body["lng"].is_number();
    }
    EXPECT_TRUE(saw_coordinates) << "lat/lng came from the client record";

    ToolReply half = a.h->call("run_local_grid_scan",
                               {{"client_id", kDental}, {"keyword", "dentist"}, {"lat", 40.0}});
    EXPECT_EQ(half.reason(), "validation");

    json vis = a.ok("analyze_llm_visibility", {{"client_id", kDental}});
    ASSERT_TRUE(vis.is_object());
    EXPECT_FALSE(vis.value("report_id", "").empty());
    for (const auto& req : a.h->gw->request_log()) {
        if (req.method != "POST" || req.target != "run_llm_visibility") continue;
        const json body = json::parse(req.detail);
        EXPECT_EQ(body.value("brand_name", ""), "Bright Smile Dental");
        EXPECT_FALSE(body.value("prompt", "").empty());
    }

    json release = a.ok("generate_press_release", {{"client_id", kDental}, {"topic", "We opened a new office"}});
    ASSERT_TRUE(release.is_object());
    EXPECT_EQ(release.value("title", ""), "We opened a new office");
}

// --- confirmed actions: deploy_article, send_prospect_email --------------------------------------

namespace {

std::string draft_article(Actions& a) {
    json r = a.ok("generate_article", {{"client_id", kDental}, {"keyword", "dental implants"}});
    return r.is_object() ? r.value("article_id", "") : "";
}

std::string article_status(Actions& a, const std::string& id) {
    for (const auto& row : a.h->gw->rows("blogs", kDental))
        if (row.value("id", "") == id) return row.value("status", "");
    return "";
}

// A modern tools/call from a client that declares elicitation.
json modern_call(Actions& a, const std::string& tool, const json& args,
                 const json& responses = nullptr, const json& state = nullptr) {
    return a.h->eliciting_call(tool, args, responses, state);
}

json tool_error_of(const json& response) {
    const json& result = response["result"];
    if (!result.value("isError", false)) return nullptr;
    const json e = json::parse(result["content"][0].value("text", ""), nullptr, false);
    return e.is_object() ? e.value("error", json()) : json();
}

}  // namespace

TEST(ActionTools, DeployTwoStepPreviewThenConfirm) {
    Actions a;
    const std::string id = draft_article(a);
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(article_status(a, id), "draft");
    const json args = {{"client_id", kDental}, {"article_id", id}};

    json preview = a.ok("deploy_article", args);
    ASSERT_TRUE(preview.is_object());
    EXPECT_EQ(preview["status"], "confirmation_required");
    const std::string cid = preview.value("confirmation_id", "");
    ASSERT_FALSE(cid.empty());
    EXPECT_EQ(preview["preview"]["article_id"], id);
    EXPECT_FALSE(preview["preview"].value("title", "").empty());
    EXPECT_NE(preview.value("message", "").find(preview["preview"].value("title", "")),
              std::string::npos);
    EXPECT_EQ(a.posts("deploy_blog"), 0u) << "a preview deploys nothing";
    EXPECT_EQ(article_status(a, id), "draft");

    json confirmed_args = args;
    confirmed_args["confirmation_id"] = cid;
    json done = a.ok("deploy_article", confirmed_args);
    ASSERT_TRUE(done.is_object());
    EXPECT_EQ(done["status"], "published");
    EXPECT_EQ(done["article_id"], id);
    EXPECT_EQ(a.posts("deploy_blog"), 1u);
    EXPECT_EQ(article_status(a, id), "published");

    ToolReply replay = a.h->call("deploy_article", confirmed_args);
    EXPECT_TRUE(replay.is_error());
    EXPECT_EQ(replay.reason(), "confirmation") << replay.response.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 1u) << "a replayed confirmation deploys nothing";
}

// deploy_article takes an idempotency_key like every action tool: once the confirmed deploy
// ran, a repeat with the key answers with the first result at once, without a new confirmation
// and without a second POST; the key with other arguments is refused before any preview.
TEST(ActionTools, DeployIdempotencyKeyReplaysWithoutConfirmingAgain) {
    Actions a;
    const std::string id = draft_article(a);
    ASSERT_FALSE(id.empty());
    const json args = {{"client_id", kDental}, {"article_id", id}, {"idempotency_key", "dep-1"}};
    json preview = a.ok("deploy_article", args);
    ASSERT_TRUE(preview.is_object());
    json confirmed_args = args;
    confirmed_args["confirmation_id"] = preview.value("confirmation_id", "");
    json done = a.ok("deploy_article", confirmed_args);
    ASSERT_TRUE(done.is_object());
    EXPECT_EQ(done["status"], "published");

    json again = a.ok("deploy_article", args);
    EXPECT_EQ(again.value("replayed", false), true);
    again.erase("replayed");
    again.erase("first_called_at");
    EXPECT_EQ(again, done) << "the first result, not a new preview";
    EXPECT_EQ(a.posts("deploy_blog"), 1u);

    const std::string other = draft_article(a);
    ToolReply misuse = a.h->call(
        "deploy_article", {{"client_id", kDental}, {"article_id", other}, {"idempotency_key", "dep-1"}});
    EXPECT_EQ(misuse.reason(), "validation") << misuse.response.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 1u);
    EXPECT_EQ(article_status(a, other), "draft");
}

// A confirmation_id is a secret: neither confirming nor a refused replay may log it.
TEST(ActionTools, ConfirmationIdNeverReachesTheLog) {
    std::ostringstream captured;
    auto previous = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    std::string cid;
    {
        Actions a;
        const std::string id = draft_article(a);
        const json args = {{"client_id", kDental}, {"article_id", id}};
        cid = a.ok("deploy_article", args).value("confirmation_id", "");
        json confirmed = args;
        confirmed["confirmation_id"] = cid;
        a.ok("deploy_article", confirmed);
        a.h->call("deploy_article", confirmed);  // refused replay
    }
    spdlog::set_default_logger(previous);
    ASSERT_FALSE(cid.empty());
    EXPECT_NE(captured.str().find("confirm"), std::string::npos) << "the flow logs nothing?";
    EXPECT_EQ(captured.str().find(cid), std::string::npos) << captured.str();
}

TEST(ActionTools, DeployConfirmationIsBoundToArgumentsCallerAndTool) {
    Actions a;
    const std::string id = draft_article(a);
    const std::string other = draft_article(a);
    ASSERT_FALSE(id.empty());
    json preview = a.ok("deploy_article", {{"client_id", kDental}, {"article_id", id}});
    const std::string cid = preview.value("confirmation_id", "");
    ASSERT_FALSE(cid.empty());

    ToolReply changed = a.h->call(
        "deploy_article", {{"client_id", kDental}, {"article_id", other}, {"confirmation_id", cid}});
    EXPECT_EQ(changed.reason(), "confirmation") << changed.response.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 0u);

    ToolReply forged = a.h->call("deploy_article", {{"client_id", kDental},
                                                    {"article_id", id},
                                                    {"confirmation_id", "cf_forged0000"}});
    EXPECT_EQ(forged.reason(), "confirmation") << forged.response.dump();

    json preview2 = a.ok("deploy_article", {{"client_id", kDental}, {"article_id", id}});
    ToolReply stranger = a.h->call(
        "deploy_article",
        {{"client_id", kDental}, {"article_id", id}, {"confirmation_id", preview2["confirmation_id"]}},
        "someone-else");
    EXPECT_EQ(stranger.reason(), "confirmation") << stranger.response.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 0u) << "nothing deployed without a valid confirmation";
    EXPECT_EQ(article_status(a, id), "draft");
}

TEST(ActionTools, DeployUnknownArticleIsAnErrorWithoutPost) {
    Actions a;
    ToolReply r = a.h->call("deploy_article", {{"client_id", kDental}, {"article_id", "nope-1"}});
    EXPECT_TRUE(r.is_error());
    EXPECT_EQ(r.reason(), "not_found") << r.response.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 0u);
}

// list_articles lists geo articles beside blog posts; deploying one says why it cannot be,
// rather than calling an id the model just read unknown.
TEST(ActionTools, DeployingAGeoArticleSaysOnlyBlogPostsAreDeployed) {
    Actions a;
    ToolReply list = a.h->call("list_articles", {{"client_id", kDental}, {"limit", 1000}});
    std::string geo;
    for (const auto& row : list.structured()["rows"])
        if (row.value("resource", "") == "geo_articles") geo = row["id"];
    ASSERT_FALSE(geo.empty()) << list.response.dump().substr(0, 400);
    ToolReply r = a.h->call("deploy_article", {{"client_id", kDental}, {"article_id", geo}});
    EXPECT_EQ(r.reason(), "not_found") << r.response.dump();
    const std::string message = r.tool_error().value("message", "");
    EXPECT_NE(message.find("publishes blog posts"), std::string::npos) << message;
    EXPECT_NE(message.find("geo articles"), std::string::npos) << message;
    EXPECT_EQ(a.posts("deploy_blog"), 0u);
}

TEST(ActionTools, DeployModernElicitationAcceptDeploysOnce) {
    Actions a;
    const std::string id = draft_article(a);
    const json args = {{"client_id", kDental}, {"article_id", id}};
    json first = modern_call(a, "deploy_article", args);
    ASSERT_TRUE(first.contains("result")) << first.dump();
    EXPECT_EQ(first["result"]["resultType"], "input_required") << first.dump();
    const json ask = first["result"]["inputRequests"]["confirm"];
    EXPECT_EQ(ask["method"], "elicitation/create");
    EXPECT_NE(ask["params"].value("message", "").find(id), std::string::npos) << ask.dump();
    EXPECT_EQ(ask["params"]["requestedSchema"]["required"], json::array({"confirm"}));
    EXPECT_EQ(a.posts("deploy_blog"), 0u);

    const json accept = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    json done = modern_call(a, "deploy_article", args, accept, first["result"]["requestState"]);
    ASSERT_TRUE(done.contains("result")) << done.dump();
    EXPECT_EQ(done["result"]["resultType"], "complete") << done.dump();
    EXPECT_FALSE(done["result"].value("isError", false)) << done.dump();
    EXPECT_EQ(done["result"]["structuredContent"]["status"], "published");
    EXPECT_EQ(a.posts("deploy_blog"), 1u);
    EXPECT_EQ(article_status(a, id), "published");
}

TEST(ActionTools, DeployModernElicitationDeclineDeploysNothing) {
    Actions a;
    const std::string id = draft_article(a);
    const json args = {{"client_id", kDental}, {"article_id", id}};
    json first = modern_call(a, "deploy_article", args);
    ASSERT_EQ(first["result"]["resultType"], "input_required") << first.dump();
    const json decline = {{"confirm", {{"action", "decline"}}}};
    json done = modern_call(a, "deploy_article", args, decline, first["result"]["requestState"]);
    const json error = tool_error_of(done);
    ASSERT_TRUE(error.is_object()) << done.dump();
    EXPECT_EQ(error["reason"], "declined");
    EXPECT_NE(error.value("message", "").find("declined"), std::string::npos);

    // Accepting with confirm false is no confirmation either.
    json again = modern_call(a, "deploy_article", args);
    const json unchecked = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", false}}}}}};
    json done2 = modern_call(a, "deploy_article", args, unchecked, again["result"]["requestState"]);
    EXPECT_EQ(tool_error_of(done2).value("reason", ""), "declined") << done2.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 0u);
    EXPECT_EQ(article_status(a, id), "draft");
}

TEST(ActionTools, SendProspectEmailAfterConfirmationSendsOnce) {
    Actions a;
    json drafted = a.ok("generate_outreach_email",
                        {{"client_id", kLaw}, {"prospect", "https://legal-resources.example/guides"}});
    const std::string email_id = drafted.value("email_id", "");
    ASSERT_FALSE(email_id.empty());
    const json args = {{"client_id", kLaw}, {"email_id", email_id}};
    const std::size_t sent_before =
        rows_with(a.h->gw->rows("backlink_outreach", kLaw), "status", "sent");

    json preview = a.ok("send_prospect_email", args);
    ASSERT_TRUE(preview.is_object());
    EXPECT_EQ(preview["status"], "confirmation_required");
    EXPECT_EQ(preview["preview"]["to"], "editor@legal-resources.example");
    EXPECT_NE(preview.value("message", "").find("editor@legal-resources.example"),
              std::string::npos);
    EXPECT_EQ(a.posts("send_prospect_email"), 0u);

    json confirmed_args = args;
    confirmed_args["confirmation_id"] = preview["confirmation_id"];
    json sent = a.ok("send_prospect_email", confirmed_args);
    ASSERT_TRUE(sent.is_object());
    EXPECT_EQ(sent["status"], "sent");
    EXPECT_EQ(a.posts("send_prospect_email"), 1u);
    EXPECT_EQ(a.rt->store().draft(email_id, "local")->status, "sent");
    EXPECT_EQ(rows_with(a.h->gw->rows("backlink_outreach", kLaw), "status", "sent"), sent_before + 1);

    ToolReply again = a.h->call("send_prospect_email", args);
    EXPECT_EQ(again.reason(), "already_sent") << again.response.dump();
    EXPECT_EQ(a.posts("send_prospect_email"), 1u);
}

TEST(ActionTools, SendUnknownEmailIsAnErrorWithoutPost) {
    Actions a;
    ToolReply r = a.h->call("send_prospect_email", {{"client_id", kLaw}, {"email_id", "em_nope"}});
    EXPECT_TRUE(r.is_error());
    EXPECT_EQ(r.reason(), "not_found") << r.response.dump();
    EXPECT_NE(r.tool_error().value("message", "").find("em_nope"), std::string::npos);
    EXPECT_EQ(a.posts("send_prospect_email"), 0u);
}

// Every way around a confirmation, for both confirmed tools: each attempt is refused with
// reason `confirmation` (or `declined`) and sends nothing; the genuine confirmation still works
// afterwards, exactly once.
TEST(ActionTools, NoConfirmationBypassOnDeployOrSend) {
    struct Case {
        std::string tool, action, id_field;
        std::function<std::string(Actions&)> make;  // a fresh draft: article or email id
        std::string client;
    };
    const std::vector<Case> cases = {
        {"deploy_article", "deploy_blog", "article_id", [](Actions& a) { return draft_article(a); },
         kDental},
        {"send_prospect_email", "send_prospect_email", "email_id",
         [](Actions& a) {
             json d = a.ok("generate_outreach_email", {{"client_id", kLaw},
                                                       {"prospect", "https://legal-resources.example/guides"}});
             return d.is_object() ? d.value("email_id", "") : "";
         },
         kLaw},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.tool);
        Actions a;
        const std::string id = c.make(a);
        const std::string other = c.make(a);
        ASSERT_FALSE(id.empty());
        const json args = {{"client_id", c.client}, {c.id_field, id}};
        auto with = [&](json base, const json& cid) {
            base["confirmation_id"] = cid;
            return base;
        };
        auto refused = [&](const ToolReply& r, const std::string& reason, const char* what) {
            EXPECT_TRUE(r.is_error()) << what << ": " << r.response.dump();
            EXPECT_EQ(r.reason(), reason) << what << ": " << r.response.dump();
            EXPECT_EQ(a.posts(c.action), 0u) << what;
        };
        const std::string cid = a.ok(c.tool, args).value("confirmation_id", "");
        ASSERT_FALSE(cid.empty());

        // Another draft, another caller, a forged id, the other tool's id.
        refused(a.h->call(c.tool, with({{"client_id", c.client}, {c.id_field, other}}, cid)),
                "confirmation", "other draft");
        const std::string cid2 = a.ok(c.tool, args).value("confirmation_id", "");
        // Another caller's draft is unknown to it (issue 30): refused before the confirmation.
        refused(a.h->call(c.tool, with(args, cid2), "someone-else"),
                c.tool == "send_prospect_email" ? "not_found" : "confirmation", "other caller");
        refused(a.h->call(c.tool, with(args, "cf_" + std::string(32, '0'))), "confirmation",
                "forged");
        const Case& o = &c == &cases[0] ? cases[1] : cases[0];
        const json other_args = {{"client_id", o.client}, {o.id_field, o.make(a)}};
        const json foreign_preview = a.ok(o.tool, other_args);
        ASSERT_TRUE(foreign_preview.is_object());
        const std::string foreign = foreign_preview.value("confirmation_id", "");
        ASSERT_FALSE(foreign.empty());
        refused(a.h->call(c.tool, with(args, foreign)), "confirmation", "other tool's id");

        // Modern elicitation: cancel confirms nothing.
        json ask = modern_call(a, c.tool, args);
        ASSERT_EQ(ask["result"]["resultType"], "input_required") << ask.dump();
        json cancelled = modern_call(a, c.tool, args, {{"confirm", {{"action", "cancel"}}}},
                                     ask["result"]["requestState"]);
        EXPECT_EQ(tool_error_of(cancelled).value("reason", ""), "cancelled") << cancelled.dump();
        EXPECT_EQ(a.posts(c.action), 0u) << "cancel";

        // The genuine one still works, once; the accepted requestState does not replay.
        json accept = modern_call(a, c.tool, args);
        const json yes = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
        json done = modern_call(a, c.tool, args, yes, accept["result"]["requestState"]);
        EXPECT_FALSE(done.value("result", json::object()).value("isError", true)) << done.dump();
        EXPECT_EQ(a.posts(c.action), 1u);
        json replayed = modern_call(a, c.tool, args, yes, accept["result"]["requestState"]);
        const json replay_result = replayed.value("result", json::object());
        EXPECT_TRUE(replayed.contains("error") || replay_result.value("isError", false) ||
                    replay_result.value("resultType", "") == "input_required")
            << replayed.dump();
        EXPECT_EQ(a.posts(c.action), 1u) << "nothing sent twice";
    }
}

// --- the job API under MCP Tasks: find, cancel, change listener ----------------------------------

namespace {

// Waits until `pred(job)` holds for the stored job (or 5 s pass); returns the last one read.
template <typename Pred>
std::optional<agency::state::Job> await_job(agency::tools::AuditJobs& jobs, const std::string& id,
                                            Pred pred) {
    std::optional<agency::state::Job> job;
    (void)agency::testing::eventually(
        [&] {
            job = jobs.find(id);
            return job && pred(*job);
        },
        std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
    return job;
}

// Records every change the listener reports, as "status" or "status+result".
struct ChangeLog {
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> seen;  // (job id, status[+result])
    void attach(agency::tools::AuditJobs& jobs) {
        jobs.on_change([this](const agency::state::Job& job) {
            std::lock_guard lock(mutex);
            seen.emplace_back(job.id, job.status + (job.result.is_object() ? "+result" : ""));
        });
    }
    std::vector<std::string> of(const std::string& id) {
        std::lock_guard lock(mutex);
        std::vector<std::string> out;
        for (const auto& [job, what] : seen)
            if (job == id) out.push_back(what);
        return out;
    }
    // What was reported of `id`, once anything was (up to 5 s): a change is reported after the
    // store holds it, so a status read from the store may come first.
    std::vector<std::string> once_reported(const std::string& id) {
        (void)agency::testing::eventually([&] { return !of(id).empty(); },
                                          std::chrono::milliseconds(5000),
                                          std::chrono::milliseconds(10));
        return of(id);
    }
};

}  // namespace

TEST(AuditJobs, CancelledQueuedJobIsNeverPosted) {
    Actions a;
    auto store = std::make_shared<agency::state::SqliteStore>(":memory:");
    agency::tools::AuditJobs jobs(store, 1, {.instance_id = "i_test"});
    ChangeLog log;
    log.attach(jobs);
    // Not started yet: the job stays queued until the workers run.
    const auto job = jobs.submit(kDental, "alice", "https://www.brightsmile.example/cancel-me");
    EXPECT_EQ(jobs.find(job.id)->status, "queued");
    EXPECT_TRUE(jobs.cancel(job.id));
    EXPECT_FALSE(jobs.cancel(job.id)) << "already cancelled";
    EXPECT_FALSE(jobs.cancel("aud_unknown"));
    EXPECT_FALSE(jobs.find("aud_unknown"));

    const auto other = jobs.submit(kDental, "alice", "https://www.brightsmile.example/other");
    jobs.start(a.h->box);
    auto finished = await_job(jobs, other.id, [](const auto& j) { return j.status == "succeeded"; });
    jobs.stop();
    ASSERT_TRUE(finished);
    EXPECT_EQ(finished->status, "succeeded");
    EXPECT_EQ(jobs.find(job.id)->status, "cancelled");
    EXPECT_EQ(a.posts("seo_audit"), 1u) << "only the job that was not cancelled was sent";
    EXPECT_FALSE(jobs.cancel(other.id)) << "a finished job cannot be cancelled";
    EXPECT_EQ(log.of(job.id), (std::vector<std::string>{"cancelled"}));
    EXPECT_EQ(log.of(other.id), (std::vector<std::string>{"running", "succeeded+result"}));
}

TEST(AuditJobs, CancelledRunningJobKeepsItsLateResult) {
    Actions a;
    a.h->gw->inject({.target = "seo_audit", .mode = FaultMode::slow, .delay_ms = 700});
    auto store = std::make_shared<agency::state::SqliteStore>(":memory:");
    agency::tools::AuditJobs jobs(store, 1, {.instance_id = "i_test"});
    ChangeLog log;
    log.attach(jobs);
    jobs.start(a.h->box);
    const auto job = jobs.submit(kDental, "alice", "https://www.brightsmile.example/slow");
    // Cancel once the listener has heard of the claim: a change is reported with the state the
    // store holds when the listener is called, so a cancel that beat that call would be seen in
    // its place (CI saw "cancelled" twice).
    ASSERT_EQ(log.once_reported(job.id), (std::vector<std::string>{"running"}));
    EXPECT_TRUE(jobs.cancel(job.id));
    auto late = await_job(jobs, job.id, [](const auto& j) { return j.result.is_object(); });
    jobs.stop();
    ASSERT_TRUE(late);
    EXPECT_EQ(late->status, "cancelled") << "the status stays cancelled";
    EXPECT_FALSE(late->result.value("report_id", "").empty()) << "the POST's result is kept";
    EXPECT_EQ(a.posts("seo_audit"), 1u);
    EXPECT_EQ(log.of(job.id),
              (std::vector<std::string>{"running", "cancelled", "cancelled+result"}));
}

TEST(ActionTools, AuditStatusReportsCancelled) {
    Actions a;
    // A job in the runtime's table that no worker picks up (it was never submitted).
    const auto job = a.rt->store().create_job("seo_audit", kDental, "local",
                                              {{"url", "https://www.brightsmile.example/x"}});
    ASSERT_TRUE(a.rt->audits().cancel(job.id));
    json status = a.ok("get_audit_status", {{"client_id", kDental}, {"audit_id", job.id}});
    ASSERT_TRUE(status.is_object());
    EXPECT_EQ(status["status"], "cancelled");
    EXPECT_EQ(status["ok"], false);
    EXPECT_EQ(a.posts("seo_audit"), 0u);
}

// --- restart in the middle of an audit ----------------------------------------------------------

namespace {

// The next process over the same state file and gateway: a fresh ActionRuntime whose tools
// replace the harness's server (its change log attached before the workers start).
struct NextProcess {
    std::shared_ptr<ActionRuntime> rt;
    ChangeLog log;

    NextProcess(ToolHarness& h, const std::string& path) {
        rt = std::make_shared<ActionRuntime>(
            agency::testing::on_sqlite(ActionSettings{.audit_workers = 1}, path));
        log.attach(rt->audits());
        agency::mcp::ServerOptions options;
        options.state_secret = "next-process";
        h.server = std::make_unique<agency::mcp::Server>(options);
        agency::tools::register_all(*h.server, h.box, rt);
    }
    ~NextProcess() { rt->audits().stop(); }
};

// get_audit_status through the tool, as `principal`, until the audit is finished.
json poll_status(ToolHarness& h, const std::string& audit_id, const std::string& principal) {
    json status;
    (void)agency::testing::eventually(
        [&] {
            ToolReply r = h.call("get_audit_status",
                                 {{"client_id", kDental}, {"audit_id", audit_id}}, principal);
            status = r.is_error() ? r.tool_error() : r.structured();
            const std::string s = status.value("status", "");
            return s == "succeeded" || s == "failed";
        },
        std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
    return status;
}

struct TempDb {
    fs::path dir = fs::temp_directory_path() / ("agency-restart-" + agency::crypto::random_hex(6));
    std::string path = (dir / "state.db").string();
    ~TempDb() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

}  // namespace

TEST(AuditRestart, RestartMidAuditReportsItOnceWithoutASecondPost) {
    TempDb db;
    ToolHarness h;
    const std::string url = "https://www.brightsmile.example/mid-restart";
    // The audit takes a while at the gateway: the first process dies with its POST out.
    h.gw->inject({.target = "seo_audit", .mode = FaultMode::slow, .delay_ms = 800});
    std::string audit_id;
    {
        auto store = std::make_shared<agency::state::SqliteStore>(db.path);
        agency::tools::AuditJobs first(store, 1, {.instance_id = "i_test"});
        first.start(h.box);
        audit_id = first.submit(kDental, "alice", url).id;
        auto running =
            await_job(first, audit_id, [](const auto& j) { return j.status == "running"; });
        ASSERT_EQ(running->status, "running");
        // "running" is set before the POST goes out: end the process once the gateway holds it.
        // (the POST itself: a read of the job's may be in flight first)
        (void)agency::testing::eventually([&] { return h.gw->posts_in_flight() != 0; },
                                          std::chrono::milliseconds(5000),
                                          std::chrono::milliseconds(10));
        ASSERT_EQ(h.gw->posts_in_flight(), 1u) << "the POST is at the gateway";
    }  // the process ends mid-flight: the job stays running in the file
    (void)agency::testing::eventually(
        [&] { return h.gw->count_requests("POST", "seo_audit") != 0; },
        std::chrono::milliseconds(3000), std::chrono::milliseconds(10));
    ASSERT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u) << "the first POST ran";
    ASSERT_EQ(agency::state::SqliteStore(db.path).job(audit_id)->status, "running");

    NextProcess next(h, db.path);
    const json status = poll_status(h, audit_id, "alice");
    ASSERT_EQ(status.value("status", ""), "succeeded") << status.dump();
    EXPECT_TRUE(status["score"].is_number());
    EXPECT_TRUE(status["issues_found"].is_number());
    const json reports = h.gw->rows("seo_reports", kDental);
    ASSERT_EQ(rows_with(reports, "url", url), 1u);
    for (const auto& row : reports)
        if (row.value("url", "") == url) {
            EXPECT_EQ(status["report_id"], row["id"]);
            EXPECT_EQ(status["score"], row["score"]);
            EXPECT_EQ(status["issues_found"], row["issues_found"]);
        }
    EXPECT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u) << "no duplicate POST";
    EXPECT_EQ(next.log.once_reported(audit_id), (std::vector<std::string>{"succeeded+result"}))
        << "reported succeeded exactly once";
}

TEST(AuditRestart, RunningAuditWhosePostNeverArrivedIsSentOnce) {
    TempDb db;
    ToolHarness h;
    const std::string fresh = "https://www.brightsmile.example/never-arrived";
    // A URL whose only report is older than the job: that report is not this job's result.
    std::string old_url;
    for (const auto& row : h.gw->rows("seo_reports", kDental)) old_url = row.value("url", "");
    ASSERT_FALSE(old_url.empty());
    std::string fresh_id;
    std::string old_id;
    {
        agency::state::SqliteStore previous(db.path);
        fresh_id = previous.create_job("seo_audit", kDental, "alice", {{"url", fresh}}).id;
        old_id = previous.create_job("seo_audit", kDental, "alice", {{"url", old_url}}).id;
        ASSERT_TRUE(previous.claim_job(fresh_id, "i_previous", std::chrono::seconds(30), false));
        ASSERT_TRUE(previous.claim_job(old_id, "i_previous", std::chrono::seconds(30), false));
    }
    NextProcess next(h, db.path);
    EXPECT_EQ(poll_status(h, fresh_id, "alice").value("status", ""), "succeeded");
    EXPECT_EQ(poll_status(h, old_id, "alice").value("status", ""), "succeeded");
    std::size_t fresh_posts = 0;
    std::size_t old_posts = 0;
    for (const auto& r : h.gw->request_log()) {
        if (r.method != "POST" || r.target != "seo_audit") continue;
        const std::string sent = json::parse(r.detail).value("url", "");
        fresh_posts += sent == fresh;
        old_posts += sent == old_url;
    }
    EXPECT_EQ(fresh_posts, 1u) << "no report found: sent again, exactly once";
    EXPECT_EQ(old_posts, 1u) << "a report from before the job does not count as its result";
    EXPECT_EQ(rows_with(h.gw->rows("seo_reports", kDental), "url", fresh), 1u);
    EXPECT_EQ(next.log.once_reported(fresh_id), (std::vector<std::string>{"succeeded+result"}));
}

// A job belongs to its submitter: another caller cannot tell it from an unknown audit_id.
TEST(ActionTools, AuditStatusIsOnlyForTheCallerWhoStartedIt) {
    Actions a;
    json queued = a.ok("run_seo_audit",
                       {{"client_id", kDental}, {"url", "https://www.brightsmile.example/mine"}},
                       "alice");
    ASSERT_TRUE(queued.is_object());
    const std::string id = queued["audit_id"];
    ASSERT_EQ(a.h->call("get_audit_status", {{"client_id", kDental}, {"audit_id", id}}, "alice")
                  .structured()
                  .value("audit_id", ""),
              id)
        << "its owner sees it";

    ToolReply stranger =
        a.h->call("get_audit_status", {{"client_id", kDental}, {"audit_id", id}}, "bob");
    const std::string unknown_id = "aud_0000000000000000";
    ToolReply unknown =
        a.h->call("get_audit_status", {{"client_id", kDental}, {"audit_id", unknown_id}}, "bob");
    ASSERT_TRUE(stranger.is_error()) << stranger.response.dump();
    ASSERT_TRUE(unknown.is_error());
    EXPECT_EQ(stranger.reason(), "not_found");
    std::string message = stranger.tool_error().value("message", "");
    ASSERT_NE(message.find(id), std::string::npos);
    message.replace(message.find(id), id.size(), unknown_id);
    EXPECT_EQ(message, unknown.tool_error().value("message", ""))
        << "the same answer as for an audit that does not exist";
    EXPECT_EQ(stranger.response.dump().find("brightsmile"), std::string::npos)
        << "nothing of the job leaks";

    // A gateway report id is not a job: list_audits and get_audit_issues read reports.
    const std::string report_id = a.h->gw->rows("seo_reports", kDental)[0].value("id", "");
    ToolReply report =
        a.h->call("get_audit_status", {{"client_id", kDental}, {"audit_id", report_id}}, "alice");
    EXPECT_EQ(report.reason(), "not_found");
    EXPECT_NE(report.tool_error().value("message", "").find("get_audit_issues"),
              std::string::npos);
}

// --- generate_article where the gateway publishes at once (auto-deploy) ---------------------------

TEST(ActionTools, ArticleOnAutoDeployClientWaitsForConfirmation) {
    Actions a;
    const std::size_t blogs_before = a.rows("blogs", kPlumbing);
    const json args = {{"client_id", kPlumbing}, {"keyword", "emergency plumber"}};
    json preview = a.ok("generate_article", args);
    ASSERT_TRUE(preview.is_object());
    EXPECT_EQ(preview["status"], "confirmation_required");
    EXPECT_EQ(preview["preview"]["auto_deploy"], true);
    EXPECT_NE(preview.value("message", "").find("emergency plumber"), std::string::npos);
    EXPECT_NE(preview.value("message", "").find("auto-deploy"), std::string::npos);
    EXPECT_EQ(a.posts("generate_blog"), 0u) << "nothing generated (or published) before a yes";
    EXPECT_EQ(a.rows("blogs", kPlumbing), blogs_before);

    ToolReply no_id = a.h->call("generate_article", args);  // asking again only previews again
    EXPECT_EQ(no_id.structured().value("status", ""), "confirmation_required");
    ToolReply forged = a.h->call("generate_article",
                                 {{"client_id", kPlumbing},
                                  {"keyword", "emergency plumber"},
                                  {"confirmation_id", "cf_forged0000"}});
    EXPECT_EQ(forged.reason(), "confirmation") << forged.response.dump();
    ToolReply other_args = a.h->call("generate_article",
                                     {{"client_id", kPlumbing},
                                      {"keyword", "drain cleaning"},
                                      {"confirmation_id", preview["confirmation_id"]}});
    EXPECT_EQ(other_args.reason(), "confirmation") << "bound to the exact arguments";
    EXPECT_EQ(a.posts("generate_blog"), 0u);

    json confirmed = args;
    confirmed["confirmation_id"] = preview["confirmation_id"];
    json done = a.ok("generate_article", confirmed);
    ASSERT_TRUE(done.is_object());
    EXPECT_EQ(done["status"], "published");
    EXPECT_FALSE(done.value("article_id", "").empty());
    EXPECT_EQ(a.posts("generate_blog"), 1u);
    EXPECT_EQ(a.rows("blogs", kPlumbing), blogs_before + 1);

    ToolReply replay = a.h->call("generate_article", confirmed);
    EXPECT_EQ(replay.reason(), "confirmation") << "single use";
    EXPECT_EQ(a.posts("generate_blog"), 1u);
}

TEST(ActionTools, ArticleOnAutoDeployClientElicitationDeclineAndAccept) {
    Actions a;
    const json args = {{"client_id", kPlumbing}, {"keyword", "water heater repair"}};
    json first = modern_call(a, "generate_article", args);
    ASSERT_EQ(first["result"]["resultType"], "input_required") << first.dump();
    EXPECT_NE(first["result"]["inputRequests"]["confirm"]["params"].value("message", "").find(
                  "water heater repair"),
              std::string::npos);
    json declined = modern_call(a, "generate_article", args, {{"confirm", {{"action", "decline"}}}},
                                first["result"]["requestState"]);
    EXPECT_EQ(tool_error_of(declined).value("reason", ""), "declined") << declined.dump();
    EXPECT_EQ(a.posts("generate_blog"), 0u) << "a decline generates nothing";

    json again = modern_call(a, "generate_article", args);
    ASSERT_EQ(again["result"]["resultType"], "input_required");
    const json accept = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    json done = modern_call(a, "generate_article", args, accept, again["result"]["requestState"]);
    ASSERT_EQ(done["result"]["resultType"], "complete") << done.dump();
    EXPECT_EQ(done["result"]["structuredContent"]["status"], "published") << done.dump();
    EXPECT_EQ(a.posts("generate_blog"), 1u);
}

TEST(ActionTools, ArticleForUnknownClientIsNotFoundAndSendsNothing) {
    Actions a;
    ToolReply r = a.h->call("generate_article",
                            {{"client_id", "no-such-client"}, {"keyword", "anything"}});
    EXPECT_EQ(r.reason(), "not_found") << r.response.dump();
    EXPECT_NE(r.tool_error().value("message", "").find("unknown client_id no-such-client"),
              std::string::npos)
        << r.response.dump();
    EXPECT_EQ(a.posts("generate_blog"), 0u);
}

TEST(ActionTools, ArticleOnOtherClientsNeedsNoConfirmation) {
    Actions a;
    // Even a client able to answer an elicitation is not asked: nothing is published.
    json done = modern_call(a, "generate_article", {{"client_id", kDental}, {"keyword", "crowns"}});
    ASSERT_EQ(done["result"]["resultType"], "complete") << done.dump();
    EXPECT_EQ(done["result"]["structuredContent"]["status"], "drafted");
    EXPECT_EQ(a.posts("generate_blog"), 1u);

    // The flag is read live: switching auto-deploy on brings the confirmation in.
    a.h->gw->set_auto_deploy(kDental, true);
    json asked = a.ok("generate_article", {{"client_id", kDental}, {"keyword", "bridges"}});
    EXPECT_EQ(asked.value("status", ""), "confirmation_required");
    EXPECT_EQ(a.posts("generate_blog"), 1u);
}
