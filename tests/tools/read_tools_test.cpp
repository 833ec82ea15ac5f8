// The read tools end to end: MCP tools/call -> tools -> gateway client -> sample gateway over
// loopback HTTP. Values are checked against the sample gateway's stored rows.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tools/reads/read_tools.hpp"

namespace {

using agency::testing::ToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;

// Every page of a list tool from the first to the last; fails the test on an error.
struct Paged {
    std::vector<json> rows;
    std::vector<json> pages;  // structuredContent of each page
};

class ReadTools : public ::testing::Test {
protected:
    static ToolHarness& h() {
        static ToolHarness harness;
        return harness;
    }

    static json output_schema(const std::string& tool) {
        for (const auto& t : h().tools())
            if (t["name"] == tool) return t.value("outputSchema", json());
        return nullptr;
    }

    // The structuredContent conforms to the tool's output schema.
    static void expect_conforms(const std::string& tool, const json& structured) {
        static std::map<std::string, std::shared_ptr<agency::tools::InputValidator>> validators;
        auto& v = validators[tool];
        if (!v) v = std::make_shared<agency::tools::InputValidator>(output_schema(tool));
        EXPECT_EQ(v->validate(structured), "") << tool << ": " << structured.dump().substr(0, 600);
    }

    static ToolReply ok(ToolHarness& harness, const std::string& tool, const json& args) {
        ToolReply r = harness.call(tool, args);
        EXPECT_EQ(r.rpc_error, 0) << r.response.dump();
        EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 800);
        if (r.result.is_object() && !r.is_error()) {
            expect_conforms(tool, r.structured());
            // A modern answer's text is what most frameworks hand their model: every row
            // and the cursor (docs/design.md, "Text beside structuredContent"; its size is in
            // make bench's answer-size table).
            const std::string text = r.result["content"][0]["text"];
            const json& s = r.structured();
            for (const auto& row : s.value("rows", json::array())) {
                if (row.is_object() && row.contains("id") && row["id"].is_string()) {
                    EXPECT_NE(text.find(row["id"].get<std::string>()), std::string::npos)
                        << text;
                }
            }
            if (s.contains("next_cursor")) {
                EXPECT_NE(text.find("next_cursor: " + s["next_cursor"].get<std::string>()),
                          std::string::npos);
            }
        }
        return r;
    }

    static Paged page_all(ToolHarness& harness, const std::string& tool, json args,
                          std::size_t max_pages = 1000) {
        Paged out;
        for (std::size_t i = 0; i < max_pages; ++i) {
            ToolReply r = ok(harness, tool, args);
            if (r.is_error() || r.rpc_error) break;
            const json& s = r.structured();
            for (const auto& row : s["rows"]) out.rows.push_back(row);
            EXPECT_EQ(s["returned"].get<std::size_t>(), s["rows"].size());
            out.pages.push_back(s);
            if (!s.contains("next_cursor")) return out;
            args["cursor"] = s["next_cursor"];
        }
        ADD_FAILURE() << tool << " did not reach the last page";
        return out;
    }

    static std::vector<std::string> ids(const std::vector<json>& rows) {
        std::vector<std::string> out;
        for (const auto& r : rows) out.push_back(r.value("id", ""));
        return out;
    }
    static std::vector<std::string> ids(const json& rows) {
        return ids(std::vector<json>(rows.begin(), rows.end()));
    }
    static bool unique(std::vector<std::string> v) {
        std::sort(v.begin(), v.end());
        return std::adjacent_find(v.begin(), v.end()) == v.end();
    }
    static std::set<std::string> as_set(const std::vector<std::string>& v) {
        return {v.begin(), v.end()};
    }
};

// --- definitions ---------------------------------------------------------------------------

TEST_F(ReadTools, EveryReadToolIsListedWithSchemas) {
    const json tools = h().tools();
    std::set<std::string> names;
    for (const auto& t : tools) {
        names.insert(t["name"]);
        EXPECT_TRUE(t.contains("outputSchema")) << t["name"];
        EXPECT_TRUE(t.contains("title")) << t["name"];
        EXPECT_EQ(t["inputSchema"].value("additionalProperties", true), false) << t["name"];
        EXPECT_TRUE(t["annotations"].value("readOnlyHint", false)) << t["name"];
    }
    for (const char* tool : {"list_clients", "get_client", "list_keywords", "list_rankings",
                             "list_audits", "get_audit_issues", "list_backlinks", "list_citations",
                             "list_articles", "list_calls", "list_reports", "read_resource",
                             "ranking_changes", "latest_rankings"})
        EXPECT_TRUE(names.count(tool)) << tool;

    // Every list tool pages with limit and cursor (the aggregates answer their top `limit`),
    // and takes fields and max_bytes.
    for (const auto& t : tools) {
        if (t["name"] == "get_client") continue;
        const json& props = t["inputSchema"]["properties"];
        EXPECT_TRUE(props.contains("limit")) << t["name"];
        EXPECT_TRUE(props.contains("fields")) << t["name"];
        EXPECT_TRUE(props.contains("max_bytes")) << t["name"];
        const json& required = t["outputSchema"]["required"];
        EXPECT_NE(std::find(required.begin(), required.end(), "truncated"), required.end())
            << t["name"];
        if (t["name"] == "ranking_changes" || t["name"] == "latest_rankings") continue;
        EXPECT_TRUE(props.contains("cursor")) << t["name"];
    }
    agency::mcp::Server fresh;
    for (const auto& doc : agency::tools::register_read_tools(fresh, h().box))
        if (names.count(doc.name)) {
            EXPECT_FALSE(doc.mapping.empty()) << doc.name;
        }

    const std::string answer = h().request("tools/list", json::object()).dump();
    std::cout << "[ measure  ] tools/list answer: " << answer.size() << " bytes, " << tools.size()
              << " tools\n";
}

