// Every action tool that POSTs, under each ambiguous gateway fault: a 500 after the record was
// created, a timeout (the gateway slower than the client waits) and a dropped connection; with
// the sample's full rows and with bare ones (Options::bare_records: no deployed_at or sent_at,
// no record of an index_url submission, as a real deployment may be). Each call must leave
// exactly one record at the gateway, and answer either with that record (recovered by checking
// what the action changes, gateway/actions.hpp) or with a clear tool error; never a second POST.
// One sample gateway and tool server for the suite.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gateway/actions.hpp"
#include "server/mcp_server.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

namespace {

using agency::gateway::ResendRule;
using namespace agency::testing::tool_names;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;
constexpr auto kActionTimeout = std::chrono::milliseconds(250);
constexpr int kSlowMs = 700;  // well past kActionTimeout

enum class Setup { none, drafted_article, drafted_email };

// One tool: its arguments and the record it creates, both with "{tag}" standing for a value
// unique to the test case.
struct ToolCase {
    std::string tool;
    std::string action;    // the gateway action it POSTs
    json args;
    std::string resource;  // where its record lands
    std::string client;
    json record;           // fields that identify the record this call creates
    std::string id_field;  // the result member holding the record's id ("" when not the row id)
    Setup setup = Setup::none;
};

const std::vector<ToolCase>& tool_cases() {
    static const std::vector<ToolCase> cases = {
        {"run_seo_audit", "seo_audit", {{"client_id", kDental}, {"url", "https://{tag}.example/"}},
         "seo_reports", kDental, {{"url", "https://{tag}.example/"}}, "report_id"},
        {"refresh_backlinks", "fetch_backlinks", {{"client_id", kDental}}, "", kDental, {}, ""},
        {"generate_keyword_ideas", "generate_keywords",
         {{"client_id", kDental}, {"seed", "seed {tag}"}}, "keywords", kDental,
         {{"keyword", "seed {tag} near me"}}, ""},
        {"generate_topical_map", "generate_topical_map",
         {{"client_id", kDental}, {"topic", "map {tag}"}}, "topical_maps", kDental,
         {{"topic", "map {tag}"}}, "map_id"},
        {"generate_article", "generate_blog", {{"client_id", kDental}, {"keyword", "post {tag}"}},
         "blogs", kDental, {{"keyword", "post {tag}"}}, "article_id"},
        {"optimize_page", "optimize_page",
         {{"client_id", kDental}, {"url", "https://{tag}.example/opt"}}, "seo_tasks", kDental,
         {{"url", "https://{tag}.example/opt"}, {"task_type", "optimize_page"}}, "task_id"},
        {"index_url", "index_url", {{"client_id", kDental}, {"url", "https://{tag}.example/ix"}},
         "seo_tasks", kDental, {{"url", "https://{tag}.example/ix"}, {"task_type", "index_url"}},
         "task_id"},
        {"generate_press_release", "generate_press_release",
         {{"client_id", kLaw}, {"topic", "news {tag}"}}, "press_releases", kLaw,
         {{"headline", "news {tag}"}}, "press_release_id"},
        {"generate_gbp_post", "generate_gbp_post", {{"client_id", kLaw}, {"topic", "gbp {tag}"}},
         "gbp_posts", kLaw, {{"topic", "gbp {tag}"}}, "post_id"},
        {"run_local_grid_scan", "run_grid_search",
         {{"client_id", kLaw}, {"keyword", "lawyer {tag}"}}, "grid_searches", kLaw,
         {{"keyword", "lawyer {tag}"}}, "scan_id"},
        {"analyze_llm_visibility", "run_llm_visibility",
         {{"client_id", kLaw}, {"prompt", "who is best at {tag}?"}}, "llm_reports", kLaw,
         {{"prompt", "who is best at {tag}?"}}, "report_id"},
        {"generate_outreach_email", "generate_outreach_email",
         {{"client_id", kLaw}, {"prospect", "https://{tag}.example/links"}}, "backlink_outreach",
         kLaw, {{"prospect_url", "https://{tag}.example/links"}}, ""},
        {"deploy_article", "deploy_blog", {{"client_id", kDental}}, "blogs", kDental,
         {{"keyword", "deploy {tag}"}, {"status", "published"}}, "article_id",
         Setup::drafted_article},
        {"send_prospect_email", "send_prospect_email", {{"client_id", kLaw}}, "backlink_outreach",
         kLaw, {{"prospect_url", "https://{tag}.example/send"}, {"status", "sent"}}, "",
         Setup::drafted_email},
    };
    return cases;
}

struct FaultCase {
    const char* name;
    FaultMode mode;
};

const std::vector<FaultCase> kFaults = {
    {"fail_after", FaultMode::fail_after},
    {"timeout", FaultMode::slow},
    {"drop", FaultMode::drop},
};

// Replaces "{tag}" in every string of `value`.
json with_tag(const json& value, const std::string& tag) {
    if (value.is_string()) {
        std::string s = value.get<std::string>();
        for (auto at = s.find("{tag}"); at != std::string::npos; at = s.find("{tag}"))
            s.replace(at, 5, tag);
        return s;
    }
    if (!value.is_object()) return value;
    json out = json::object();
    for (const auto& [k, v] : value.items()) out[k] = with_tag(v, tag);
    return out;
}

class ActionFaults
    : public ::testing::TestWithParam<std::tuple<std::size_t, std::size_t, bool>> {
protected:
    static inline std::shared_ptr<agency::tools::ActionRuntime> rt;
    static inline std::unique_ptr<ToolHarness> h;

    static void SetUpTestSuite() {
        agency::tools::ActionSettings settings;
        settings.credits = {.max_in_flight_per_client = 10, .max_per_minute_per_client = 1000};
        rt = std::make_shared<agency::tools::ActionRuntime>(agency::testing::with_store(settings));
        h = std::make_unique<ToolHarness>(
            agency::sample::Options{}, agency::tools::Settings{},
            [](agency::mcp::Server& server, const std::shared_ptr<agency::tools::Toolbox>& box) {
                agency::tools::register_all(server, box, rt);
            },
            [](agency::gateway::Config& config) {
                config.action_timeout = kActionTimeout;
                config.read_timeout = std::chrono::seconds(5);
            });
    }
    static void TearDownTestSuite() {
        rt->audits().stop();  // workers stop before the gateway they talk to
        h.reset();
        rt.reset();
    }
    void SetUp() override {
        h->gw->clear_faults();
        h->gw->set_bare_records(std::get<2>(GetParam()));
    }
    void TearDown() override { h->gw->set_bare_records(false); }

    json ok(const std::string& tool, const json& args) {
        ToolReply r = h->call(tool, args);
        EXPECT_FALSE(r.is_error()) << tool << ": " << r.response.dump().substr(0, 600);
        return r.structured();
    }

    static std::size_t slow_requests() {
        std::size_t n = 0;
        for (const auto& r : h->gw->request_log()) n += r.fault == "slow";
        return n;
    }

    std::vector<json> records(const ToolCase& c, const json& record) {
        std::vector<json> out;
        for (const auto& row : h->gw->rows(c.resource, c.client)) {
            bool match = true;
            for (const auto& [k, v] : record.items()) match = match && row.value(k, json()) == v;
            if (match) out.push_back(row);
        }
        return out;
    }
};

TEST_P(ActionFaults, OneRecordPerCall) {
    const ToolCase& c = tool_cases()[std::get<0>(GetParam())];
    const FaultCase& fault = kFaults[std::get<1>(GetParam())];
    const bool bare = std::get<2>(GetParam());
    std::string tag = std::string(fault.name) + "-" + c.tool + (bare ? "-bare" : "");
    for (auto& ch : tag) ch = ch == '_' ? '-' : ch;
    json args = with_tag(c.args, tag);
    const json record = with_tag(c.record, tag);
    const auto* spec = agency::gateway::find_action_spec(c.action);
    ASSERT_NE(spec, nullptr);

    // What a confirmed tool acts on, then its preview: the fault hits the confirmed call.
    if (c.setup == Setup::drafted_article) {
        args["article_id"] =
            ok("generate_article", {{"client_id", c.client}, {"keyword", "deploy " + tag}})
                .value("article_id", "");
    } else if (c.setup == Setup::drafted_email) {
        args["email_id"] = ok("generate_outreach_email",
                              {{"client_id", c.client},
                               {"prospect", "https://" + tag + ".example/send"}})
                               .value("email_id", "");
    }
    if (c.setup != Setup::none)
        args["confirmation_id"] = ok(c.tool, args).value("confirmation_id", "");

    const std::size_t backlinks_before = h->gw->rows("backlinks", c.client).size();
    const std::size_t posts_before = h->gw->count_requests("POST", c.action);
    const std::size_t slow_before = slow_requests();
    h->gw->inject({.target = c.action, .mode = fault.mode, .delay_ms = kSlowMs});
    ToolReply reply = h->call(c.tool, args);
    json answer = reply.is_error() ? reply.tool_error() : reply.structured();
    if (c.tool == "run_seo_audit" && !reply.is_error()) {
        // The job runs in the background: its status is the answer.
        (void)agency::testing::eventually(
            [&] {
                answer = ok("get_audit_status",
                            {{"client_id", c.client}, {"audit_id", answer["audit_id"]}});
                return answer["status"] == "succeeded" || answer["status"] == "failed";
            },
            std::chrono::milliseconds(3000), std::chrono::milliseconds(10));
        EXPECT_TRUE(answer["status"] == "succeeded" || answer["status"] == "failed")
            << "the audit job did not finish: " << answer.dump();
    }
    // A slow request finishes its work at the gateway after the client gave up on it.
    (void)agency::testing::eventually(
        [&] { return fault.mode != FaultMode::slow || slow_requests() != slow_before; },
        std::chrono::milliseconds(3000), std::chrono::milliseconds(10));
    const std::size_t posts = h->gw->count_requests("POST", c.action) - posts_before;

    // Exactly one record, and no second POST unless the spec says repeats create nothing.
    // A bare index_url records nothing readable at all.
    const bool leaves_record = !(bare && spec->resend == ResendRule::confirm_only);
    if (c.resource.empty()) {
        EXPECT_EQ(h->gw->rows("backlinks", c.client).size(), backlinks_before);
    } else if (!leaves_record) {
        EXPECT_EQ(records(c, record).size(), 0u) << "records matching " << record.dump();
    } else {
        EXPECT_EQ(records(c, record).size(), 1u) << "records matching " << record.dump();
    }
    if (spec->resend == ResendRule::retry_safe)
        EXPECT_GE(posts, 1u);
    else
        EXPECT_EQ(posts, 1u) << "never sent twice";

    // The answer: the record, or a clear error saying the outcome is unknown.
    // A record found proves it ran; its absence proves nothing for a confirm_only action.
    const bool checkable = spec->resend == ResendRule::verify ||
                           spec->resend == ResendRule::verify_state ||
                           (spec->resend == ResendRule::confirm_only && !bare);
    const bool recoverable = spec->resend == ResendRule::retry_safe ||
                             (checkable && fault.mode != FaultMode::slow);
    if (recoverable) {
        ASSERT_FALSE(reply.is_error()) << reply.response.dump().substr(0, 600);
        EXPECT_EQ(answer.value("ok", false), true) << answer.dump();
        if (!c.id_field.empty() && !c.resource.empty() && records(c, record).size() == 1) {
            EXPECT_EQ(answer.value(c.id_field, ""), records(c, record)[0].value("id", ""))
                << answer.dump();
        }
        if (spec->resend != ResendRule::retry_safe) {
            // The answer says what happened: the failure, and what showed that it ran.
            EXPECT_NE(answer.value("note", "").find("ran once and was not sent again"),
                      std::string::npos)
                << answer.dump();
        }
    } else {
        ASSERT_TRUE(reply.is_error()) << reply.response.dump().substr(0, 600);
        EXPECT_EQ(answer.value("reason", ""), "outcome_unknown") << answer.dump();
        EXPECT_NE(answer.value("message", "").find("was not re-sent"), std::string::npos)
            << answer.dump();
        EXPECT_NE(answer.value("message", "").find("Check before running it again: "),
                  std::string::npos)
            << answer.dump();
    }
}

// The cases above are data a test cannot derive (arguments, where the record lands); this keeps
// them complete: every registered tool that POSTs a gateway action has one, so a new action
// tool is told here that it needs its row.
TEST(ActionFaultsCases, EveryToolThatPostsAnActionHasACase) {
    agency::mcp::Server server;
    ToolHarness h;
    const auto catalog = agency::tools::register_all(
        server, h.box,
        std::make_shared<agency::tools::ActionRuntime>(agency::testing::with_store({})));
    std::size_t posting = 0;
    for (const auto& doc : catalog) {
        if (doc.gateway_action.empty()) continue;
        ++posting;
        const bool covered =
            std::any_of(tool_cases().begin(), tool_cases().end(),
                        [&](const ToolCase& c) { return c.tool == doc.name; });
        EXPECT_TRUE(covered) << doc.name << " POSTs " << doc.gateway_action
                             << " but has no row in tool_cases()";
    }
    EXPECT_GE(posting, 10u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryActionTool, ActionFaults,
    ::testing::Combine(::testing::Range<std::size_t>(0, tool_cases().size()),
                       ::testing::Range<std::size_t>(0, kFaults.size()), ::testing::Bool()),
    [](const ::testing::TestParamInfo<ActionFaults::ParamType>& param_info) {
        return tool_cases()[std::get<0>(param_info.param)].tool + "_" +
               kFaults[std::get<1>(param_info.param)].name +
               (std::get<2>(param_info.param) ? "_bare" : "");
    });

}  // namespace

namespace {

// A send whose outcome is unknown may have reached the recipient: the draft is not offered for
// sending again (a second email cannot be taken back).
TEST(ActionFaultsSend, UnknownOutcomeNeverSendsTheDraftAgain) {
    auto rt = std::make_shared<agency::tools::ActionRuntime>(
        agency::testing::with_store(agency::tools::ActionSettings{}));
    ToolHarness h(
        agency::sample::Options{}, agency::tools::Settings{},
        [rt](agency::mcp::Server& server, const std::shared_ptr<agency::tools::Toolbox>& box) {
            agency::tools::register_all(server, box, rt);
        },
        [](agency::gateway::Config& config) { config.action_timeout = kActionTimeout; });
    // The sample makes its rows at the first request: not inside the draft's short timeout
    // (under ASan that took longer than it).
    ASSERT_FALSE(h.call("list_audits", {{"client_id", kLaw}, {"limit", 1}}).is_error());
    const std::string email_id =
        h.call("generate_outreach_email",
               {{"client_id", kLaw}, {"prospect", "https://twice.example/links"}})
            .structured()
            .value("email_id", "");
    ASSERT_FALSE(email_id.empty());
    json args = {{"client_id", kLaw}, {"email_id", email_id}};
    args["confirmation_id"] = h.call("send_prospect_email", args).structured()["confirmation_id"];
    h.gw->inject({.target = "send_prospect_email", .mode = FaultMode::slow, .delay_ms = kSlowMs});
    ToolReply first = h.call("send_prospect_email", args);
    ASSERT_EQ(first.reason(), "outcome_unknown") << first.response.dump();
    EXPECT_NE(first.tool_error().value("message", "").find("cannot go out twice"),
              std::string::npos);

    args.erase("confirmation_id");
    ToolReply again = h.call("send_prospect_email", args);
    EXPECT_EQ(again.reason(), "already_sent") << again.response.dump();
    // The slow first send is answered and logged, and no other POST is at the gateway.
    EXPECT_TRUE(agency::testing::eventually([&] {
        return h.gw->count_requests("POST", "send_prospect_email") != 0 &&
               h.gw->posts_in_flight() == 0;
    }));
    EXPECT_EQ(h.gw->count_requests("POST", "send_prospect_email"), 1u);
    rt->audits().stop();
}

}  // namespace
