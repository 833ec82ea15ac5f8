// MCP Apps views (issue 34): what a client that declares the io.modelcontextprotocol/ui
// extension gets (the views linked, their resources, the app-only tools), what one that does
// not declare it gets (nothing of them, and every answer as before), and the approval view's
// token: delivered in the result's _meta only, spent once, one POST on Approve, none on
// Decline, and with --confirm elicitation-only the host's own form still decides.
// The views themselves are rendered in a real browser by tests/clients/views.test.mjs.
#include <iostream>
#include <regex>
#include <set>
#include <string>

#include "server/mcp_server.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tools/kit/views.hpp"

#include <gtest/gtest.h>

namespace agency::testing {
namespace {

constexpr const char* kViewsLaw = "demo-law";
constexpr const char* kViewsPlumbing = "demo-plumbing";  // auto-deploy on

const json kViewsUiCapabilities = {
    {"extensions", {{"io.modelcontextprotocol/ui", {{"mimeTypes", {"text/html;profile=mcp-app"}}}}}}};

// One modern request whose client declares `capabilities`, as `principal`.
json views_send(ActionToolHarness& a, const std::string& method, json params,
               const json& capabilities, const std::string& principal = "local") {
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", capabilities}};
    const json message = {{"jsonrpc", "2.0"}, {"id", a.h->next_id++}, {"method", method},
                          {"params", std::move(params)}};
    mcp::Inbound in;
    in.principal.name = principal;
    auto text = a.h->server->handle_message(message, in);
    return text ? json::parse(text->text) : json(nullptr);
}

json views_ui_call(ActionToolHarness& a, const std::string& tool, const json& args,
             const std::string& principal = "local") {
    return views_send(a, "tools/call", {{"name", tool}, {"arguments", args}}, kViewsUiCapabilities,
                     principal);
}

std::string views_first_draft(ActionToolHarness& a, const std::string& client) {
    for (const auto& row : a.h->gw->rows("blogs", client))
        if (row.value("status", "") == "draft") return row.value("id", "");
    ADD_FAILURE() << "no draft blog for " << client;
    return "";
}

const std::map<std::string, std::string> kViewsLinked = {
    {"get_client", "ui://agency-mcp/client-overview.html"},
    {"list_rankings", "ui://agency-mcp/rankings.html"},
    {"latest_rankings", "ui://agency-mcp/rankings.html"},
    {"ranking_changes", "ui://agency-mcp/rankings.html"},
    {"get_audit_issues", "ui://agency-mcp/audit.html"},
    {"deploy_article", "ui://agency-mcp/approve.html"},
    {"send_prospect_email", "ui://agency-mcp/approve.html"},
    {"generate_article", "ui://agency-mcp/approve.html"},
    {"view_ranking_history", "ui://agency-mcp/rankings.html"},
    {"view_decide", "ui://agency-mcp/approve.html"},
};
const std::set<std::string> kViewsAppOnly = {"view_ranking_history", "view_decide"};

// A view's HTML as the spec asks it: one HTML5 document, small, with nothing loaded from
// elsewhere (no http(s) or protocol-relative URL in any src or href).
void views_expect_self_contained(const std::string& uri, const std::string& html) {
    EXPECT_TRUE(html.starts_with("<!doctype html>") || html.starts_with("<!DOCTYPE html>"))
        << uri << " is not an HTML5 document: " << html.substr(0, 40);
    EXPECT_NE(html.find("</html>"), std::string::npos) << uri;
    EXPECT_LT(html.size(), 200u * 1024u) << uri << " is over 200 KB";
    static const std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//)",
                                     std::regex::icase);
    EXPECT_FALSE(std::regex_search(html, external)) << uri << " loads something from elsewhere";
    EXPECT_EQ(html.find("@import"), std::string::npos) << uri;
}

TEST(Views, AClientThatDeclaresTheExtensionGetsEveryViewLinkedAndEachResourceIsSelfContained) {
    if (tools::embedded_views().empty()) GTEST_SKIP() << "built with -DAGENCY_VIEWS=OFF";
    ActionToolHarness a;
    const json tools = views_send(a, "tools/list", json::object(), kViewsUiCapabilities)["result"]["tools"];
    std::map<std::string, json> ui;
    for (const auto& t : tools)
        if (t.contains("_meta") && t["_meta"].contains("ui")) ui[t["name"]] = t["_meta"]["ui"];
    for (const auto& [tool, uri] : kViewsLinked) {
        ASSERT_TRUE(ui.contains(tool)) << tool << " carries no _meta.ui";
        EXPECT_EQ(ui[tool].value("resourceUri", ""), uri) << tool;
        if (kViewsAppOnly.contains(tool))
            EXPECT_EQ(ui[tool]["visibility"], json::array({"app"})) << tool;
        else
            EXPECT_FALSE(ui[tool].contains("visibility")) << tool << ": model and app";
    }
    EXPECT_EQ(ui.size(), kViewsLinked.size()) << "a tool links a view it should not";

    const json listed = views_send(a, "resources/list", json::object(), kViewsUiCapabilities);
    std::set<std::string> uris;
    for (const auto& r : listed["result"]["resources"])
        if (r.value("uri", "").starts_with("ui://")) {
            uris.insert(r["uri"]);
            EXPECT_EQ(r.value("mimeType", ""), "text/html;profile=mcp-app") << r.dump();
        }
    for (const auto& [tool, uri] : kViewsLinked) {
        EXPECT_TRUE(uris.contains(uri)) << uri << " (linked from " << tool << ") is not listed";
        const json read = views_send(a, "resources/read", {{"uri", uri}}, kViewsUiCapabilities);
        ASSERT_TRUE(read.contains("result")) << read.dump().substr(0, 300);
        const json& c = read["result"]["contents"][0];
        EXPECT_EQ(c.value("uri", ""), uri);
        EXPECT_EQ(c.value("mimeType", ""), "text/html;profile=mcp-app");
        EXPECT_EQ(c["_meta"]["ui"]["csp"], json::object()) << "no external origin of any kind";
        EXPECT_TRUE(c["_meta"]["ui"]["prefersBorder"].is_boolean());
        views_expect_self_contained(uri, c.value("text", ""));
    }
}

// Issue 47's budget: tools/list with every toolset, for a client that renders views (the links
// and the two app-only tools), within 32 KiB (docs/tool-budget.md has it per toolset, in
// tokens; tools/kit/listed_schema.hpp says what the published schemas leave to docs/tools.md).
TEST(Views, TheToolListOfAClientThatRendersViewsStaysWithinItsBudget) {
    ActionToolHarness a;
    const json answer = views_send(a, "tools/list", json::object(), kViewsUiCapabilities);
    const std::size_t bytes = answer.dump().size();
    std::cout << "tools/list with views: " << answer["result"]["tools"].size() << " tools, "
              << bytes << " bytes" << std::endl;
    EXPECT_LE(bytes, 32u * 1024u) << "over issue 47's budget (docs/tool-budget.md)";
}

TEST(Views, AClientWithoutTheExtensionSeesNoViewAndLosesNoAnswer) {
    ActionToolHarness a;
    for (const json& caps : {json::object(), json{{"extensions", json::object()}},
                             json{{"extensions", {{"io.modelcontextprotocol/ui",
                                                   {{"mimeTypes", {"text/html"}}}}}}}}) {
        const json tools = views_send(a, "tools/list", json::object(), caps)["result"]["tools"];
        for (const auto& t : tools) {
            EXPECT_FALSE(t.contains("_meta") && t["_meta"].contains("ui")) << t["name"];
            EXPECT_FALSE(kViewsAppOnly.contains(t["name"])) << t["name"] << " reached " << caps;
        }
        const json listed = views_send(a, "resources/list", json::object(), caps);
        for (const auto& r : listed["result"]["resources"])
            EXPECT_FALSE(r.value("uri", "").starts_with("ui://")) << r.dump();
        const json refused = views_send(a, "tools/call",
                                       {{"name", "view_ranking_history"},
                                        {"arguments", {{"client_id", kViewsLaw}, {"keyword", "x"}}}},
                                       caps);
        EXPECT_EQ(refused["error"].value("code", 0), -32602) << refused.dump();
    }
    // A linked tool's answer to a client without views is the whole answer, as before: the
    // rows in the text a model reads, the confirmation_id of the two-step confirmation.
    const json rows = a.h->call("get_audit_issues",
                                {{"client_id", kViewsLaw},
                                 {"report_id", a.h->gw->rows("seo_reports", kViewsLaw)[0]["id"]}})
                          .result;
    EXPECT_NE(rows["content"][0].value("text", "").find("recommendation"), std::string::npos);
    const json deploy = a.ok("deploy_article", {{"client_id", kViewsLaw},
                                                {"article_id", views_first_draft(a, kViewsLaw)}});
    EXPECT_TRUE(deploy.contains("confirmation_id")) << deploy.dump();
}

TEST(Views, NoUiLinksNoViewEvenForAClientThatRendersThem) {
    ActionToolHarness a;
    mcp::ServerOptions no_ui;  // serve --no-ui
    no_ui.state_secret = "tool-harness-state";
    no_ui.views = false;
    a.h->server = std::make_unique<mcp::Server>(no_ui);
    tools::register_all(*a.h->server, a.h->box, a.rt);
    const json tools = views_send(a, "tools/list", json::object(), kViewsUiCapabilities)["result"]["tools"];
    for (const auto& t : tools) {
        EXPECT_FALSE(t.contains("_meta") && t["_meta"].contains("ui")) << t["name"];
        EXPECT_FALSE(kViewsAppOnly.contains(t["name"])) << t["name"];
    }
    const json r = views_ui_call(a, "deploy_article",
                           {{"client_id", kViewsLaw}, {"article_id", views_first_draft(a, kViewsLaw)}});
    EXPECT_TRUE(r["result"]["structuredContent"].contains("confirmation_id")) << r.dump();
    EXPECT_FALSE(r["result"].contains("_meta") &&
                 r["result"]["_meta"].contains("agency-mcp/approval"));
}

// The token a view is given; the model is handed content (and may see structuredContent).
std::string views_approval_token(const json& response) {
    const json& result = response["result"];
    EXPECT_EQ(result["structuredContent"].value("status", ""), "confirmation_required")
        << response.dump().substr(0, 600);
    const std::string text = result["content"][0].value("text", "");
    const std::string token = result["_meta"]["agency-mcp/approval"].value("token", "");
    EXPECT_FALSE(token.empty()) << response.dump().substr(0, 600);
    EXPECT_EQ(text.find(token), std::string::npos) << "the model's text holds the token";
    EXPECT_EQ(result["structuredContent"].dump().find(token), std::string::npos);
    EXPECT_FALSE(result["structuredContent"].contains("confirmation_id"));
    EXPECT_EQ(text.find("cf_"), std::string::npos) << "a confirmation_id reached the model";
    return token;
}

json views_decide(ActionToolHarness& a, const std::string& token, const std::string& decision,
            const std::string& principal = "local") {
    return views_ui_call(a, "view_decide", {{"approval", token}, {"decision", decision}}, principal);
}

TEST(ApprovalView, ApproveActsOnceWithOnePostAndTheViewAloneHoldsTheToken) {
    ActionToolHarness a;
    const json args = {{"client_id", kViewsLaw}, {"article_id", views_first_draft(a, kViewsLaw)}};
    const std::string token = views_approval_token(views_ui_call(a, "deploy_article", args));
    EXPECT_EQ(a.posts("deploy_blog"), 0u) << "a preview sends nothing";

    // Another caller holding the token cannot use it; an altered token opens nothing.
    EXPECT_EQ(views_decide(a, token, "approve", "someone-else")["result"].value("isError", false), true);
    std::string altered = token;
    altered[altered.size() / 2] = altered[altered.size() / 2] == 'A' ? 'B' : 'A';
    EXPECT_TRUE(views_decide(a, altered, "approve")["result"].value("isError", false));
    EXPECT_EQ(a.posts("deploy_blog"), 0u);

    const json done = views_decide(a, token, "approve");
    EXPECT_EQ(done["result"]["structuredContent"].value("status", ""), "published") << done.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 1u);
    const json again = views_decide(a, token, "approve");
    EXPECT_TRUE(again["result"].value("isError", false)) << again.dump();
    EXPECT_NE(again.dump().find("already answered"), std::string::npos) << again.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 1u) << "a second click sent it again";
}