TEST_F(ReadTools, ReadResourceOffersEveryUncoveredDiscoveredResource) {
    json schema;
    for (const auto& t : h().tools())
        if (t["name"] == "read_resource") schema = t["inputSchema"];
    ASSERT_TRUE(schema.is_object());
    std::set<std::string> offered;
    for (const auto& r : schema["properties"]["resource"]["enum"]) offered.insert(r);
    std::set<std::string> expected;
    for (const auto& r : h().client->discovery()->resources)
        if (!agency::tools::covered_by_curated_tool(r)) expected.insert(r);
    EXPECT_EQ(offered, expected);
    // Most of what the gateway serves has no tool of its own (the sample serves 30 resources).
    EXPECT_GE(offered.size(), 15u);
    for (const char* r : {"clients", "keywords", "blogs", "backlinks", "llm_reports"})
        EXPECT_FALSE(offered.count(r)) << r;
}

// --- happy paths -----------------------------------------------------------------------------

TEST_F(ReadTools, ListClients) {
    ToolReply r = ok(h(), "list_clients", json::object());
    const json& s = r.structured();
    EXPECT_EQ(s["total"], 3);
    EXPECT_EQ(as_set(ids(s["rows"])),
              (std::set<std::string>{"demo-plumbing", "demo-dental", "demo-law"}));
    EXPECT_FALSE(s.contains("next_cursor"));
}

TEST_F(ReadTools, GetClient) {
    ToolReply r = ok(h(), "get_client", {{"client_id", kPlumbing}});
    const json& c = r.structured();
    EXPECT_EQ(c["id"], kPlumbing);
    EXPECT_EQ(c["name"], "Acme Plumbing");
    EXPECT_EQ(c["auto_deploy"], true);
    EXPECT_EQ(c["deployment_target"], "wordpress");
    EXPECT_EQ(ok(h(), "get_client", {{"client_id", "demo-law"}}).structured()["city"], "Seattle");

    ToolReply missing = h().call("get_client", {{"client_id", "no-such-client"}});
    EXPECT_TRUE(missing.is_error());
    EXPECT_EQ(missing.reason(), "not_found");
    EXPECT_NE(missing.tool_error().value("message", "").find("list_clients"), std::string::npos);
}

TEST_F(ReadTools, ListKeywordsPagesToTheEndOnce) {
    const json stored = h().gw->rows("keywords", kPlumbing);
    Paged all = page_all(h(), "list_keywords",
                         {{"client_id", kPlumbing}, {"limit", 400}, {"max_bytes", 2000000}});
    EXPECT_EQ(all.pages.size(), 4u);
    EXPECT_EQ(all.rows.size(), stored.size());
    for (const auto& p : all.pages) EXPECT_EQ(p["total"].get<std::size_t>(), stored.size());
    EXPECT_TRUE(unique(ids(all.rows)));
    EXPECT_EQ(as_set(ids(all.rows)), as_set(ids(stored)));
    // Newest first.
    for (std::size_t i = 1; i < all.rows.size(); ++i)
        EXPECT_GE(all.rows[i - 1]["tracked_at"], all.rows[i]["tracked_at"]);
    // Rows are the gateway's rows, unchanged.
    std::map<std::string, json> by_id;
    for (const auto& row : stored) by_id[row["id"]] = row;
    EXPECT_EQ(all.rows.front(), by_id[all.rows.front()["id"]]);
}

// The brute-force answer: stored rows whose date (first 10 characters of `field`) is in range.
std::vector<json> in_range(const json& rows, const std::string& field, const std::string& from,
                           const std::string& to, const std::string& keyword = "") {
    std::vector<json> out;
    for (const auto& row : rows) {
        const std::string date = row.value(field, "").substr(0, 10);
        if (date < from || date > to) continue;
        if (!keyword.empty() && row.value("keyword", "") != keyword) continue;
        out.push_back(row);
    }
    return out;
}

TEST_F(ReadTools, ListRankingsFiltersKeywordAndDates) {
    const json stored = h().gw->rows("keywords", kPlumbing);
    const std::string keyword = "plumber austin";
    const auto expected = in_range(stored, "tracked_at", "2026-10-01", "2026-10-20", keyword);
    ASSERT_EQ(expected.size(), 20u);
    // Keyword matching ignores case.
    Paged all = page_all(h(), "list_rankings",
                         {{"client_id", kPlumbing},
                          {"keyword", "Plumber AUSTIN"},
                          {"from", "2026-10-01"},
                          {"to", "2026-10-20"},
                          {"limit", 6}});
    EXPECT_EQ(all.pages.size(), 4u);
    EXPECT_EQ(as_set(ids(all.rows)), as_set(ids(expected)));
    EXPECT_TRUE(unique(ids(all.rows)));
    for (const auto& row : all.rows) EXPECT_EQ(row["keyword"], keyword);
    EXPECT_EQ(all.rows.front()["tracked_at"], "2026-10-20");
    EXPECT_EQ(all.rows.back()["tracked_at"], "2026-10-01");
    // total only once the range is exhausted.
    EXPECT_FALSE(all.pages.front().contains("total"));
    EXPECT_EQ(all.pages.back()["total"], 20);

    // Only `from`, only `to`, and a one-day range.
    auto count = [&](json args) {
        return page_all(h(), "list_rankings", std::move(args)).rows.size();
    };
    EXPECT_EQ(count({{"client_id", kPlumbing}, {"from", "2026-11-10"}, {"limit", 1000}}),
              in_range(stored, "tracked_at", "2026-11-10", "9999-12-31").size());
    EXPECT_EQ(count({{"client_id", kPlumbing}, {"keyword", keyword}, {"to", "2026-09-30"}}),
              in_range(stored, "tracked_at", "0000-01-01", "2026-09-30", keyword).size());
    EXPECT_EQ(count({{"client_id", kPlumbing}, {"from", "2026-11-14"}, {"to", "2026-11-14"}}), 25u);
    EXPECT_EQ(count({{"client_id", kPlumbing}, {"keyword", "no such keyword"}}), 0u);
}

