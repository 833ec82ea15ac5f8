// `where`, `order_by` and `direction` on the list tools (issue 46, part 2), over the sample
// gateway on loopback: pushed down where the spec's whitelists allow, applied by the server
// otherwise, the cursor continuing the same query. Every expected answer is computed here from
// the gateway's own rows (sample::Gateway::rows), independently of the tools.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tool_harness.hpp"
#include "tools/kit/tool_kit.hpp"

namespace {

using agency::testing::ToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

// The answer conforms to the tool's published output schema (what an SDK client validates).
void expect_conforms(ToolHarness& h, const std::string& tool, const json& structured) {
    json schema;
    for (const auto& t : h.tools())
        if (t["name"] == tool) schema = t.value("outputSchema", json());
    ASSERT_TRUE(schema.is_object()) << tool;
    const agency::tools::InputValidator validator(schema);
    EXPECT_EQ(validator.validate(structured), "") << tool << ": " << structured.dump().substr(0, 400);
}

json ok(ToolHarness& h, const std::string& tool, const json& args) {
    const ToolReply r = h.call(tool, args);
    EXPECT_EQ(r.rpc_error, 0) << r.response.dump().substr(0, 600);
    EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 600);
    if (r.is_error() || r.rpc_error) return json::object();
    expect_conforms(h, tool, r.structured());
    return r.structured();
}

// Every page of one query, followed by its cursors: the rows in the order they came.
std::vector<json> all_pages(ToolHarness& h, const std::string& tool, json args,
                            int* calls = nullptr) {
    std::vector<json> rows;
    for (int page = 0; page < 200; ++page) {
        const json s = ok(h, tool, args);
        if (calls) ++*calls;
        for (const json& r : s.value("rows", json::array())) rows.push_back(r);
        if (!s.contains("next_cursor")) {
            EXPECT_EQ(s.value("total", -1), static_cast<int>(rows.size())) << tool;
            return rows;
        }
        args["cursor"] = s["next_cursor"];
    }
    ADD_FAILURE() << "no last page after 200";
    return rows;
}

std::set<std::string> ids_of(const std::vector<json>& rows) {
    std::set<std::string> ids;
    for (const json& r : rows) ids.insert(r.at("id").get<std::string>());
    return ids;
}

std::size_t reads_with(const ToolHarness& h, const std::string& text) {
    std::size_t n = 0;
    for (const auto& r : h.gw->request_log())
        if (r.method == "GET" && r.detail.find(text) != std::string::npos) ++n;
    return n;
}

TEST(ListQuery, BacklinksOverAnAuthorityStrongestFirstInOneCall) {
    ToolHarness h;
    const std::string client = "demo-law";
    std::vector<json> expected;
    std::size_t all = 0;
    for (const json& r : h.gw->rows("backlinks", client)) {
        ++all;
        if (r["domain_authority"].get<double>() > 50) expected.push_back(r);
    }
    ASSERT_GT(expected.size(), 3u);
    ASSERT_LT(expected.size(), all);  // the filter leaves rows out

    const std::size_t before = h.requests();
    const json s = ok(h, "list_backlinks",
                      {{"client_id", client},
                       {"where", {{"domain_authority", {{"gt", 50}}}}},
                       {"order_by", "domain_authority"},
                       {"limit", 1000},
                       {"max_bytes", 2000000}});
    EXPECT_EQ(s["total"], expected.size());
    EXPECT_EQ(s["scanned"], all);  // every backlink was read to order them
    ASSERT_EQ(s["rows"].size(), expected.size());
    EXPECT_EQ(ids_of(s["rows"]), ids_of(expected));
    for (std::size_t i = 1; i < s["rows"].size(); ++i)
        EXPECT_GE(s["rows"][i - 1]["domain_authority"].get<double>(),
                  s["rows"][i]["domain_authority"].get<double>());
    // The gateway cannot order by domain_authority: nothing asked it to.
    EXPECT_EQ(reads_with(h, "order=domain_authority"), 0u);
    EXPECT_GT(h.requests(), before);

    // Ascending, in pages of 3: the same rows, weakest first, the cursor carrying the order.
    const std::vector<json> paged =
        all_pages(h, "list_backlinks", {{"client_id", client},
                                        {"where", {{"domain_authority", {{"gt", 50}}}}},
                                        {"order_by", "domain_authority"},
                                        {"direction", "asc"},
                                        {"limit", 3}});
    ASSERT_EQ(paged.size(), expected.size());
    EXPECT_EQ(ids_of(paged), ids_of(expected));
    for (std::size_t i = 1; i < paged.size(); ++i)
        EXPECT_LE(paged[i - 1]["domain_authority"].get<double>(),
                  paged[i]["domain_authority"].get<double>());
}