TEST(ApprovalView, DeclineSendsNothingAndSpendsTheToken) {
    ActionToolHarness a;
    const json drafted = a.ok("generate_outreach_email",
                              {{"client_id", kViewsLaw},
                               {"prospect", "https://legal-resources.example/guides"}});
    const json args = {{"client_id", kViewsLaw}, {"email_id", drafted.value("email_id", "")}};
    const json asked = views_ui_call(a, "send_prospect_email", args);
    const std::string token = views_approval_token(asked);
    // The view has the e-mail as it would go out: recipient and HTML body.
    const json& preview = asked["result"]["structuredContent"]["preview"];
    EXPECT_FALSE(preview.value("recipient", "").empty()) << preview.dump();
    EXPECT_FALSE(preview.value("body_html", "").empty()) << preview.dump();
    EXPECT_EQ(asked["result"]["content"][0].value("text", "").find("body_html"), std::string::npos)
        << "the full HTML is the view's, not the model's text";

    const json declined = views_decide(a, token, "decline");
    EXPECT_EQ(declined["result"].value("isError", false), true);
    EXPECT_NE(declined.dump().find("declined"), std::string::npos) << declined.dump();
    EXPECT_EQ(views_decide(a, token, "approve")["result"].value("isError", false), true);
    EXPECT_EQ(a.posts("send_prospect_email"), 0u);
}