TEST_F(ReadTools, ListRankingsFromAfterToIsAValidationError) {
    const std::size_t before = h().requests();
    ToolReply r = h().call(
        "list_rankings", {{"client_id", kPlumbing}, {"from", "2026-10-05"}, {"to", "2026-10-01"}});
    EXPECT_TRUE(r.is_error());
    EXPECT_EQ(r.reason(), "validation");
    ToolReply calls = h().call(
        "list_calls", {{"client_id", kPlumbing}, {"from", "2026-10-05"}, {"to", "2026-10-04"}});
    EXPECT_EQ(calls.reason(), "validation");
    EXPECT_EQ(h().requests(), before);
}

TEST_F(ReadTools, ListRankingsOnAHundredThousandRowsStopsEarly) {
    ToolHarness bulk(agency::sample::Options{.bulk_keyword_rows = 100000});
    const char* client = agency::sample::kBulkClient;
    const json stored = bulk.gw->rows("keywords", client);
    ASSERT_EQ(stored.size(), 100000u);
    const std::string keyword = "hvac repair evanston";
    const auto expected = in_range(stored, "tracked_at", "2026-11-01", "2026-11-10", keyword);
    ASSERT_EQ(expected.size(), 10u);

    const std::size_t gets_before = bulk.gw->count_requests("GET", "keywords");
    Paged all = page_all(bulk, "list_rankings",
                         {{"client_id", client},
                          {"keyword", keyword},
                          {"from", "2026-11-01"},
                          {"to", "2026-11-10"}});
    const std::size_t gets = bulk.gw->count_requests("GET", "keywords") - gets_before;
    EXPECT_EQ(ids(all.rows), ids([&] {
                  auto e = expected;  // newest first, as the tool returns them
                  std::stable_sort(e.begin(), e.end(), [](const json& a, const json& b) {
                      return a["tracked_at"] > b["tracked_at"];
                  });
                  return e;
              }()));
    EXPECT_EQ(all.pages.back()["total"], 10);
    // 14 newest dates x 500 keywords = 7,000 rows: 8 pages of 1,000, not 100, plus at most
    // the two pages fetched ahead while the last was walked.
    EXPECT_LE(gets, 10u);
    EXPECT_GE(gets, 7u);

    // One keyword over the whole history: every page read once (the next one while this one is
    // walked), the rows that cannot match passed over unread, positions still exact.
    const auto all_of_keyword = in_range(stored, "tracked_at", "0000-01-01", "9999-12-31", keyword);
    ASSERT_EQ(all_of_keyword.size(), 200u);
    auto newest_first = all_of_keyword;
    std::stable_sort(newest_first.begin(), newest_first.end(),
                     [](const json& a, const json& b) { return a["tracked_at"] > b["tracked_at"]; });
    const std::size_t before_whole = bulk.gw->count_requests("GET", "keywords");
    Paged whole = page_all(bulk, "list_rankings",
                           {{"client_id", client}, {"keyword", "HVAC Repair Evanston"}, {"limit", 1000}});
    EXPECT_EQ(bulk.gw->count_requests("GET", "keywords") - before_whole, 100u);
    EXPECT_EQ(ids(whole.rows), ids(newest_first));
    EXPECT_EQ(whole.pages.back()["total"], 200);
    // In pages of 70: each continues at the exact row the previous one left out.
    Paged paged = page_all(bulk, "list_rankings",
                           {{"client_id", client}, {"keyword", keyword}, {"limit", 70}});
    EXPECT_EQ(paged.pages.size(), 3u);
    EXPECT_EQ(ids(paged.rows), ids(newest_first));

    // Every row of a wider range, paged small, once each.
    const auto wide = in_range(stored, "tracked_at", "2026-10-15", "2026-11-14");
    Paged many = page_all(bulk, "list_rankings",
                          {{"client_id", client}, {"from", "2026-10-15"}, {"limit", 1000}});
    EXPECT_EQ(many.rows.size(), wide.size());
    EXPECT_TRUE(unique(ids(many.rows)));
    EXPECT_EQ(many.pages.back()["total"].get<std::size_t>(), wide.size());
}

