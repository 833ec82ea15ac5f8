// Issue 15, class 8: after an ambiguous failure the client checks what each action actually
// changes before it would ever send it again (gateway/actions.hpp). A deploy publishes an
// article (it creates no row); an index_url submission may be recorded nowhere; a gateway's rows
// may lack the fields the sample adds. The sample gateway's bare_records mode has exactly the
// rows the spec names, which is how the double deploy was reproduced: a 500 after the deploy ran,
// no new deployed_at to find, a second POST.
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/clock.hpp"
#include "gateway/actions.hpp"
#include "gateway/client.hpp"
#include "gateway/client_detail.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/support/gateway_names.hpp"
#include "tests/support/sample_clients.hpp"

namespace {

using namespace std::chrono_literals;
using namespace agency::testing::gateway_names;
using agency::gateway::find_action_spec;
using agency::gateway::detail::compare_state;
using agency::gateway::detail::Evidence;
using agency::gateway::detail::judge_rows;
using agency::base::parse_utc_time;
using agency::sample::FaultMode;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;

struct Gateway : agency::testing::LoopbackSampleGateway {
    explicit Gateway(bool bare)
        : LoopbackSampleGateway(agency::sample::Options{.bare_records = bare}) {}
    json blog(const std::string& id) const {
        for (const auto& row : gw->rows("blogs", kDental))
            if (row.value("id", "") == id) return row;
        return nullptr;
    }
    std::size_t posts(const std::string& action) const {
        return gw->count_requests("POST", action);
    }
};

std::string draft_article(Client& c, const std::string& keyword) {
    return c.act("generate_blog", kDental, {{"keyword", keyword}}).data.at("id").get<std::string>();
}

// --- the reproducer ---------------------------------------------------------------------------

TEST(ActionChecks, Deploy500AfterItRanIsSentOnceAndSaysPublished) {
    Gateway g(/*bare=*/true);
    Client c(g.config());
    const std::string id = draft_article(c, "deploy once");
    ASSERT_FALSE(g.blog(id).contains("deployed_at") && !g.blog(id)["deployed_at"].is_null());

    g.gw->inject({.target = "deploy_blog", .mode = FaultMode::fail_after});
    const auto r = c.act("deploy_blog", kDental, {{"post_id", id}});
    EXPECT_EQ(g.posts("deploy_blog"), 1u) << "the deploy ran; it must not be sent again";
    EXPECT_TRUE(r.recovered);
    EXPECT_EQ(r.attempts, 1);
    EXPECT_EQ(r.data.value("id", ""), id);
    EXPECT_EQ(r.data.value("status", ""), "published");
    // The answer says what happened, not only "published".
    EXPECT_NE(r.note.find("HTTP 500"), std::string::npos) << r.note;
    EXPECT_NE(r.note.find("status published"), std::string::npos) << r.note;
    EXPECT_NE(r.note.find("ran once and was not sent again"), std::string::npos) << r.note;
    EXPECT_EQ(g.blog(id).value("status", ""), "published");
}

TEST(ActionChecks, DeployDroppedAfterItRanIsSentOnce) {
    Gateway g(/*bare=*/true);
    Client c(g.config());
    const std::string id = draft_article(c, "deploy dropped");
    g.gw->inject({.target = "deploy_blog", .mode = FaultMode::drop});
    const auto r = c.act("deploy_blog", kDental, {{"post_id", id}});
    EXPECT_TRUE(r.recovered);
    EXPECT_EQ(g.posts("deploy_blog"), 1u);
}

// A 500 before anything ran, with the article still a draft and unchanged: that is conclusive,
// so the deploy is sent again, once, and publishes once.
TEST(ActionChecks, Deploy500BeforeItRanIsSentAgainOnce) {
    Gateway g(/*bare=*/true);
    Client c(g.config());
    const std::string id = draft_article(c, "deploy resend");
    g.gw->inject({.target = "deploy_blog", .mode = FaultMode::fail_before});
    const auto r = c.act("deploy_blog", kDental, {{"post_id", id}});
    EXPECT_FALSE(r.recovered);
    EXPECT_EQ(r.attempts, 2);
    EXPECT_EQ(g.posts("deploy_blog"), 2u);
    EXPECT_EQ(g.blog(id).value("status", ""), "published");
}

// Redeploying an article that was already published: its published state cannot change, so
// the check looks at what a deploy moves (updated_at here; deployed_at where the gateway has it).
TEST(ActionChecks, RedeployOfAPublishedArticleIsCheckedByWhatMoved) {
    Gateway g(/*bare=*/true);
    Client c(g.config());
    std::string id;
    for (const auto& row : g.gw->rows("blogs", kDental)) {
        if (row.value("status", "") == "published") id = row.value("id", "");
    }
    ASSERT_FALSE(id.empty()) << "the sample has published articles";
    g.gw->inject({.target = "deploy_blog", .mode = FaultMode::fail_after});
    const auto r = c.act("deploy_blog", kDental, {{"post_id", id}});
    EXPECT_TRUE(r.recovered);
    EXPECT_NE(r.note.find("updated_at moved"), std::string::npos) << r.note;
    EXPECT_EQ(g.posts("deploy_blog"), 1u);
}

// The bare deploy installs the blog widget, which nothing readable records: never re-sent.
TEST(ActionChecks, WidgetDeployAfterA500IsOutcomeUnknown) {
    Gateway g(/*bare=*/false);
    Client c(g.config());
    g.gw->inject({.target = "deploy_blog", .mode = FaultMode::fail_before});
    const auto e = expect_error([&] { c.act("deploy_blog", kDental, json::object()); });
    EXPECT_EQ(e.reason(), ErrorReason::outcome_unknown) << e.what();
    EXPECT_NE(std::string(e.what()).find("blog widget"), std::string::npos) << e.what();
    EXPECT_EQ(g.posts("deploy_blog"), 1u);
}

TEST(ActionChecks, IndexUrlWithNothingRecordedIsOutcomeUnknownAndSentOnce) {
    for (const auto mode : {FaultMode::fail_after, FaultMode::fail_before, FaultMode::drop}) {
        Gateway g(/*bare=*/true);
        Client c(g.config());
        const auto before = g.gw->rows("seo_tasks", kDental).size();
        g.gw->inject({.target = "index_url", .mode = mode});
        const auto e = expect_error([&] {
            c.act("index_url", kDental, {{"url", "https://brightsmiledental.example/new"}});
        });
        EXPECT_EQ(e.reason(), ErrorReason::outcome_unknown) << e.what();
        const std::string what = e.what();
        EXPECT_NE(what.find("not re-sent"), std::string::npos) << what;
        EXPECT_NE(what.find("absence proves nothing"), std::string::npos) << what;
        EXPECT_NE(what.find("URL inspection"), std::string::npos) << what;  // what to do
        EXPECT_EQ(e.data().value("attempts", 0), 1);
        EXPECT_TRUE(e.data().contains("check"));
        EXPECT_EQ(g.posts("index_url"), 1u);
        EXPECT_EQ(g.gw->rows("seo_tasks", kDental).size(), before);
    }
}

// Where the gateway does record the submission, finding it proves that it ran.
TEST(ActionChecks, IndexUrlFoundRecordedIsRecovered) {
    Gateway g(/*bare=*/false);
    Client c(g.config());
    g.gw->inject({.target = "index_url", .mode = FaultMode::fail_after});
    const auto r = c.act("index_url", kDental, {{"url", "https://brightsmiledental.example/ix"}});
    EXPECT_TRUE(r.recovered);
    EXPECT_EQ(r.data.value("task_type", ""), "index_url");
    EXPECT_EQ(g.posts("index_url"), 1u);
}

TEST(ActionChecks, SendOfADraftIsCheckedByItsStatus) {
    Gateway g(/*bare=*/true);
    Client c(g.config());
    const auto draft = c.act("generate_outreach_email", kDental,
                             {{"prospectUrl", "https://smiles.example.org/links"}});
    const json send{{"to", draft.data["email_to"]},
                    {"subject", draft.data["subject"]},
                    {"html", "<p>Hello</p>"},
                    {"email_id", draft.data["id"]}};
    g.gw->inject({.target = "send_prospect_email", .mode = FaultMode::fail_after});
    const auto r = c.act("send_prospect_email", kDental, send);
    EXPECT_TRUE(r.recovered);
    EXPECT_EQ(r.data.value("status", ""), "sent");
    EXPECT_NE(r.note.find("status sent"), std::string::npos) << r.note;
    EXPECT_EQ(g.posts("send_prospect_email"), 1u);

    // Without the draft's id, a bare gateway's rows carry no sent_at to find the send by: the
    // outcome is unknown, and the e-mail is not sent a second time.
    const json loose{{"to", "editor@other.example"}, {"subject", "Hi"}, {"html", "<p>x</p>"}};
    g.gw->inject({.target = "send_prospect_email", .mode = FaultMode::fail_after});
    const auto e = expect_error([&] { c.act("send_prospect_email", kDental, loose); });
    EXPECT_EQ(e.reason(), ErrorReason::outcome_unknown) << e.what();
    EXPECT_EQ(g.posts("send_prospect_email"), 2u);
}

// --- the checks themselves -------------------------------------------------------------------

const ActionSpec& deploy_spec() {
    static const ActionSpec* spec = find_action_spec("deploy_blog", json{{"post_id", "b-1"}});
    return *spec;
}

TEST(ActionChecks, EveryActionHasOneApplicableCheck) {
    for (const auto& spec : agency::gateway::kActionSpecs) {
        SCOPED_TRACE(std::string(spec.action));
        if (spec.resend != ResendRule::retry_safe) {
            EXPECT_FALSE(spec.check_hint.empty());
        }
        // Creating checks need a time to judge "since the first attempt" by.
        if (spec.resend == ResendRule::verify || spec.resend == ResendRule::confirm_only) {
            EXPECT_FALSE(spec.order.empty());
            EXPECT_FALSE(spec.time_field.empty());
        }
        if (spec.resend == ResendRule::verify_state) {
            EXPECT_FALSE(spec.filter_body_field.empty());
            EXPECT_FALSE(spec.match[0].constant.empty());
        }
    }
    EXPECT_EQ(find_action_spec("deploy_blog", json{{"post_id", "b-1"}})->resend,
              ResendRule::verify_state);
    EXPECT_EQ(find_action_spec("deploy_blog", json::object())->resend, ResendRule::unknown);
    EXPECT_EQ(find_action_spec("deploy_blog", json{{"post_id", ""}})->resend,
              ResendRule::unknown);
    EXPECT_EQ(find_action_spec("index_url", json{{"url", "u"}})->resend,
              ResendRule::confirm_only);
    EXPECT_EQ(find_action_spec("send_prospect_email", json{{"email_id", "o-1"}})->resend,
              ResendRule::verify_state);
    EXPECT_EQ(find_action_spec("score_call", json{{"transcript", "t"}})->resend,
              ResendRule::verify);  // can_verify then finds no call_id: unknown
    EXPECT_EQ(find_action_spec("launch_rocket", json::object()), nullptr);
}

TEST(ActionChecks, CompareStateNeedsTheEffectOrWhatMoved) {
    const auto& spec = deploy_spec();
    const json draft{{"id", "b-1"}, {"status", "draft"}, {"published", false},
                     {"updated_at", "2026-11-22T10:00:00Z"}};
    json published = draft;
    published["status"] = "published";
    published["published"] = true;
    published["updated_at"] = "2026-11-22T10:05:00Z";
    EXPECT_EQ(compare_state(spec, draft, published).evidence, Evidence::ran);
    EXPECT_EQ(compare_state(spec, draft, draft).evidence, Evidence::not_run);
    // Only `published` (no status): still the effect.
    EXPECT_EQ(compare_state(spec, json{{"id", "b-1"}, {"published", false}},
                            json{{"id", "b-1"}, {"published", true}})
                  .evidence,
              Evidence::ran);
    // Already published, nothing moved: cannot tell whether a redeploy ran.
    EXPECT_EQ(compare_state(spec, published, published).evidence, Evidence::unclear);
    json republished = published;
    republished["updated_at"] = "2026-11-22T10:09:00Z";
    EXPECT_EQ(compare_state(spec, published, republished).evidence, Evidence::ran);
    // Changed, but not published: something else happened.
    json edited = draft;
    edited["updated_at"] = "2026-11-22T10:09:00Z";
    EXPECT_EQ(compare_state(spec, draft, edited).evidence, Evidence::unclear);
    // A row that shows no publish state at all, or no row: never "did not run".
    const json bare{{"id", "b-1"}, {"title", "x"}};
    EXPECT_EQ(compare_state(spec, bare, bare).evidence, Evidence::unclear);
    EXPECT_EQ(compare_state(spec, draft, nullptr).evidence, Evidence::unclear);
}

TEST(ActionChecks, JudgeRowsNeedsAPageThatSettlesIt) {
    const auto* spec = find_action_spec("generate_blog", json{{"keyword", "k"}});
    const json body{{"keyword", "implants"}};
    const auto since = *parse_utc_time("2026-11-22T10:00:00Z");
    const auto judge = [&](const json& rows, bool has_more = false, std::size_t limit = 20) {
        return judge_rows(*spec, body, rows, has_more, limit, since, {});
    };
    const json mine{{"id", "b-9"}, {"keyword", "implants"}, {"created_at", "2026-11-22T10:00:03Z"}};
    const json other{{"id", "b-8"}, {"keyword", "crowns"}, {"created_at", "2026-11-22T10:00:02Z"}};
    const json old{{"id", "b-1"}, {"keyword", "implants"}, {"created_at", "2026-11-01T09:00:00Z"}};
    EXPECT_EQ(judge(json::array({mine, other, old})).evidence, Evidence::ran);
    EXPECT_EQ(judge(json::array({other, old})).evidence, Evidence::not_run);
    EXPECT_EQ(judge(json::array()).evidence, Evidence::not_run);
    // A recent row without the field the match needs (a gateway whose rows differ): unclear.
    json nameless = other;
    nameless.erase("keyword");
    EXPECT_EQ(judge(json::array({nameless, old})).evidence, Evidence::unclear);
    // Rows without a readable time, or out of order: unclear.
    json timeless = other;
    timeless.erase("created_at");
    EXPECT_EQ(judge(json::array({timeless, old})).evidence, Evidence::unclear);
    EXPECT_EQ(judge(json::array({old, other})).evidence, Evidence::unclear);
    // A full page of recent rows that does not reach back to the first attempt: unclear.
    EXPECT_EQ(judge(json::array({other, other}), true, 2).evidence, Evidence::unclear);
    EXPECT_EQ(judge(json::array({other, old}), true, 2).evidence, Evidence::not_run);
    // A claimed record is someone else's.
    EXPECT_EQ(judge_rows(*spec, body, json::array({mine, old}), false, 20, since,
                         [](const json& row) { return row.value("id", "") == "b-9"; })
                  .evidence,
              Evidence::not_run);
    // confirm_only: finding proves it ran, not finding proves nothing.
    const auto* index = find_action_spec("index_url", json{{"url", "u"}});
    const json submitted{{"id", "t-1"}, {"url", "u"}, {"task_type", "index_url"},
                         {"created_at", "2026-11-22T10:00:01Z"}};
    EXPECT_EQ(judge_rows(*index, json{{"url", "u"}}, json::array({submitted}), false, 20, since,
                         {})
                  .evidence,
              Evidence::ran);
    EXPECT_EQ(judge_rows(*index, json{{"url", "u"}}, json::array(), false, 20, since, {}).evidence,
              Evidence::unclear);
}

}  // namespace