TEST(ListQuery, WhatTheWhitelistAllowsIsPushedDownAndTheCursorContinuesIt) {
    ToolHarness h;
    const std::string client = "demo-law";
    std::string type;
    std::map<std::string, int> types;
    for (const json& r : h.gw->rows("backlinks", client)) ++types[r["source_type"]];
    ASSERT_GT(types.size(), 1u);
    type = types.begin()->first;
    std::vector<json> expected;
    for (const json& r : h.gw->rows("backlinks", client))
        if (r["source_type"] == type && r["external_pages"].get<double>() >= 2) expected.push_back(r);
    ASSERT_GT(expected.size(), 2u);

    int calls = 0;
    const std::vector<json> rows = all_pages(
        h, "list_backlinks",
        {{"client_id", client},
         {"where", {{"source_type", type}, {"external_pages", {{"gte", 2}}}}},
         {"order_by", "external_pages"},
         {"limit", 2}},
        &calls);
    EXPECT_GT(calls, 1);
    EXPECT_EQ(ids_of(rows), ids_of(expected));
    EXPECT_EQ(rows.size(), expected.size());
    for (std::size_t i = 1; i < rows.size(); ++i)
        EXPECT_GE(rows[i - 1]["external_pages"].get<double>(), rows[i]["external_pages"].get<double>());
    // The filter and the order went to the gateway (both are on its whitelists).
    EXPECT_GT(reads_with(h, "filter_field=source_type"), 0u);
    EXPECT_GT(reads_with(h, "order=external_pages"), 0u);
}

TEST(ListQuery, KeywordsCloseToPageOneStreamInTheToolsOrder) {
    ToolHarness h;
    const std::string client = "demo-plumbing";
    std::vector<json> expected;
    std::size_t all = 0;
    for (const json& r : h.gw->rows("keywords", client)) {
        ++all;
        if (r["position"].is_number() && r["position"].get<double>() >= 4 &&
            r["position"].get<double>() <= 20 && r["search_volume"].get<double>() >= 100 &&
            r["tracked_at"].get<std::string>().substr(0, 10) >= "2026-01-01")
            expected.push_back(r);
    }
    ASSERT_GT(expected.size(), 10u);
    ASSERT_LT(expected.size(), all);
    const json where = {{"position", {{"gte", 4}, {"lte", 20}}},
                        {"search_volume", {{"gte", 100}}},
                        {"tracked_at", {{"gte", "2026-01-01"}}}};
    const std::vector<json> rows =
        all_pages(h, "list_keywords", {{"client_id", client}, {"where", where}, {"limit", 7}});
    EXPECT_EQ(rows.size(), expected.size());
    EXPECT_EQ(ids_of(rows), ids_of(expected));
    for (std::size_t i = 1; i < rows.size(); ++i)  // newest first, as without where
        EXPECT_GE(rows[i - 1]["tracked_at"].get<std::string>(), rows[i]["tracked_at"].get<std::string>());

    // A cursor continues only its own query.
    json first = ok(h, "list_keywords", {{"client_id", client}, {"where", where}, {"limit", 7}});
    ASSERT_TRUE(first.contains("next_cursor"));
    EXPECT_EQ(first["total"], expected.size());  // counted on every page of a list
    EXPECT_EQ(first["scanned"], all);
    json other = where;
    other["search_volume"]["gte"] = 101;
    const ToolReply r = h.call("list_keywords", {{"client_id", client},
                                                 {"where", other},
                                                 {"limit", 7},
                                                 {"cursor", first["next_cursor"]}});
    EXPECT_TRUE(r.rpc_error != 0 || r.is_error());
}