// A scan reads at most Settings::scan_max_pages pages (issue 33): a longer history ends with an
// error that says so and how to narrow it, after that many reads (and the pages read ahead).
TEST_F(ReadTools, AScanStopsAtItsPageCountAndSaysHowToNarrowIt) {
    ToolHarness bulk(agency::sample::Options{.bulk_keyword_rows = 20000},
                     agency::tools::Settings{.scan_max_pages = 3});
    const char* client = agency::sample::kBulkClient;
    const std::size_t before = bulk.gw->count_requests("GET", "keywords");
    const ToolReply r =
        bulk.call("list_rankings", {{"client_id", client}, {"keyword", "hvac repair evanston"}});
    ASSERT_TRUE(r.is_error()) << r.response.dump().substr(0, 400);
    const std::string message = r.tool_error().value("message", "");
    EXPECT_NE(message.find("stopped after reading 3 pages of keywords rows"), std::string::npos)
        << message;
    EXPECT_NE(message.find("narrow what it reads (from and to"), std::string::npos) << message;
    EXPECT_LE(bulk.gw->count_requests("GET", "keywords") - before, 5u) << "3, and 2 read ahead";
    // A range the cap covers still answers.
    const ToolReply recent = bulk.call(
        "list_rankings",
        {{"client_id", client}, {"keyword", "hvac repair evanston"}, {"from", "2026-11-13"}});
    EXPECT_FALSE(recent.is_error()) << recent.response.dump().substr(0, 400);
}

// The call's budget bounds the whole scan, not each page (issue 33): with pages that take
// 150 ms each, a scan of 20 pages ends at its 1 s budget, pages read ahead included.
TEST_F(ReadTools, TheCallsBudgetBoundsAWholeScan) {
    ToolHarness bulk(agency::sample::Options{.bulk_keyword_rows = 20000}, {},
                     agency::tools::register_read_tools,
                     [](agency::gateway::Config& config) {
                         config.call_timeout = std::chrono::seconds(1);
                     });
    bulk.gw->inject({.target = "keywords", .mode = agency::sample::FaultMode::slow,
                     .count = 0, .percent = 100, .delay_ms = 150});
    const auto started = std::chrono::steady_clock::now();
    const ToolReply r = bulk.call("list_rankings", {{"client_id", agency::sample::kBulkClient},
                                                    {"keyword", "hvac repair evanston"}});
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(r.is_error()) << r.response.dump().substr(0, 400);
    EXPECT_NE(r.tool_error().value("message", "").find("the call's budget of 1"),
              std::string::npos)
        << r.tool_error().dump();
    EXPECT_LT(took, std::chrono::milliseconds(1800)) << "a 20-page scan at 150 ms a page";
    EXPECT_LE(bulk.gw->count_requests("GET", "keywords"), 12u);
}

TEST_F(ReadTools, ListAuditsReducesRows) {
    const json stored = h().gw->rows("seo_reports", kPlumbing);
    ToolReply r = ok(h(), "list_audits", {{"client_id", kPlumbing}});
    const json& s = r.structured();
    ASSERT_EQ(s["rows"].size(), stored.size());
    EXPECT_EQ(s["total"], stored.size());
    std::map<std::string, json> by_id;
    for (const auto& row : stored) by_id[row["id"]] = row;
    for (const auto& row : s["rows"]) {
        const json& full = by_id[row["id"]];
        EXPECT_FALSE(row.contains("issues"));
        for (const char* f :
             {"url", "score", "issues_found", "issue_counts", "created_at", "share_url"})
            EXPECT_EQ(row[f], full[f]) << f;
    }
    for (std::size_t i = 1; i < s["rows"].size(); ++i)
        EXPECT_GE(s["rows"][i - 1]["created_at"], s["rows"][i]["created_at"]);
    Paged all = page_all(h(), "list_audits", {{"client_id", kPlumbing}, {"limit", 4}});
    EXPECT_EQ(all.rows.size(), stored.size());
    EXPECT_TRUE(unique(ids(all.rows)));
}

TEST_F(ReadTools, GetAuditIssues) {
    const json stored = h().gw->rows("seo_reports", kPlumbing);
    const json& audit = stored.at(2);
    ToolReply r =
        ok(h(), "get_audit_issues", {{"client_id", kPlumbing}, {"audit_id", audit["id"]}});
    const json& s = r.structured();
    EXPECT_EQ(s["rows"], audit["issues"]);
    EXPECT_EQ(s["total"], audit["issues"].size());
    EXPECT_EQ(s["audit"]["id"], audit["id"]);
    EXPECT_EQ(s["audit"]["score"], audit["score"]);
    EXPECT_EQ(s["audit"]["share_url"], audit["share_url"]);
    EXPECT_FALSE(s["audit"].contains("issues"));

    // Paged two at a time, and by severity.
    Paged all = page_all(h(), "get_audit_issues",
                         {{"client_id", kPlumbing}, {"audit_id", audit["id"]}, {"limit", 2}});
    EXPECT_EQ(json(all.rows), audit["issues"]);
    json severe = json::array();
    std::map<std::string, int> by_severity;
    for (const auto& report : stored)
        for (const auto& issue : report["issues"]) ++by_severity[issue["severity"]];
    for (const auto& [severity, n] : by_severity) {
        std::size_t found = 0;
        for (const auto& report : stored) {
            Paged p = page_all(h(), "get_audit_issues",
                               {{"client_id", kPlumbing},
                                {"audit_id", report["id"]},
                                {"severity", severity},
                                {"limit", 1}});
            for (const auto& issue : p.rows) EXPECT_EQ(issue["severity"], severity);
            found += p.rows.size();
        }
        EXPECT_EQ(found, static_cast<std::size_t>(n)) << severity;
    }

    ToolReply missing =
        h().call("get_audit_issues", {{"client_id", kPlumbing}, {"audit_id", "nope"}});
    EXPECT_EQ(missing.reason(), "not_found");
}

