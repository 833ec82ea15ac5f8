// Issue 31, items 1 and 2: what a person approves is what is sent, on gateways that differ from
// the sample. An outreach draft's body under any of the names gateways use (or nested, or none:
// the caller supplies it) reaches the answer the model reads, the preview, the form and the
// send; no blank e-mail reaches a person. An auto-deploying article whose answer does not say
// whether it went live is read back. Every test runs the tools on the sample gateway, varied.
#include <string>

#include <gtest/gtest.h>

#include "state/pg_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/text.hpp"

namespace outreach_body {  // named: a unity batch holds other tests' helpers of the same names

using agency::testing::ActionToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;
constexpr const char* kProspect = "https://legal-resources.example/guides";

using agency::testing::has;

// The text block a model is handed (frameworks pass only that on).
std::string model_text(const ToolReply& r) {
    return r.result["content"][0].value("text", "");
}

// The backlink_outreach row of a draft's answer, at the sample gateway.
json outreach_row(ActionToolHarness& o, const json& drafted) {
    const std::string id = drafted["data"].value("id", "");
    for (const auto& row : o.h->gw->rows("backlink_outreach", kLaw))
        if (row.value("id", "") == id) return row;
    ADD_FAILURE() << "no backlink_outreach row " << id;
    return json::object();
}

json send_confirmed(ActionToolHarness& o, json args) {
    json preview = o.ok("send_prospect_email", args);
    EXPECT_EQ(preview.value("status", ""), "confirmation_required") << preview.dump();
    args["confirmation_id"] = preview["confirmation_id"];
    return o.ok("send_prospect_email", args);
}

TEST(OutreachBody, TheDraftsBodyUnderAnyNameReachesTheModelThePreviewAndTheSend) {
    for (const std::string field : {"html", "body_html", "body", "content", "email.body_html"}) {
        SCOPED_TRACE(field);
        ActionToolHarness o({.outreach_body_field = field});
        ToolReply drafted =
            o.h->call("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
        ASSERT_FALSE(drafted.is_error()) << drafted.response.dump();
        const json& d = drafted.structured();
        EXPECT_EQ(d.value("body_from", ""), field) << d.dump();
        EXPECT_TRUE(has(d.value("body", ""), "I'm reaching out from")) << d.dump();
        EXPECT_FALSE(d.contains("warnings")) << d.dump();
        EXPECT_FALSE(d.contains("read_back")) << d.dump();
        EXPECT_EQ(o.h->gw->count_requests("GET", "backlink_outreach"), 0u)
            << "an answer that holds every part is not read back";
        EXPECT_TRUE(has(model_text(drafted), "I'm reaching out from")) << model_text(drafted);
        const std::string drafted_html =
            outreach_row(o, d).value(field.substr(field.find('.') + 1), "");
        ASSERT_FALSE(drafted_html.empty());

        const json args = {{"client_id", kLaw}, {"email_id", d["email_id"]}};
        json preview = o.ok("send_prospect_email", args);
        EXPECT_TRUE(has(preview["preview"].value("body", ""), "I'm reaching out from"))
            << preview.dump();
        EXPECT_TRUE(has(preview.value("message", ""), "I'm reaching out from"));
        json sent = send_confirmed(o, args);
        EXPECT_EQ(sent.value("status", ""), "sent") << sent.dump();
        EXPECT_EQ(outreach_row(o, d).value("html", ""), drafted_html);
    }
}

TEST(OutreachBody, ADraftWithoutABodyIsRefusedBeforeApprovalAndTheCallerSuppliesIt) {
    ActionToolHarness o({.outreach_body_field = ""});
    ToolReply drafted =
        o.h->call("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
    const json& d = drafted.structured();
    EXPECT_TRUE(d["body"].is_null()) << d.dump();
    ASSERT_TRUE(d["warnings"].is_array()) << d.dump();
    EXPECT_TRUE(has(d["warnings"].dump(), "no body")) << d.dump();
    EXPECT_TRUE(has(d.value("next_step", ""), "body")) << d.dump();
    EXPECT_TRUE(has(model_text(drafted), "no body")) << model_text(drafted);

    // No body anywhere: refused, naming the argument, before anyone is asked; and no form either.
    const json args = {{"client_id", kLaw}, {"email_id", d["email_id"]}};
    ToolReply blank = o.h->call("send_prospect_email", args);
    EXPECT_EQ(blank.reason(), "validation") << blank.response.dump();
    EXPECT_TRUE(has(blank.tool_error().value("message", ""), "pass body"));
    EXPECT_FALSE(blank.structured().contains("confirmation_id"));
    json asked = o.eliciting_call("send_prospect_email", args);
    EXPECT_NE(asked["result"].value("resultType", ""), "input_required") << asked.dump();
    // A body of markup without text is no body either.
    json markup = args;
    markup["body"] = "<p> </p><br>";
    EXPECT_EQ(o.h->call("send_prospect_email", markup).reason(), "validation");

    json given = args;
    given["body"] = "Hello Jo,\n\nA resource idea for your readers & you.\nBest,\nSam";
    json preview = o.ok("send_prospect_email", given);
    EXPECT_EQ(preview["preview"].value("body_from", ""), "argument");
    EXPECT_TRUE(has(preview["preview"].value("body", ""), "A resource idea for your readers & you"));
    EXPECT_TRUE(has(preview.value("message", ""), "the caller's")) << preview.dump();
    json sent = send_confirmed(o, given);
    EXPECT_EQ(sent.value("status", ""), "sent") << sent.dump();
    EXPECT_EQ(outreach_row(o, d).value("html", ""),
              "<p>Hello Jo,</p><p>A resource idea for your readers &amp; you.<br>Best,<br>Sam</p>");
    EXPECT_EQ(o.posts("send_prospect_email"), 1u);
}

TEST(OutreachBody, WhatIsApprovedIsWhatIsSentWhenTheCallerChangesSubjectAndBody) {
    ActionToolHarness o;
    json d = o.ok("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
    json args = {{"client_id", kLaw}, {"email_id", d["email_id"]},
                 {"subject", "A guide for your readers"}, {"body", "<p>Short and kind.</p>"}};
    json asked = o.eliciting_call("send_prospect_email", args);
    ASSERT_EQ(asked["result"]["resultType"], "input_required") << asked.dump();
    const std::string form =
        asked["result"]["inputRequests"]["confirm"]["params"].value("message", "");
    EXPECT_TRUE(has(form, "A guide for your readers")) << form;
    EXPECT_TRUE(has(form, "Short and kind.")) << form;
    EXPECT_FALSE(has(form, "I'm reaching out from")) << form;

    json preview = o.ok("send_prospect_email", args);
    // The confirmation is for those words: other words with its id are refused, nothing sent.
    json other = args;
    other["body"] = "<p>Something else.</p>";
    other["confirmation_id"] = preview["confirmation_id"];
    ToolReply swapped = o.h->call("send_prospect_email", other);
    EXPECT_TRUE(swapped.is_error()) << swapped.response.dump();
    EXPECT_EQ(o.posts("send_prospect_email"), 0u);

    args["confirmation_id"] = preview["confirmation_id"];
    json sent = o.ok("send_prospect_email", args);
    EXPECT_EQ(sent.value("status", ""), "sent") << sent.dump();
    const json row = outreach_row(o, d);
    EXPECT_EQ(row.value("subject", ""), "A guide for your readers");
    EXPECT_EQ(row.value("html", ""), "<p>Short and kind.</p>");
}

TEST(OutreachBody, ASubjectArgumentIsOneLine) {
    ActionToolHarness o;
    json d = o.ok("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
    ToolReply r = o.h->call("send_prospect_email", {{"client_id", kLaw}, {"email_id", d["email_id"]},
                                                    {"subject", "Hi\r\nBcc: all@evil.example"}});
    EXPECT_TRUE(r.is_error() || r.rpc_error) << r.response.dump();
    EXPECT_EQ(o.posts("send_prospect_email"), 0u);
}

// --- item 2: an auto-deploying article is read back ------------------------------------------

json generate_confirmed(ActionToolHarness& o, const json& args) {
    json preview = o.ok("generate_article", args);
    EXPECT_EQ(preview.value("status", ""), "confirmation_required") << preview.dump();
    json confirmed = args;
    confirmed["confirmation_id"] = preview["confirmation_id"];
    return o.ok("generate_article", confirmed);
}

// Issue 45, finding 9: a gateway that answers {id, prospect_url, subject, status} and keeps the
// body and recipient in its backlink_outreach row. The draft's record is read once by id; the
// body and recipient the person approves are the row's, and what is sent is that body.
TEST(OutreachBody, ADraftWhoseBodyLivesInItsRecordIsReadBackByIdAndSent) {
    for (const std::string field : {"html", "body_html"}) {
        SCOPED_TRACE(field);
        ActionToolHarness o({.outreach_body_field = field, .outreach_record_only = true});
        ToolReply drafted =
            o.h->call("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
        ASSERT_FALSE(drafted.is_error()) << drafted.response.dump();
        const json& d = drafted.structured();
        const json row = outreach_row(o, d);
        // The gateway's answer itself lacks them: the read back is what found them.
        ASSERT_FALSE(d["data"].contains(field)) << d.dump();
        ASSERT_FALSE(d["data"].contains("email_to")) << d.dump();
        const std::string row_html = row.value(field, "");
        ASSERT_TRUE(has(row_html, "I'm reaching out from")) << row.dump();
        EXPECT_EQ(d.value("body_from", ""), "record:" + field) << d.dump();
        EXPECT_TRUE(has(d.value("body", ""), "I'm reaching out from")) << d.dump();
        EXPECT_EQ(d.value("recipient", ""), row.value("email_to", "")) << d.dump();
        EXPECT_EQ(d.value("recipient_from", ""), "record:email_to") << d.dump();
        EXPECT_EQ(d.value("subject_from", ""), "subject") << d.dump();
        EXPECT_TRUE(has(d.value("read_back", ""), "resource=backlink_outreach")) << d.dump();
        EXPECT_EQ(o.h->gw->count_requests("GET", "backlink_outreach"), 1u) << "read once, by id";
        EXPECT_FALSE(d.contains("warnings")) << d.dump();
        EXPECT_FALSE(d.contains("next_step")) << d.dump();
        EXPECT_TRUE(has(model_text(drafted), "I'm reaching out from")) << model_text(drafted);

        const json args = {{"client_id", kLaw}, {"email_id", d["email_id"]}};
        json preview = o.ok("send_prospect_email", args);
        EXPECT_TRUE(has(preview["preview"].value("body", ""), "I'm reaching out from"))
            << preview.dump();
        json sent = send_confirmed(o, args);
        EXPECT_EQ(sent.value("status", ""), "sent") << sent.dump();
        // What was approved is what went out: the row's own body, to the row's own address.
        const json after = outreach_row(o, d);
        EXPECT_EQ(after.value("html", ""), row_html);
        EXPECT_EQ(after.value("email_to", ""), row.value("email_to", ""));
        EXPECT_EQ(o.posts("send_prospect_email"), 1u);
    }
}

// The read back finds no body in the record either: the draft says so, naming where it looked.
TEST(OutreachBody, ARecordWithoutABodyStillAsksTheCallerForOne) {
    ActionToolHarness o({.outreach_body_field = "", .outreach_record_only = true});
    ToolReply drafted =
        o.h->call("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
    const json& d = drafted.structured();
    EXPECT_TRUE(d["body"].is_null()) << d.dump();
    EXPECT_TRUE(has(d["warnings"].dump(), "backlink_outreach record")) << d.dump();
    EXPECT_EQ(d.value("recipient_from", ""), "record:email_to") << d.dump();
    EXPECT_TRUE(has(d.value("next_step", ""), "body")) << d.dump();
}

TEST(OutreachBody, AnAutoDeployedArticleTheAnswerSaysNothingOfIsReadBack) {
    ActionToolHarness o({.spec_shaped_answers = true});
    json done = generate_confirmed(o, {{"client_id", kPlumbing}, {"keyword", "sump pump repair"}});
    EXPECT_EQ(done.value("status", ""), "published") << done.dump();
    EXPECT_TRUE(has(done.value("url", ""), "https://")) << done.dump();
    EXPECT_TRUE(has(done.value("status_from", ""), "read back")) << done.dump();
    EXPECT_EQ(o.posts("generate_blog"), 1u);
}

TEST(OutreachBody, AnArticleStillDeployingIsNotCalledPublished) {
    ActionToolHarness o({.spec_shaped_answers = true, .slow_deploys = true});
    json done = generate_confirmed(o, {{"client_id", kPlumbing}, {"keyword", "drain cleaning"}});
    EXPECT_EQ(done.value("status", ""), "deploying") << done.dump();
    EXPECT_TRUE(has(done.value("next_step", ""), "not gone live yet")) << done.dump();
}

TEST(OutreachBody, ADeployTheAnswerSaysNothingOfIsReadBack) {
    for (const bool slow : {false, true}) {
        SCOPED_TRACE(slow ? "slow deploys" : "deploys at once");
        ActionToolHarness o({.spec_shaped_answers = true, .slow_deploys = slow});
        json article = o.ok("generate_article", {{"client_id", kLaw}, {"keyword", "wills"}});
        const json args = {{"client_id", kLaw}, {"article_id", article["article_id"]}};
        json preview = o.ok("deploy_article", args);
        json confirmed = args;
        confirmed["confirmation_id"] = preview["confirmation_id"];
        json done = o.ok("deploy_article", confirmed);
        EXPECT_EQ(done.value("status", ""), slow ? "deploying" : "published") << done.dump();
        EXPECT_TRUE(has(done.value("status_from", ""), "read back")) << done.dump();
        if (!slow) {
            EXPECT_TRUE(has(done.value("url", ""), "https://")) << done.dump();
        }
    }
}

// --- the shared store stopped between a person's approval and the send ----------------------

// (StoreBackends: run beside the PostgreSQL cluster; tests/CMakeLists.txt.)
TEST(StoreBackends, PostgreSqlDownBetweenApprovalAndSendSendsNothingThenExactlyOnce) {
    const std::string url = agency::testing::pg_fresh_database();
    ActionToolHarness o({.outreach_body_field = "body_html"},
                        {.store = std::make_shared<agency::state::PgStore>(url)});
    json d = o.ok("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
    json args = {{"client_id", kLaw}, {"email_id", d["email_id"]}, {"subject", "A guide"}};
    json preview = o.ok("send_prospect_email", args);
    ASSERT_TRUE(preview["confirmation_id"].is_string()) << preview.dump();
    args["confirmation_id"] = preview["confirmation_id"];

    agency::testing::pg_allow_connections(url, false);
    ToolReply down = o.h->call("send_prospect_email", args);
    EXPECT_EQ(down.reason(), "state_unavailable") << down.response.dump();
    EXPECT_EQ(o.posts("send_prospect_email"), 0u);

    // Back: the approval was not spent by the failed call, and the e-mail goes out once, as
    // approved.
    agency::testing::pg_allow_connections(url, true);
    json sent = o.ok("send_prospect_email", args);
    EXPECT_EQ(sent.value("status", ""), "sent") << sent.dump();
    EXPECT_EQ(o.posts("send_prospect_email"), 1u);
    EXPECT_EQ(outreach_row(o, d).value("subject", ""), "A guide");
    ToolReply again = o.h->call("send_prospect_email", args);
    EXPECT_TRUE(again.is_error()) << again.response.dump();
    EXPECT_EQ(o.posts("send_prospect_email"), 1u);
}

}  // namespace outreach_body