// --confirm elicitation-only: the click in the view is not enough; the host's own form asks,
// and only its yes sends. A client that cannot show the form is refused.
TEST(ApprovalView, ElicitationOnlyStillAsksThePersonThroughTheHostsForm) {
    ActionToolHarness a({}, ActionSettings{.elicitation_only = true});
    const json args = {{"client_id", kViewsLaw}, {"article_id", views_first_draft(a, kViewsLaw)}};
    const std::string token = views_approval_token(views_ui_call(a, "deploy_article", args));
    json caps = kViewsUiCapabilities;
    caps["elicitation"] = json::object();
    const json decide_args = {{"approval", token}, {"decision", "approve"}};
    const json asked = views_send(a, "tools/call", {{"name", "view_decide"}, {"arguments", decide_args}},
                                 caps);
    ASSERT_TRUE(asked.contains("result") && asked["result"].is_object()) << asked.dump();
    ASSERT_EQ(asked["result"].value("resultType", ""), "input_required") << asked.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 0u);
    const json yes = {{"confirm", {{"action", "accept"}, {"content", {{"confirm", true}}}}}};
    const json done = views_send(a, "tools/call",
                                {{"name", "view_decide"}, {"arguments", decide_args},
                                 {"inputResponses", yes},
                                 {"requestState", asked["result"]["requestState"]}},
                                caps);
    EXPECT_EQ(done["result"]["structuredContent"].value("status", ""), "published") << done.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 1u);

    const std::string second = views_approval_token(views_ui_call(a, "deploy_article", args));
    const json no_form = views_decide(a, second, "approve");  // this client cannot elicit
    EXPECT_NE(no_form.dump().find("confirmation_required"), std::string::npos) << no_form.dump();
    EXPECT_EQ(a.posts("deploy_blog"), 1u);
}