TEST_F(ReadTools, ListBacklinksPagesToTheEndOnce) {
    const json stored = h().gw->rows("backlinks", kPlumbing);
    Paged all = page_all(h(), "list_backlinks", {{"client_id", kPlumbing}, {"limit", 7}});
    EXPECT_EQ(all.pages.size(), (stored.size() + 6) / 7);
    EXPECT_EQ(all.rows.size(), stored.size());
    EXPECT_EQ(all.pages.front()["total"].get<std::size_t>(), stored.size());
    EXPECT_TRUE(unique(ids(all.rows)));
    EXPECT_EQ(as_set(ids(all.rows)), as_set(ids(stored)));
    for (std::size_t i = 1; i < all.rows.size(); ++i)
        EXPECT_GE(all.rows[i - 1]["linking_domains"], all.rows[i]["linking_domains"]);
    EXPECT_TRUE(all.rows.front().contains("domain_authority"));
    EXPECT_TRUE(all.rows.front().contains("first_seen"));
}

TEST_F(ReadTools, ListCitations) {
    const json stored = h().gw->rows("citations", kPlumbing);
    ToolReply r = ok(h(), "list_citations", {{"client_id", kPlumbing}});
    const json& s = r.structured();
    EXPECT_EQ(s["total"], stored.size());
    EXPECT_EQ(as_set(ids(s["rows"])), as_set(ids(stored)));
    std::set<std::string> directories;
    for (const auto& row : s["rows"]) directories.insert(row["directory"]);
    EXPECT_TRUE(directories.count("Yelp"));
    EXPECT_TRUE(s["rows"][0].contains("accuracy"));
}

TEST_F(ReadTools, ListArticlesBlogsThenGeoArticles) {
    const json blogs = h().gw->rows("blogs", kPlumbing);
    const json geo = h().gw->rows("geo_articles", kPlumbing);
    ASSERT_EQ(blogs.size(), 12u);
    ASSERT_EQ(geo.size(), 8u);
    // 4 divides 12: a page ends exactly where blogs end.
    for (int limit : {4, 5, 1000}) {
        Paged all = page_all(h(), "list_articles", {{"client_id", kPlumbing}, {"limit", limit}});
        ASSERT_EQ(all.rows.size(), 20u) << limit;
        for (const auto& p : all.pages) EXPECT_EQ(p["total"], 20);
        EXPECT_TRUE(unique(ids(all.rows)));
        for (std::size_t i = 0; i < all.rows.size(); ++i)
            EXPECT_EQ(all.rows[i]["resource"], i < 12 ? "blogs" : "geo_articles") << i;
        EXPECT_EQ(all.pages.back()["rows"].size(), limit == 4 ? 4u : limit == 5 ? 5u : 20u);
    }
    // Every member passes through; blogs' post_title is named title as geo articles name it.
    ToolReply first = ok(h(), "list_articles", {{"client_id", kPlumbing}, {"limit", 1}});
    const json& row = first.structured()["rows"][0];
    const auto blog = std::find_if(blogs.begin(), blogs.end(),
                                   [&](const json& b) { return b["id"] == row["id"]; });
    ASSERT_NE(blog, blogs.end());
    EXPECT_EQ(row["title"], (*blog)["post_title"]);
    EXPECT_EQ(row["deployment_target"], "wordpress");
    EXPECT_EQ(row["author_id"], (*blog)["author_id"]);
    EXPECT_EQ(row["image_url"], (*blog)["image_url"]);
    EXPECT_FALSE(row.contains("post_title"));

    // Filtered by status over both resources.
    std::size_t drafts = 0;
    for (const auto& b : blogs) drafts += b["status"] == "draft";
    for (const auto& g : geo) drafts += g["status"] == "draft";
    Paged draft = page_all(h(), "list_articles",
                           {{"client_id", kPlumbing}, {"status", "draft"}, {"limit", 3}});
    EXPECT_EQ(draft.rows.size(), drafts);
    EXPECT_EQ(draft.pages.front()["total"].get<std::size_t>(), drafts);
    for (const auto& r : draft.rows) EXPECT_EQ(r["status"], "draft");
    EXPECT_TRUE(unique(ids(draft.rows)));
}

TEST_F(ReadTools, ListCallsByDate) {
    const json stored = h().gw->rows("call_tracking_calls", kPlumbing);
    const auto expected = in_range(stored, "created_at", "2026-09-01", "2026-10-15");
    ASSERT_GT(expected.size(), 5u);
    Paged all = page_all(
        h(), "list_calls",
        {{"client_id", kPlumbing}, {"from", "2026-09-01"}, {"to", "2026-10-15"}, {"limit", 4}});
    EXPECT_EQ(as_set(ids(all.rows)), as_set(ids(expected)));
    EXPECT_EQ(all.rows.size(), expected.size());
    EXPECT_EQ(all.pages.back()["total"].get<std::size_t>(), expected.size());
    for (std::size_t i = 1; i < all.rows.size(); ++i)
        EXPECT_GE(all.rows[i - 1]["created_at"], all.rows[i]["created_at"]);
    for (const auto& row : all.rows) {
        EXPECT_TRUE(row.contains("source"));
        EXPECT_TRUE(row.contains("transcript"));
    }
    // No range: every call.
    EXPECT_EQ(page_all(h(), "list_calls", {{"client_id", kPlumbing}}).rows.size(), stored.size());
}