TEST(ListQuery, AMemberNoRowHasIsRefusedNamingTheMembersSeen) {
    agency::sample::Options options;
    options.other_member_names = true;
    ToolHarness h(options);
    const std::string client = "demo-law";
    const ToolReply r = h.call("list_backlinks", {{"client_id", client},
                                                  {"where", {{"domain_authority", {{"gt", 50}}}}}});
    ASSERT_TRUE(r.is_error()) << r.response.dump().substr(0, 400);
    const std::string text = r.result["content"][0]["text"];
    EXPECT_NE(text.find("domain_authority"), std::string::npos) << text;
    EXPECT_NE(text.find("authority_score"), std::string::npos) << text;

    // The deployment's own name answers the same question.
    std::vector<json> expected;
    for (const json& row : h.gw->rows("backlinks", client))
        if (row["authority_score"].get<double>() > 50) expected.push_back(row);
    const json s = ok(h, "list_backlinks", {{"client_id", client},
                                            {"where", {{"authority_score", {{"gt", 50}}}}},
                                            {"order_by", "authority_score"},
                                            {"limit", 1000},
                                            {"max_bytes", 2000000}});
    EXPECT_EQ(ids_of(s["rows"]), ids_of(expected));

    // A filter the gateway applies, on a member its rows lack (call scores carry lead_grade,
    // their transcriptions quality_grade): refused too, not "no rows".
    ASSERT_FALSE(h.gw->rows("call_scores", client)[0].contains("quality_grade"));
    const ToolReply pushed = h.call("read_resource", {{"resource", "call_scores"},
                                                      {"client_id", client},
                                                      {"where", {{"quality_grade", "good"}}}});
    ASSERT_TRUE(pushed.is_error()) << pushed.response.dump().substr(0, 400);
    const std::string why = pushed.result["content"][0]["text"];
    EXPECT_NE(why.find("lead_grade"), std::string::npos) << why;
    EXPECT_GT(reads_with(h, "filter_field=quality_grade"), 0u);
    // A value no row has, on a member they do have: an empty page that says why.
    const json none = ok(h, "read_resource", {{"resource", "call_scores"},
                                              {"client_id", client},
                                              {"where", {{"lead_grade", "Z"}}}});
    EXPECT_EQ(none["rows"].size(), 0u);
    EXPECT_NE(none.value("note", "").find("lead_grade = \"Z\""), std::string::npos) << none;
}

TEST(ListQuery, BadQueriesAreRefusedBeforeAnyRead) {
    ToolHarness h;
    const std::size_t before = h.requests();
    for (const json& where : {json{{"position", {{"between", 1}}}},
                              json{{"metrics.da", 3}},
                              json{{"position", json::object()}},
                              json{{"status", {{"in", json::array()}}}},
                              json{{"status", {{"contains", 5}}}},
                              json{{"status", json::array({"a"})}},
                              json{{"status", std::string(1025, 'a')}},
                              json{{"keyword", {{"contains", std::string(1025, 'a')}}}},
                              json{{"status", {{"in", {"a", std::string(1025, 'a')}}}}}}) {
        const ToolReply r = h.call("list_keywords", {{"client_id", "demo-law"}, {"where", where}});
        ASSERT_TRUE(r.is_error() || r.rpc_error != 0) << where.dump();
        if (r.is_error()) EXPECT_EQ(r.reason(), "validation") << where.dump();
    }
    const ToolReply deep = h.call("list_keywords", {{"client_id", "demo-law"},
                                                    {"order_by", "position"},
                                                    {"limit", 1000},
                                                    {"cursor", "x"}});
    EXPECT_TRUE(deep.is_error() || deep.rpc_error != 0);
    EXPECT_EQ(h.requests(), before);
}