TEST(ApprovalView, AnAutoDeployingGenerationWaitsForTheViewToo) {
    ActionToolHarness a;
    const json args = {{"client_id", kViewsPlumbing}, {"keyword", "water heater repair austin"}};
    const std::string token = views_approval_token(views_ui_call(a, "generate_article", args));
    EXPECT_EQ(a.posts("generate_blog"), 0u);
    const json done = views_decide(a, token, "approve");
    EXPECT_FALSE(done["result"].value("isError", false)) << done.dump();
    EXPECT_EQ(a.posts("generate_blog"), 1u);
}

TEST(Views, TheKeywordPickerGetsOneKeywordsPositionsOldestFirst) {
    ActionToolHarness a;
    const auto rows = a.h->gw->rows("keywords", kViewsLaw);
    const std::string keyword = rows[0].value("keyword", "");
    std::size_t expected = 0;
    for (const auto& row : rows) expected += row.value("keyword", "") == keyword;
    const json r = views_ui_call(a, "view_ranking_history", {{"client_id", kViewsLaw}, {"keyword", keyword}});
    const json& points = r["result"]["structuredContent"]["points"];
    ASSERT_TRUE(points.is_array()) << r.dump().substr(0, 400);
    EXPECT_EQ(points.size(), expected);
    for (std::size_t i = 1; i < points.size(); ++i)
        EXPECT_LE(points[i - 1].value("date", ""), points[i].value("date", ""));
}

}  // namespace
}  // namespace agency::testing
