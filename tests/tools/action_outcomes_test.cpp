// Issue 17, the action tools: an outreach draft without a recipient, what a person approves,
// outcomes told as they are (published, replayed, billing, a 401 mid-session), and a gateway key
// without the write scope. Every test runs the tools against the sample gateway over loopback.
#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/action_tool_harness.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/text.hpp"
#include "tools/actions/action_internal.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

namespace {

using namespace agency::testing::tool_names;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;

using Outcomes = agency::testing::ActionToolHarness;

using agency::testing::has;

json row_by_id(const json& rows, const std::string& id) {
    for (const auto& row : rows)
        if (row.value("id", "") == id) return row;
    return nullptr;
}

// --- point 2: a draft without a recipient ---------------------------------------------------

TEST(ActionOutcomes, DraftWithoutRecipientSaysSoAndSendAsksForOne) {
    Outcomes o({.empty_recipients = true});
    json drafted = o.ok("generate_outreach_email",
                        {{"client_id", kLaw}, {"prospect", "https://legal-resources.example/guides"}});
    ASSERT_TRUE(drafted.is_object());
    EXPECT_TRUE(drafted["recipient"].is_null()) << drafted.dump();
    ASSERT_TRUE(drafted["warnings"].is_array()) << drafted.dump();
    EXPECT_TRUE(has(drafted.value("next_step", ""), "recipient")) << drafted.dump();
    const std::string email_id = drafted.value("email_id", "");

    // No address anywhere: a validation error naming the argument, before any confirmation.
    ToolReply none = o.h->call("send_prospect_email", {{"client_id", kLaw}, {"email_id", email_id}});
    EXPECT_EQ(none.reason(), "validation") << none.response.dump();
    EXPECT_TRUE(has(none.tool_error().value("message", ""), "pass recipient"));
    EXPECT_FALSE(none.structured().contains("confirmation_id"));

    const json args = {{"client_id", kLaw}, {"email_id", email_id},
                       {"recipient", "jo.editor@legal-resources.example"}};
    json preview = o.ok("send_prospect_email", args);
    EXPECT_EQ(preview.value("status", ""), "confirmation_required");
    EXPECT_EQ(preview["preview"]["to"], "jo.editor@legal-resources.example");
    EXPECT_EQ(preview["preview"]["recipient_from"], "argument");
    EXPECT_EQ(o.posts("send_prospect_email"), 0u);

    json confirmed = args;
    confirmed["confirmation_id"] = preview["confirmation_id"];
    json sent = o.ok("send_prospect_email", confirmed);
    EXPECT_EQ(sent.value("status", ""), "sent") << sent.dump();
    EXPECT_EQ(sent["recipient"], "jo.editor@legal-resources.example");
    EXPECT_EQ(o.posts("send_prospect_email"), 1u);
    const json row = row_by_id(o.h->gw->rows("backlink_outreach", kLaw), sent["data"].value("id", ""));
    EXPECT_EQ(row.value("email_to", ""), "jo.editor@legal-resources.example") << row.dump();
}

TEST(ActionOutcomes, RecipientArgumentIsUsedAndValidated) {
    Outcomes o;
    json drafted = o.ok("generate_outreach_email",
                        {{"client_id", kLaw},
                         {"prospect", "https://legal-resources.example/guides"},
                         {"recipient", "pat@legal-resources.example"}});
    EXPECT_EQ(drafted["recipient"], "pat@legal-resources.example");
    EXPECT_FALSE(drafted.contains("warnings"));
    EXPECT_EQ(o.rt->store().draft(drafted.value("email_id", ""), "local")->recipient,
              "pat@legal-resources.example");

    for (const char* bad : {"not-an-address", "a@b", "x@y.example\nBcc: z@evil.example"}) {
        ToolReply r = o.h->call("generate_outreach_email",
                                {{"client_id", kLaw},
                                 {"prospect", "https://legal-resources.example/guides"},
                                 {"recipient", bad}});
        EXPECT_EQ(r.reason(), "validation") << bad << ": " << r.response.dump();
        EXPECT_TRUE(has(r.tool_error().value("message", ""), "recipient")) << r.response.dump();
    }
    EXPECT_EQ(o.posts("generate_outreach_email"), 1u);
}

// --- point 3: what a person approves ---------------------------------------------------------

TEST(ActionOutcomes, DeployShowsTitleExcerptAndWhereInPreviewAndForm) {
    Outcomes o;
    json article = o.ok("generate_article", {{"client_id", kDental}, {"keyword", "dental implants"}});
    const std::string id = article.value("article_id", "");
    const std::string title = article.value("title", "");
    ASSERT_FALSE(title.empty());
    const json args = {{"client_id", kDental}, {"article_id", id}};

    json preview = o.ok("deploy_article", args);
    const json& details = preview["preview"];
    const std::string excerpt = details.value("excerpt", "");
    ASSERT_FALSE(excerpt.empty()) << details.dump();
    EXPECT_FALSE(has(excerpt, "<")) << "tags are stripped: " << excerpt;
    EXPECT_TRUE(has(excerpt, "&")) << "entities are decoded: " << excerpt;
    EXPECT_TRUE(details["site"].is_string()) << details.dump();
    const std::string message = preview.value("message", "");
    for (const std::string& part : {title, excerpt.substr(0, 40), details["site"].get<std::string>()})
        EXPECT_TRUE(has(message, part)) << part << " not in: " << message;

    json asked = o.eliciting_call("deploy_article", args);
    ASSERT_EQ(asked["result"]["resultType"], "input_required") << asked.dump();
    const json& params = asked["result"]["inputRequests"]["confirm"]["params"];
    EXPECT_TRUE(has(params.value("message", ""), title));
    EXPECT_TRUE(has(params.value("message", ""), excerpt.substr(0, 40)));
    EXPECT_TRUE(has(params["requestedSchema"]["properties"]["confirm"].value("description", ""),
                    excerpt.substr(0, 40)));
    EXPECT_EQ(o.posts("deploy_blog"), 0u);
}

TEST(ActionOutcomes, SendShowsRecipientSubjectAndBodyText) {
    Outcomes o;
    json drafted = o.ok("generate_outreach_email",
                        {{"client_id", kLaw}, {"prospect", "https://legal-resources.example/guides"}});
    json asked = o.eliciting_call("send_prospect_email",
                                  {{"client_id", kLaw}, {"email_id", drafted["email_id"]}});
    ASSERT_EQ(asked["result"]["resultType"], "input_required") << asked.dump();
    const std::string message =
        asked["result"]["inputRequests"]["confirm"]["params"].value("message", "");
    EXPECT_TRUE(has(message, "editor@legal-resources.example")) << message;
    EXPECT_TRUE(has(message, drafted.value("title", ""))) << message;
    EXPECT_TRUE(has(message, "I'm reaching out from")) << message;
    EXPECT_FALSE(has(message, "<p>")) << message;
    EXPECT_EQ(o.posts("send_prospect_email"), 0u);
}

// A gateway's draft address is held to the same rule as the recipient argument's pattern.
TEST(ActionOutcomes, AGatewayAddressMustLookLikeOneToBeUsed) {
    using agency::tools::plausible_address;
    for (const char* good : {"editor@example.com", "a.b+c@mail.example.co.uk"})
        EXPECT_TRUE(plausible_address(good)) << good;
    for (const char* bad : {"", "Editor", "editor@", "@example.com", "editor@example",
                            "editor@@example.com", "ed itor@example.com", "a@b@c.com",
                            "editor@example.", "editor@.com"})
        EXPECT_FALSE(plausible_address(bad)) << bad;
    EXPECT_FALSE(plausible_address(std::string(250, 'a') + "@x.io"));
}

TEST(ActionOutcomes, PlainTextStripsDecodesAndCutsWhole) {
    using agency::tools::plain_text;
    bool cut = true;
    EXPECT_EQ(plain_text("<p>Fish &amp; chips</p><script>alert(1)</script><p>Two</p>", 100, &cut),
              "Fish & chips\nTwo");
    EXPECT_FALSE(cut);
    EXPECT_EQ(plain_text("caf\xc3\xa9 caf\xc3\xa9", 4, &cut), "caf\xc3\xa9");
    EXPECT_TRUE(cut);
    EXPECT_EQ(plain_text("  a \n\n  b <br> c", 100), "a b\nc");
    EXPECT_EQ(plain_text("<div unclosed", 100, &cut), "");
    EXPECT_EQ(plain_text(std::string(300 * 1024, 'x'), 10, &cut), std::string(10, 'x'));
    EXPECT_TRUE(cut);
}

TEST(ActionOutcomes, ElicitationOnlyRefusesConfirmationIdsAndClientsThatCannotAsk) {
    Outcomes o({}, ActionSettings{.elicitation_only = true});
    json article = o.ok("generate_article", {{"client_id", kDental}, {"keyword", "dental crowns"}});
    const json args = {{"client_id", kDental}, {"article_id", article["article_id"]}};

    ToolReply no_form = o.h->call("deploy_article", args);
    EXPECT_EQ(no_form.reason(), "confirmation_required") << no_form.response.dump();
    EXPECT_TRUE(has(no_form.tool_error().value("message", ""), "elicitation"));
    EXPECT_TRUE(no_form.tool_error()["preview"].is_object());
    EXPECT_FALSE(no_form.structured().contains("confirmation_id"));

    json with_id = args;
    with_id["confirmation_id"] = "cf_relayed_by_a_model";
    ToolReply relayed = o.h->call("deploy_article", with_id);
    EXPECT_EQ(relayed.reason(), "confirmation_required") << relayed.response.dump();
    EXPECT_EQ(o.posts("deploy_blog"), 0u);

    json asked = o.eliciting_call("deploy_article", args);
    ASSERT_EQ(asked["result"]["resultType"], "input_required") << asked.dump();
    const json yes = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    json done = o.eliciting_call("deploy_article", args, yes, asked["result"]["requestState"]);
    EXPECT_EQ(done["result"]["structuredContent"].value("status", ""), "published") << done.dump();
    EXPECT_EQ(o.posts("deploy_blog"), 1u);
}

// --- point 4: outcomes told as they are ------------------------------------------------------

TEST(ActionOutcomes, AutoDeployedArticleIsReportedPublishedWithItsAddress) {
    Outcomes o;
    const json args = {{"client_id", kPlumbing}, {"keyword", "sump pump repair"}};
    json preview = o.ok("generate_article", args);
    ASSERT_EQ(preview.value("status", ""), "confirmation_required");
    EXPECT_TRUE(has(preview.value("message", ""), "sump pump repair"));
    json confirmed = args;
    confirmed["confirmation_id"] = preview["confirmation_id"];
    json done = o.ok("generate_article", confirmed);
    EXPECT_EQ(done.value("status", ""), "published") << done.dump();
    EXPECT_TRUE(has(done.value("url", ""), "https://")) << done.dump();
    EXPECT_EQ(done.value("auto_deploy", false), true);
}

TEST(ActionOutcomes, ReplayIsMarkedAsAReplay) {
    Outcomes o;
    const json args = {{"client_id", kDental}, {"keyword", "teeth whitening"},
                       {"idempotency_key", "k-replay-1"}};
    json first = o.ok("generate_article", args);
    EXPECT_FALSE(first.contains("replayed"));
    json again = o.ok("generate_article", args);
    EXPECT_EQ(again.value("replayed", false), true) << again.dump();
    EXPECT_FALSE(again.value("first_called_at", "").empty());
    EXPECT_EQ(again["article_id"], first["article_id"]);
    EXPECT_EQ(o.posts("generate_blog"), 1u);
}

TEST(ActionOutcomes, StatusErrorSaysWhatTheSpecSaysOfBilling) {
    Outcomes o;
    o.h->gw->inject({.target = "generate_blog", .mode = FaultMode::status_error});
    ToolReply r = o.h->call("generate_article", {{"client_id", kDental}, {"keyword", "veneers"}});
    const std::string message = r.tool_error().value("message", "");
    EXPECT_FALSE(has(message, "nothing was billed")) << message;
    EXPECT_TRUE(has(message, "does not bill work that did not complete")) << message;
}

TEST(ActionOutcomes, KeyRefusedMidSessionIsAnAuthProblem) {
    const std::string key = "k-live-0123456789";
    Outcomes o({}, {}, key);
    o.h->gw->set_keyed(true);
    o.h->gw->add_key({.key = key, .agency = "acme", .scopes = {"read", "write"}});
    for (const char* c : {kDental, kLaw, kPlumbing}) o.h->gw->link_client(c, "acme");
    o.ok("list_clients", json::object());

    o.h->gw->add_key({.key = key, .agency = "acme", .scopes = {"read", "write"}, .expired = true});
    for (const auto& [tool, args] : std::vector<std::pair<std::string, json>>{
             {"refresh_backlinks", {{"client_id", kDental}}},  // a POST answered 401
             {"list_clients", json::object()}}) {
        ToolReply r = o.h->call(tool, args);
        EXPECT_EQ(r.reason(), "auth") << tool << ": " << r.response.dump();
        const std::string message = r.tool_error().value("message", "");
        EXPECT_TRUE(has(message, "AGENCY_API_KEY")) << message;
        EXPECT_FALSE(has(r.response.dump(), key)) << "the key is never shown";
    }
}

// --- point 5: a gateway key without the write scope ------------------------------------------

// The write tools as registered (every tool that needs the write scope), not a list kept here.
std::vector<std::string> write_tools_of(Outcomes& o) {
    std::vector<std::string> names;
    for (const agency::mcp::ToolDef* tool : o.h->server->visible_tools(agency::mcp::Principal{}))
        if (std::ranges::count(tool->required_scopes, "write")) names.push_back(tool->name);
    EXPECT_GE(names.size(), 10u);
    return names;
}

TEST(ActionOutcomes, ReadOnlyKeyLearnedFromA403HidesAndRefusesWriteTools) {
    const std::string key = "k-read-only-000111";
    Outcomes o({}, {}, key);
    o.h->gw->set_keyed(true);
    o.h->gw->add_key({.key = key, .agency = "acme", .scopes = {"read"}});
    for (const char* c : {kDental, kLaw, kPlumbing}) o.h->gw->link_client(c, "acme");
    std::mutex mutex;
    std::vector<std::string> heard;
    auto session = o.h->server->create_session("watcher");
    session->notify = [&](const std::string& m) {
        std::lock_guard lock(mutex);
        heard.push_back(m);
    };
    session->initialized = true;
    o.h->server->register_session(session);

    const std::vector<std::string> write_tools = write_tools_of(o);
    EXPECT_TRUE(o.listed().count("generate_article")) << "not known yet";
    ToolReply first = o.h->call("generate_article", {{"client_id", kDental}, {"keyword", "x-rays"}});
    EXPECT_EQ(first.reason(), "scope") << first.response.dump();
    EXPECT_TRUE(has(first.tool_error().value("message", ""), "write scope"));
    EXPECT_EQ(o.posts("generate_blog"), 1u);

    const auto listed = o.listed();
    for (const auto& tool : write_tools) EXPECT_FALSE(listed.count(tool)) << tool;
    EXPECT_TRUE(listed.count("list_clients"));
    EXPECT_TRUE(listed.count("get_audit_status"));
    {
        std::lock_guard lock(mutex);
        EXPECT_EQ(std::count_if(heard.begin(), heard.end(), [](const std::string& m) {
                      return has(m, "notifications/tools/list_changed");
                  }),
                  1);
    }

    o.h->gw->clear_log();
    ToolReply audit = o.h->call("run_seo_audit", {{"client_id", kDental},
                                                  {"url", "https://brightsmile.example/"}});
    EXPECT_EQ(audit.reason(), "scope") << "refused, never queued: " << audit.response.dump();
    ToolReply deploy = o.h->call("deploy_article", {{"client_id", kDental}, {"article_id", "blog-1"}});
    EXPECT_EQ(deploy.reason(), "scope") << "no confirmation for what will fail";
    EXPECT_FALSE(deploy.structured().contains("confirmation_id"));
    EXPECT_EQ(o.h->requests(), 0u) << "refused before any gateway request";
    o.h->server.reset();
}

TEST(ActionOutcomes, A403ForAnUnlinkedClientIsNotTheKeysScope) {
    const std::string key = "k-full-000222333";
    Outcomes o({}, {}, key);
    o.h->gw->set_keyed(true);
    o.h->gw->add_key({.key = key, .agency = "acme", .scopes = {"read", "write"}});
    o.h->gw->link_client(kDental, "acme");
    ToolReply other = o.h->call("refresh_backlinks", {{"client_id", kLaw}});
    EXPECT_TRUE(other.is_error()) << other.response.dump();
    EXPECT_EQ(other.tool_error().value("http_status", 0), 403) << other.response.dump();
    EXPECT_TRUE(has(other.tool_error().value("message", ""), "not linked"));
    EXPECT_FALSE(has(other.tool_error().value("message", ""), "lacks the write scope"));
    EXPECT_EQ(o.posts("fetch_backlinks"), 1u);
    EXPECT_TRUE(o.listed().count("generate_article"));
    json done = o.ok("generate_article", {{"client_id", kDental}, {"keyword", "fillings"}});
    EXPECT_EQ(done.value("status", ""), "drafted");
}

TEST(ActionOutcomes, DiscoveryThatTellsScopesHidesWriteToolsFromTheStart) {
    const std::string key = "k-read-only-444555";
    Outcomes o({.discovery_tells_scopes = true}, {}, key);
    o.h->gw->set_keyed(true);
    o.h->gw->add_key({.key = key, .agency = "acme", .scopes = {"read"}});
    o.h->gw->link_client(kDental, "acme");
    // Registration read discovery before the sample took keys; a real server starts keyed.
    const std::vector<std::string> write_tools = write_tools_of(o);
    o.h->client->refresh_discovery();
    const auto listed = o.listed();
    for (const auto& tool : write_tools) EXPECT_FALSE(listed.count(tool)) << tool;
    ToolReply audit = o.h->call("run_seo_audit", {{"client_id", kDental},
                                                  {"url", "https://brightsmile.example/"}});
    EXPECT_EQ(audit.reason(), "scope") << audit.response.dump();
    EXPECT_TRUE(has(audit.tool_error().value("message", ""), "discovery"));
    EXPECT_EQ(o.posts("seo_audit"), 0u);
}

}  // namespace
