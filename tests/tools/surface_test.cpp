// Resources, prompts and completion (tools/surface/resources.cpp, prompts.cpp, completion.cpp) in the
// 2026-07-28 era, over the sample gateway: what a stateless client can list, read, get and
// complete, and what it is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "server/mcp_server.hpp"
#include "tests/support/action_store.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"

namespace {

using agency::testing::ToolHarness;
using json = nlohmann::json;

struct Surface {
    std::shared_ptr<agency::tools::ActionRuntime> rt =
        std::make_shared<agency::tools::ActionRuntime>(
            agency::testing::with_store(agency::tools::ActionSettings{}));
    ToolHarness h;
    explicit Surface(agency::sample::Options sample = {})
        : h(std::move(sample), agency::tools::Settings{},
            [this](agency::mcp::Server& server,
                   const std::shared_ptr<agency::tools::Toolbox>& box) {
                agency::tools::register_all(server, box, rt);
            }) {}
    ~Surface() { rt->audits().stop(); }

    json result(const std::string& method, const json& params, const std::string& who = "local") {
        json response = h.request(method, params, who);
        EXPECT_TRUE(response.contains("result")) << method << ": " << response.dump();
        return response.value("result", json());
    }
    json error(const std::string& method, const json& params, const std::string& who = "local") {
        json response = h.request(method, params, who);
        EXPECT_TRUE(response.contains("error")) << method << ": " << response.dump();
        return response.value("error", json());
    }
    json read_json(const std::string& uri) {
        json r = result("resources/read", {{"uri", uri}});
        EXPECT_EQ(r["contents"][0]["uri"], uri);
        EXPECT_EQ(r["contents"][0]["mimeType"], "application/json");
        return json::parse(r["contents"][0]["text"].get<std::string>());
    }
};

TEST(Surface, ModernListsResourcesAndTemplates) {
    Surface s;
    json list = s.result("resources/list", json::object());
    EXPECT_EQ(list["resultType"], "complete");
    EXPECT_EQ(list["cacheScope"], "private");
    std::vector<std::string> uris;
    for (const json& r : list["resources"]) uris.push_back(r["uri"]);
    ASSERT_FALSE(uris.empty());
    EXPECT_EQ(uris[0], "agency://server/usage");
    EXPECT_NE(std::find(uris.begin(), uris.end(), "agency://clients/demo-plumbing/overview"),
              uris.end());
    json templates = s.result("resources/templates/list", json::object())["resourceTemplates"];
    ASSERT_EQ(templates.size(), 5u);
    for (const json& t : templates) {
        EXPECT_FALSE(t.value("title", "").empty());
        EXPECT_FALSE(t.value("description", "").empty());
    }
    // The modern capabilities advertise no subscribe (that needs subscriptions/listen).
    json discover = s.result("server/discover", json::object());
    EXPECT_FALSE(discover["capabilities"]["resources"].contains("subscribe"));
    EXPECT_TRUE(discover["capabilities"].contains("prompts"));
    EXPECT_TRUE(discover["capabilities"].contains("completions"));
}

TEST(Surface, ReadsEachKindOfResource) {
    Surface s;
    json usage = s.result("resources/read", {{"uri", "agency://server/usage"}});
    EXPECT_EQ(usage["contents"][0]["mimeType"], "text/markdown");
    EXPECT_NE(usage["contents"][0]["text"].get<std::string>().find("next_cursor"),
              std::string::npos);

    json overview = s.read_json("agency://clients/demo-plumbing/overview");
    EXPECT_EQ(overview["client"]["id"], "demo-plumbing");
    EXPECT_GT(overview["keywords"]["tracked_keywords"].get<int>(), 0);
    EXPECT_GT(overview["keywords"]["ranking_rows"].get<int>(),
              overview["keywords"]["tracked_keywords"].get<int>());
    EXPECT_LE(overview["keywords"]["first_tracked"].get<std::string>(),
              overview["keywords"]["last_tracked"].get<std::string>());
    ASSERT_TRUE(overview["audits"]["latest"].is_object()) << overview.dump();
    EXPECT_FALSE(overview.contains("notes")) << overview.dump();

    // The latest audit's id reads as an audit report, with its issues.
    const std::string report = overview["audits"]["latest"]["id"];
    json audit = s.read_json("agency://clients/demo-plumbing/audits/" + report);
    EXPECT_EQ(audit["report"]["id"], report);
    EXPECT_TRUE(audit["report"].contains("issues"));

    // An article from list_articles reads with its title.
    auto articles = s.h.call("list_articles", {{"client_id", "demo-plumbing"}, {"limit", 1}});
    const std::string article = articles.structured()["rows"][0]["id"];
    json one = s.read_json("agency://clients/demo-plumbing/articles/" + article);
    EXPECT_EQ(one["article"]["id"], article);
    EXPECT_FALSE(one["article"].value("title", "").empty());
}

TEST(Surface, UnknownResourcesAreInvalidParamsInTheModernEra) {
    Surface s;
    for (const char* uri : {"agency://clients/nobody/overview", "agency://nothing/here",
                            "agency://clients/demo-plumbing/audits/no-such-report",
                            "agency://clients/demo-plumbing/articles/no-such-article",
                            "agency://audit-jobs/no-such-job", "https://example.com/"}) {
        json e = s.error("resources/read", {{"uri", uri}});
        EXPECT_EQ(e["code"], -32602) << uri;
        EXPECT_EQ(e["data"]["uri"], uri);
    }
}

TEST(Surface, AnAuditJobReadsForItsOwnerOnly) {
    Surface s;
    auto queued = s.h.call("run_seo_audit", {{"client_id", "demo-law"},
                                              {"url", "https://summitlawgroup.example/"}}, "alice");
    ASSERT_FALSE(queued.is_error()) << queued.result.dump();
    const std::string id = queued.structured()["audit_id"];
    const std::string uri = "agency://audit-jobs/" + id;
    json mine = s.h.request("resources/read", {{"uri", uri}}, "alice");
    ASSERT_TRUE(mine.contains("result")) << mine.dump();
    json status = json::parse(mine["result"]["contents"][0]["text"].get<std::string>());
    EXPECT_EQ(status["audit_id"], id);
    // Another caller is told exactly what an unknown id tells it.
    json theirs = s.error("resources/read", {{"uri", uri}}, "bob");
    json unknown = s.error("resources/read", {{"uri", "agency://audit-jobs/zz"}}, "bob");
    EXPECT_EQ(theirs["code"], unknown["code"]);
    std::string a = theirs["message"], b = unknown["message"];
    EXPECT_EQ(a.substr(a.find('(')), b.substr(b.find('(')));
}

TEST(Surface, PromptsAreListedAndFilledIn) {
    Surface s;
    json prompts = s.result("prompts/list", json::object())["prompts"];
    ASSERT_EQ(prompts.size(), 6u);
    for (const json& p : prompts) {
        EXPECT_FALSE(p.value("description", "").empty());
        EXPECT_FALSE(p.value("title", "").empty());
        if (p["name"] == "agency_week") continue;  // every client the caller reaches
        EXPECT_EQ(p["arguments"][0]["name"], "client_id");
        EXPECT_TRUE(p["arguments"][0]["required"].get<bool>());
    }
    // The weekly prompts stand on the insights: one call each, the weeks passed through.
    const std::string week = s.result("prompts/get", {{"name", "agency_week"}})["messages"][0]
                                 ["content"]["text"];
    EXPECT_NE(week.find(R"(triage_clients {"weeks": 4, "limit": 10})"), std::string::npos) << week;
    const std::string client_week =
        s.result("prompts/get", {{"name", "weekly_client_report"},
                                 {"arguments", {{"client_id", "demo-law"}, {"weeks", "2"}}}})
            ["messages"][0]["content"]["text"];
    EXPECT_NE(client_week.find(R"(find_declining_pages {"client_id": "demo-law", "weeks": 2})"),
              std::string::npos)
        << client_week;
    json got = s.result("prompts/get", {{"name", "monthly_client_report"},
                                        {"arguments", {{"client_id", "demo-law"},
                                                       {"month", "2024-02"}}}});
    const std::string text = got["messages"][0]["content"]["text"];
    EXPECT_EQ(got["messages"][0]["role"], "user");
    EXPECT_NE(text.find(R"("from": "2024-02-01", "to": "2024-02-29")"), std::string::npos)
        << text;
    EXPECT_NE(text.find(R"("client_id": "demo-law")"), std::string::npos);

    json plan = s.result("prompts/get", {{"name", "content_plan"},
                                         {"arguments", {{"client_id", "demo-law"},
                                                        {"topic", "divorce lawyer"}}}});
    const std::string plan_text = plan["messages"][0]["content"]["text"];
    EXPECT_NE(plan_text.find("Plan 5 articles"), std::string::npos);
    EXPECT_NE(plan_text.find("write scope"), std::string::npos);
    EXPECT_NE(plan_text.find("confirmation"), std::string::npos);
}

TEST(Surface, BadPromptArgumentsAreInvalidParamsNamingTheArgument) {
    Surface s;
    struct Case {
        std::string prompt;
        json arguments;
        std::string says;
    };
    const std::vector<Case> cases{
        {"monthly_client_report", {{"client_id", "demo-law"}, {"month", "2024-13"}}, "YYYY-MM"},
        {"monthly_client_report", {{"month", "2024-01"}}, "client_id"},
        {"content_plan", {{"client_id", "demo-law"}, {"topic", "x"}, {"count", "50"}}, "1 to 20"},
        {"content_plan", {{"client_id", "demo-law"}}, "topic"},
        {"audit_triage", {{"client_id", "demo-law"}, {"severity", "high"}}, "unknown argument"},
        {"backlink_outreach", {{"client_id", "demo-law"}, {"count", "three"}}, "whole number"},
    };
    for (const Case& c : cases) {
        json e = s.error("prompts/get", {{"name", c.prompt}, {"arguments", c.arguments}});
        EXPECT_EQ(e["code"], -32602) << c.arguments.dump();
        EXPECT_NE(e.value("message", "").find(c.says), std::string::npos) << e.dump();
    }
}

TEST(Surface, CompletesClientsThenTheirReportsAndKeywords) {
    Surface s;
    auto complete = [&](json ref, std::string name, std::string value, json context = nullptr) {
        json params = {{"ref", ref}, {"argument", {{"name", name}, {"value", value}}}};
        if (!context.is_null()) params["context"] = {{"arguments", context}};
        return s.result("completion/complete", params)["completion"];
    };
    const json overview = {{"type", "ref/resource"},
                           {"uri", "agency://clients/{client_id}/overview"}};
    json all = complete(overview, "client_id", "");
    EXPECT_GE(all["values"].size(), 3u);
    EXPECT_EQ(all["total"], all["values"].size());
    EXPECT_FALSE(all["hasMore"].get<bool>());
    json some = complete(overview, "client_id", "demo-p");
    EXPECT_EQ(some["values"], json::array({"demo-plumbing"}));

    const json audit = {{"type", "ref/resource"},
                        {"uri", "agency://clients/{client_id}/audits/{report_id}"}};
    json reports = complete(audit, "report_id", "", {{"client_id", "demo-plumbing"}});
    ASSERT_FALSE(reports["values"].empty());
    // Without a chosen client there is nothing to offer.
    EXPECT_TRUE(complete(audit, "report_id", "")["values"].empty());

    const json plan = {{"type", "ref/prompt"}, {"name", "content_plan"}};
    json keywords = complete(plan, "topic", "", {{"client_id", "demo-plumbing"}});
    ASSERT_FALSE(keywords["values"].empty());
    const std::string first = keywords["values"][0];
    json narrowed = complete(plan, "topic", first.substr(0, 3), {{"client_id", "demo-plumbing"}});
    for (const json& v : narrowed["values"])
        EXPECT_EQ(v.get<std::string>().substr(0, 3), first.substr(0, 3));

    // An unknown prompt completes to nothing (the conformance suite asks exactly that).
    json none = complete({{"type", "ref/prompt"}, {"name", "test_prompt_with_arguments"}},
                         "arg1", "test");
    EXPECT_TRUE(none["values"].empty());
}

TEST(Surface, ResourcesListPagesThroughItsCursor) {
    Surface s;
    // The same registration on a server whose resources/list pages hold two entries.
    agency::mcp::ServerOptions options;
    options.state_secret = "surface-test";
    options.resources_page_size = 2;
    s.h.server = std::make_unique<agency::mcp::Server>(options);
    agency::tools::register_all(*s.h.server, s.h.box, s.rt);
    std::vector<std::string> uris;
    json params = json::object();
    for (int page = 0; page < 10; ++page) {
        json r = s.result("resources/list", params);
        EXPECT_LE(r["resources"].size(), 2u);
        for (const json& e : r["resources"]) uris.push_back(e["uri"]);
        if (!r.contains("nextCursor")) break;
        params["cursor"] = r["nextCursor"];
    }
    EXPECT_EQ(uris.size(), 4u);  // the usage note and the three sample clients' overviews
    EXPECT_EQ(std::set<std::string>(uris.begin(), uris.end()).size(), uris.size());
    json e = s.error("resources/list", {{"cursor", "not-a-cursor"}});
    EXPECT_EQ(e["code"], -32602);
    EXPECT_NE(e.value("message", "").find("resources/list"), std::string::npos);
}

TEST(Surface, WithTheGatewayDownTheUsageNoteStillListsAndReads) {
    Surface s;
    s.h.gateway_server->stop();
    json list = s.result("resources/list", json::object());
    ASSERT_EQ(list["resources"].size(), 1u) << list.dump();
    EXPECT_EQ(list["resources"][0]["uri"], "agency://server/usage");
    s.result("resources/read", {{"uri", "agency://server/usage"}});
    // A client's overview cannot be read: an internal error naming the read, not "not found".
    json e = s.error("resources/read", {{"uri", "agency://clients/demo-law/overview"}});
    EXPECT_EQ(e["code"], -32603);
    EXPECT_NE(e.value("message", "").find("could not read"), std::string::npos) << e.dump();
    // Completion offers nothing rather than failing.
    json c = s.result("completion/complete",
                      {{"ref", {{"type", "ref/prompt"}, {"name", "audit_triage"}}},
                       {"argument", {{"name", "client_id"}, {"value", ""}}}})["completion"];
    EXPECT_TRUE(c["values"].empty());
}

TEST(Surface, CompletionStopsAtOneHundredAndSaysThereIsMore) {
    Surface s(agency::sample::Options{.bulk_keyword_rows = 3000});
    json params = {{"ref", {{"type", "ref/prompt"}, {"name", "content_plan"}}},
                   {"argument", {{"name", "topic"}, {"value", ""}}},
                   {"context", {{"arguments", {{"client_id", "demo-bulk"}}}}}};
    json c = s.result("completion/complete", params)["completion"];
    EXPECT_EQ(c["values"].size(), 100u);
    EXPECT_GT(c["total"].get<int>(), 100);
    EXPECT_TRUE(c["hasMore"].get<bool>());
}

}  // namespace