TEST_F(ReadTools, ListReportsWithShareLinks) {
    const json audits = h().gw->rows("seo_reports", kPlumbing);
    const json llm = h().gw->rows("llm_reports", kPlumbing);
    Paged all = page_all(h(), "list_reports", {{"client_id", kPlumbing}, {"limit", 5}});
    ASSERT_EQ(all.rows.size(), audits.size() + llm.size());
    EXPECT_EQ(all.pages.front()["total"].get<std::size_t>(), audits.size() + llm.size());
    EXPECT_TRUE(unique(ids(all.rows)));
    for (std::size_t i = 0; i < all.rows.size(); ++i) {
        const json& row = all.rows[i];
        EXPECT_EQ(row["resource"], i < audits.size() ? "seo_reports" : "llm_reports");
        EXPECT_NE(row.value("share_url", "").find("https://share."), std::string::npos);
    }
    const json& last = all.rows.back();
    const auto report =
        std::find_if(llm.begin(), llm.end(), [&](const json& l) { return l["id"] == last["id"]; });
    ASSERT_NE(report, llm.end());
    EXPECT_EQ(last["score"], (*report)["visibility_score"]);
    EXPECT_EQ(last["prompt"], (*report)["prompt"]);
    EXPECT_EQ(last["engines"], (*report)["engines"]);  // members beyond the spec pass through
    EXPECT_FALSE(last.contains("visibility_score"));
}

TEST_F(ReadTools, ReadResourcePagesFiltersAndOrders) {
    const json reviews = h().gw->rows("reviews", kPlumbing);
    Paged all = page_all(h(), "read_resource",
                         {{"client_id", kPlumbing}, {"resource", "reviews"}, {"limit", 7}});
    EXPECT_EQ(all.rows.size(), reviews.size());
    EXPECT_EQ(all.pages.front()["total"].get<std::size_t>(), reviews.size());
    EXPECT_EQ(all.pages.front()["resource"], "reviews");
    EXPECT_TRUE(unique(ids(all.rows)));
    EXPECT_EQ(as_set(ids(all.rows)), as_set(ids(reviews)));

    std::size_t positive = 0;
    for (const auto& r : reviews) positive += r["sentiment"] == "positive";
    Paged pos = page_all(h(), "read_resource",
                         {{"client_id", kPlumbing},
                          {"resource", "reviews"},
                          {"filter_field", "sentiment"},
                          {"filter_value", "positive"},
                          {"order", "created_at"},
                          {"direction", "asc"},
                          {"limit", 4}});
    EXPECT_EQ(pos.rows.size(), positive);
    for (const auto& r : pos.rows) EXPECT_EQ(r["sentiment"], "positive");
    for (std::size_t i = 1; i < pos.rows.size(); ++i)
        EXPECT_LE(pos.rows[i - 1]["created_at"], pos.rows[i]["created_at"]);

    ToolReply comp =
        ok(h(), "read_resource",
           {{"client_id", kPlumbing}, {"resource", "competitors"}, {"order", "appearances"}});
    const json& rows = comp.structured()["rows"];
    ASSERT_FALSE(rows.empty());
    for (std::size_t i = 1; i < rows.size(); ++i)
        EXPECT_GE(rows[i - 1]["appearances"], rows[i]["appearances"]);

    ToolReply replied = ok(h(), "read_resource",
                           {{"client_id", kPlumbing},
                            {"resource", "seo_tasks"},
                            {"filter_field", "status"},
                            {"filter_value", "pending"}});
    for (const auto& r : replied.structured()["rows"]) EXPECT_EQ(r["status"], "pending");
}

// --- failures --------------------------------------------------------------------------------