TEST(ListQuery, MergedAndRangedListsTakeTheQueryToo) {
    ToolHarness h;
    const std::string client = "demo-law";
    // Articles from two resources, ordered by the server across both.
    std::vector<json> expected;
    for (const char* resource : {"blogs", "geo_articles"})
        for (const json& r : h.gw->rows(resource, client))
            if (r.value("status", "") == "published") expected.push_back(r);
    ASSERT_GT(expected.size(), 1u);
    const std::vector<json> articles = all_pages(
        h, "list_articles", {{"client_id", client},
                             {"where", {{"status", "published"}}},
                             {"order_by", "created_at"},
                             {"direction", "asc"},
                             {"limit", 2}});
    EXPECT_EQ(ids_of(articles), ids_of(expected));
    for (std::size_t i = 1; i < articles.size(); ++i)
        EXPECT_LE(articles[i - 1]["created_at"].get<std::string>(),
                  articles[i]["created_at"].get<std::string>());

    // Calls in a range, answered ones only, longest first.
    std::vector<json> calls;
    for (const json& r : h.gw->rows("call_tracking_calls", client)) {
        const std::string day = r["created_at"].get<std::string>().substr(0, 10);
        if (day >= "2026-01-01" && day <= "2026-12-31" && r["status"] == "answered")
            calls.push_back(r);
    }
    const std::string duration = calls.empty() || calls[0].contains("duration_seconds")
                                     ? "duration_seconds"
                                     : "duration";
    const json s = ok(h, "list_calls", {{"client_id", client},
                                        {"from", "2026-01-01"},
                                        {"to", "2026-12-31"},
                                        {"where", {{"status", "answered"}}},
                                        {"order_by", duration},
                                        {"limit", 1000},
                                        {"max_bytes", 2000000}});
    EXPECT_EQ(ids_of(s["rows"]), ids_of(calls));
    for (std::size_t i = 1; i < s["rows"].size(); ++i)
        EXPECT_GE(s["rows"][i - 1][duration].get<double>(), s["rows"][i][duration].get<double>());
}

TEST(ListQuery, AScopedKeyFiltersOnlyItsOwnClients) {
    ToolHarness h;
    std::vector<std::string> all;
    for (const json& r : h.gw->rows("clients", "")) all.push_back(r["id"]);
    ASSERT_GE(all.size(), 3u);
    agency::mcp::Principal scoped;
    scoped.name = "scoped";
    scoped.clients = {all[0], all[1]};
    const ToolReply r = h.call_as(scoped, "list_clients",
                                  {{"where", {{"id", {{"in", {all[1], all[2]}}}}}}});
    ASSERT_FALSE(r.is_error()) << r.response.dump().substr(0, 400);
    ASSERT_EQ(r.structured()["rows"].size(), 1u);
    EXPECT_EQ(r.structured()["rows"][0]["id"], all[1]);
}

}  // namespace

namespace {

TEST(ListQuery, DraftAndDraftedAreOneStatus) {
    ToolHarness h;
    const std::string client = "demo-dental";  // no auto-deploy: its articles include drafts
    std::set<std::string> expected;
    for (const char* resource : {"blogs", "geo_articles"})
        for (const json& r : h.gw->rows(resource, client))
            if (r.value("status", "") == "draft" || r.value("status", "") == "drafted")
                expected.insert(r["id"].get<std::string>());
    ASSERT_FALSE(expected.empty());
    for (const char* word : {"draft", "drafted"}) {
        const std::vector<json> rows =
            all_pages(h, "list_articles", {{"client_id", client}, {"status", word}, {"limit", 3}});
        EXPECT_EQ(ids_of(rows), expected) << word;
    }
}

}  // namespace