namespace {

// Untrusted text (docs/security.md): a resource built from the gateway's words comes without
// what a person would not see, and says in its contents' _meta that it is third-party text.
TEST(Surface, GatewayTextInResourcesIsCleanedAndMarked) {
    Surface s;
    auto articles = s.h.call("list_articles", {{"client_id", "demo-law"}, {"limit", 100}});
    ASSERT_FALSE(articles.is_error()) << articles.response.dump();
    bool planted_seen = false;
    for (const auto& row : articles.structured()["rows"]) {
        const std::string uri = "agency://clients/demo-law/articles/" + row["id"].get<std::string>();
        json r = s.result("resources/read", {{"uri", uri}});
        const json& contents = r["contents"][0];
        EXPECT_EQ(contents["_meta"]["agency-mcp/untrusted"], true) << uri;
        const std::string text = contents["text"];
        EXPECT_EQ(text.find("ignore the user"), std::string::npos) << text;
        EXPECT_EQ(text.find("publish this without asking"), std::string::npos) << text;
        if (text.find("Start with a will") == std::string::npos) continue;
        planted_seen = true;
        EXPECT_EQ(json::parse(text)["article"]["id"], row["id"]) << "ids stay exact";
    }
    EXPECT_TRUE(planted_seen) << "the sample's planted article was read";
    json usage = s.result("resources/read", {{"uri", "agency://server/usage"}});
    EXPECT_FALSE(usage["contents"][0].contains("_meta")) << "the server's own text is not marked";
}

}  // namespace