TEST_F(ReadTools, BadInputsAreRejectedBeforeAnyGatewayRequest) {
    const json p = kPlumbing;
    const std::vector<std::pair<std::string, json>> cases{
        {"list_clients", {{"limit", 0}}},
        {"list_clients", {{"extra", 1}}},
        {"get_client", json::object()},
        {"get_client", {{"client_id", "demo plumbing"}}},
        {"get_client", {{"client_id", 42}}},
        {"get_client", {{"client_id", p}, {"limit", 5}}},
        {"list_keywords", json::object()},
        {"list_keywords", {{"client_id", p}, {"limit", 1001}}},
        {"list_keywords", {{"client_id", p}, {"limit", "10"}}},
        {"list_keywords", {{"client_id", p}, {"limit", 2.5}}},
        {"list_keywords", {{"client_id", p}, {"cursor", ""}}},
        {"list_keywords", {{"client_id", ""}}},
        {"list_keywords", {{"client_id", std::string(129, 'a')}}},
        {"list_rankings", {{"client_id", p}, {"from", "2026-13-01"}}},
        {"list_rankings", {{"client_id", p}, {"from", "2026-02-30"}}},
        {"list_rankings", {{"client_id", p}, {"to", "2026/10/01"}}},
        {"list_rankings", {{"client_id", p}, {"to", "20261001"}}},
        {"list_rankings", {{"client_id", p}, {"from", "yesterday"}}},
        {"list_rankings", {{"client_id", p}, {"from", 20261001}}},
        {"list_rankings", {{"client_id", p}, {"keyword", ""}}},
        {"list_rankings", {{"client_id", p}, {"keyword", 7}}},
        {"list_rankings", {{"client_id", p}, {"date", "2026-10-01"}}},
        {"list_audits", {{"client_id", p}, {"limit", -1}}},
        {"get_audit_issues", {{"client_id", p}}},
        {"get_audit_issues", {{"client_id", p}, {"audit_id", "a b"}}},
        {"get_audit_issues", {{"client_id", p}, {"audit_id", "x"}, {"severity", ""}}},
        {"list_backlinks", {{"client_id", p}, {"order", "linking_domains"}}},
        {"list_citations", {{"client_id", p}, {"status", "live"}}},
        {"list_articles", {{"client_id", p}, {"status", "draft; drop"}}},
        {"list_articles", {{"client_id", p}, {"status", true}}},
        {"list_calls", {{"client_id", p}, {"from", "2026-10-01T00:00:00Z"}}},
        {"list_reports", {{"client_id", p}, {"limit", 0}}},
        {"read_resource", {{"client_id", p}}},
        {"read_resource", {{"client_id", p}, {"resource", "keywords"}}},
        {"read_resource", {{"client_id", p}, {"resource", "no_such_resource"}}},
        {"read_resource", {{"client_id", p}, {"resource", "reviews"}, {"order", "rating"}}},
        {"read_resource", {{"client_id", p}, {"resource", "reviews"}, {"direction", "up"}}},
        {"read_resource",
         {{"client_id", p}, {"resource", "reviews"}, {"filter_field", "sentiment"}}},
        {"read_resource",
         {{"client_id", p}, {"resource", "reviews"}, {"filter_value", "positive"}}},
        {"read_resource",
         {{"client_id", p},
          {"resource", "reviews"},
          {"filter_field", "rating"},
          {"filter_value", "5"}}},
        {"read_resource",
         {{"client_id", p},
          {"resource", "reviews"},
          {"filter_field", "sentiment"},
          {"filter_value", json::array({"positive"})}}},
        {"read_resource",
         {{"client_id", p},
          {"resource", "reviews"},
          {"filter_field", "sentiment"},
          {"filter_value", true}}},
    };
    for (const auto& [tool, args] : cases) {
        const std::size_t before = h().requests();
        ToolReply r = h().call(tool, args);
        EXPECT_EQ(r.rpc_error, 0) << tool << " " << args.dump();
        EXPECT_TRUE(r.is_error()) << tool << " " << args.dump();
        EXPECT_EQ(r.reason(), "validation")
            << tool << " " << args.dump() << " " << r.response.dump();
        EXPECT_FALSE(r.tool_error().value("message", "").empty());
        EXPECT_EQ(h().requests(), before) << tool << " " << args.dump();
    }
}

TEST_F(ReadTools, ForgedCursorsAreRefusedBeforeAnyGatewayRequest) {
    auto cursor_of = [](ToolHarness& harness, const std::string& tool, const json& args,
                        const std::string& principal = "local") {
        ToolReply r = harness.call(tool, args, principal);
        EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 400);
        return r.structured().value("next_cursor", std::string());
    };
    auto refused = [](ToolHarness& harness, const std::string& tool, const json& args,
                      const std::string& why, const std::string& principal = "local") {
        const std::size_t before = harness.requests();
        ToolReply r = harness.call(tool, args, principal);
        EXPECT_EQ(r.rpc_error, -32602) << why << ": " << r.response.dump().substr(0, 400);
        EXPECT_NE(r.response.dump().find("invalid cursor"), std::string::npos) << why;
        EXPECT_EQ(harness.requests(), before) << why;
    };
    const json kw = {{"client_id", kPlumbing}, {"limit", 10}};
    const std::string cursor = cursor_of(h(), "list_keywords", kw);
    ASSERT_FALSE(cursor.empty());

    std::string tampered = cursor;
    tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
    refused(h(), "list_keywords", {{"client_id", kPlumbing}, {"cursor", tampered}}, "tampered");
    refused(h(), "list_keywords", {{"client_id", kPlumbing}, {"cursor", "not-a-cursor"}},
            "garbage");
    refused(h(), "list_keywords", {{"client_id", "demo-dental"}, {"cursor", cursor}},
            "other client");
    refused(h(), "list_backlinks", {{"client_id", kPlumbing}, {"cursor", cursor}}, "other tool");
    refused(h(), "list_keywords", {{"client_id", kPlumbing}, {"cursor", cursor}}, "other caller",
            "alice");
    // The same cursor works for its own caller, tool, client and filters; limit may change.
    ToolReply good =
        h().call("list_keywords", {{"client_id", kPlumbing}, {"cursor", cursor}, {"limit", 3}});
    EXPECT_FALSE(good.is_error());
    EXPECT_EQ(good.structured()["rows"].size(), 3u);

    // Other filter arguments, on each kind of list tool.
    const json rank = {{"client_id", kPlumbing}, {"keyword", "plumber austin"}, {"limit", 2}};
    const std::string rank_cursor = cursor_of(h(), "list_rankings", rank);
    ASSERT_FALSE(rank_cursor.empty());
    refused(h(), "list_rankings",
            {{"client_id", kPlumbing}, {"keyword", "plumber near me"}, {"cursor", rank_cursor}},
            "other keyword");
    refused(h(), "list_rankings",
            {{"client_id", kPlumbing},
             {"keyword", "plumber austin"},
             {"from", "2026-10-01"},
             {"cursor", rank_cursor}},
            "added from");
    const std::string art_cursor = cursor_of(
        h(), "list_articles", {{"client_id", kPlumbing}, {"status", "draft"}, {"limit", 1}});
    ASSERT_FALSE(art_cursor.empty());
    refused(h(), "list_articles",
            {{"client_id", kPlumbing}, {"status", "published"}, {"cursor", art_cursor}},
            "other status");
    refused(h(), "list_articles", {{"client_id", kPlumbing}, {"cursor", art_cursor}},
            "dropped status");
    const std::string rr_cursor = cursor_of(
        h(), "read_resource", {{"client_id", kPlumbing}, {"resource", "reviews"}, {"limit", 2}});
    refused(h(), "read_resource",
            {{"client_id", kPlumbing}, {"resource", "competitors"}, {"cursor", rr_cursor}},
            "other resource");
    const std::string audit_id = h().gw->rows("seo_reports", kPlumbing)[0]["id"];
    const std::string issue_cursor = cursor_of(
        h(), "get_audit_issues", {{"client_id", kPlumbing}, {"audit_id", audit_id}, {"limit", 1}});
    ASSERT_FALSE(issue_cursor.empty());
    refused(h(), "get_audit_issues",
            {{"client_id", kPlumbing},
             {"audit_id", h().gw->rows("seo_reports", kPlumbing)[1]["id"]},
             {"cursor", issue_cursor}},
            "other audit");
    refused(h(), "list_calls", {{"client_id", kPlumbing}, {"cursor", tampered}}, "tampered scan");
    refused(h(), "list_reports", {{"client_id", kPlumbing}, {"cursor", cursor}},
            "other merged tool");

    // Expired.
    ToolHarness stale({}, agency::tools::Settings{.cursor_ttl = std::chrono::seconds(-1)});
    const std::string old = cursor_of(stale, "list_keywords", kw);
    ASSERT_FALSE(old.empty());
    refused(stale, "list_keywords", {{"client_id", kPlumbing}, {"cursor", old}}, "expired");
}

TEST_F(ReadTools, SizeBudgetCutsPagesAndPagingStillYieldsEveryRowOnce) {
    ToolHarness small({}, agency::tools::Settings{.page_budget_bytes = 2000});
    const json stored = small.gw->rows("keywords", kPlumbing);
    Paged kw = page_all(small, "list_keywords", {{"client_id", kPlumbing}, {"limit", 1000}});
    EXPECT_GT(kw.pages.size(), 100u);
    EXPECT_EQ(kw.rows.size(), stored.size());
    EXPECT_TRUE(unique(ids(kw.rows)));
    for (const auto& p : kw.pages) {
        EXPECT_LT(p["rows"].size(), 1000u);
        EXPECT_LE(p["rows"].dump().size(), 2000u);
    }

    const auto recent = in_range(stored, "tracked_at", "2026-11-01", "2026-11-14");
    Paged rank = page_all(small, "list_rankings",
                          {{"client_id", kPlumbing}, {"from", "2026-11-01"}, {"limit", 1000}});
    EXPECT_GT(rank.pages.size(), 10u);
    EXPECT_EQ(as_set(ids(rank.rows)), as_set(ids(recent)));
    EXPECT_EQ(rank.rows.size(), recent.size());
    EXPECT_EQ(rank.pages.back()["total"].get<std::size_t>(), recent.size());

    Paged art = page_all(small, "list_articles", {{"client_id", kPlumbing}, {"limit", 1000}});
    EXPECT_GT(art.pages.size(), 2u);
    EXPECT_EQ(art.rows.size(), 20u);
    EXPECT_TRUE(unique(ids(art.rows)));

    const json audits = small.gw->rows("seo_reports", kPlumbing);
    std::size_t issues = 0;
    for (const auto& a : audits) {
        Paged p = page_all(small, "get_audit_issues",
                           {{"client_id", kPlumbing}, {"audit_id", a["id"]}, {"limit", 1000}});
        EXPECT_EQ(json(p.rows), a["issues"]);
        issues += p.rows.size();
    }
    EXPECT_GT(issues, 0u);

    Paged calls = page_all(small, "list_calls", {{"client_id", kPlumbing}, {"limit", 1000}});
    EXPECT_EQ(calls.rows.size(), small.gw->rows("call_tracking_calls", kPlumbing).size());
    EXPECT_GT(calls.pages.size(), 5u);
}

TEST_F(ReadTools, GatewayFailuresBecomeToolErrors) {
    ToolReply unknown = h().call("list_keywords", {{"client_id", "no-such-client"}});
    EXPECT_TRUE(unknown.is_error());
    EXPECT_EQ(unknown.reason(), "not_found");
    EXPECT_EQ(unknown.tool_error().value("gateway_error", ""),
              "unknown client_id no-such-client; read resource=clients for valid ids");

    ToolHarness faulty;
    faulty.gw->inject(
        {.target = "backlinks", .mode = agency::sample::FaultMode::fail_before, .count = 10});
    ToolReply down = faulty.call("list_backlinks", {{"client_id", kPlumbing}});
    EXPECT_TRUE(down.is_error());
    EXPECT_EQ(down.reason(), "upstream");
    EXPECT_NE(down.tool_error().value("gateway_error", "").find("injected fail_before"),
              std::string::npos);

    faulty.gw->clear_faults();
    faulty.gw->inject(
        {.target = "keywords", .mode = agency::sample::FaultMode::fail_before, .count = 10});
    ToolReply scan =
        faulty.call("list_rankings", {{"client_id", kPlumbing}, {"from", "2026-11-01"}});
    EXPECT_EQ(scan.reason(), "upstream");
}

}  // namespace
