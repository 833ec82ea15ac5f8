// Answers an assistant can act on (issue 17), end to end against the sample gateway: every
// member a gateway returns passes through, empty and cut pages explain themselves, answers stay
// inside their size budget, `fields` selects members, and the aggregate reads over the ranking
// history agree with the stored rows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"

namespace {

using agency::testing::ToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;

ToolHarness& h() {
    static ToolHarness harness;
    return harness;
}

json ok(ToolHarness& harness, const std::string& tool, const json& args) {
    ToolReply r = harness.call(tool, args);
    EXPECT_EQ(r.rpc_error, 0) << r.response.dump();
    EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 800);
    return r.structured();
}

std::string date_of(const json& row) { return row["tracked_at"].get<std::string>().substr(0, 10); }

// Stored keyword rows by keyword, by date.
std::map<std::string, std::map<std::string, json>> history(const std::string& client) {
    std::map<std::string, std::map<std::string, json>> out;
    for (const auto& row : h().gw->rows("keywords", client)) out[row["keyword"]][date_of(row)] = row;
    return out;
}

std::set<std::string> tracking_dates(const std::string& client) {
    std::set<std::string> dates;
    for (const auto& row : h().gw->rows("keywords", client)) dates.insert(date_of(row));
    return dates;
}

std::string next_day(const std::string& day) {
    using namespace std::chrono;
    const year_month_day ymd{sys_days{year{std::stoi(day.substr(0, 4))} /
                                      std::stoi(day.substr(5, 2)) / std::stoi(day.substr(8, 2))} +
                             days{1}};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
    return text;
}

// The newest tracking date on or before `day`.
std::string on_or_before(const std::set<std::string>& dates, const std::string& day) {
    auto it = dates.upper_bound(day);
    return it == dates.begin() ? "" : *std::prev(it);
}

TEST(ReadAnswers, ListAuditsPassesEveryGatewayMemberButTheIssueList) {
    json stored = h().gw->rows("seo_reports", kPlumbing);
    const json s = ok(h(), "list_audits", {{"client_id", kPlumbing}});
    ASSERT_EQ(s["rows"].size(), stored.size());
    std::map<std::string, json> by_id;
    for (auto& row : stored) {
        row.erase("issues");
        by_id[row["id"]] = row;
    }
    for (const auto& row : s["rows"]) {
        EXPECT_EQ(row, by_id[row["id"]]);  // the severity split (critical_issues, ...) included
        EXPECT_TRUE(row.contains("critical_issues") && row.contains("pages_crawled"));
    }
    EXPECT_EQ(s["truncated"], false);
}

TEST(ReadAnswers, GetAuditIssuesTakesReportIdAndStillTheOldName) {
    const json report = h().gw->rows("seo_reports", kPlumbing).at(1);
    const json by_new = ok(h(), "get_audit_issues", {{"client_id", kPlumbing}, {"report_id", report["id"]}});
    const json by_old = ok(h(), "get_audit_issues", {{"client_id", kPlumbing}, {"audit_id", report["id"]}});
    EXPECT_EQ(by_new["rows"], report["issues"]);
    EXPECT_EQ(by_old["rows"], report["issues"]);
    EXPECT_EQ(by_new["audit"]["critical_issues"], report["critical_issues"]);

    // A cursor issued under one name continues under the other.
    const json first = ok(h(), "get_audit_issues",
                          {{"client_id", kPlumbing}, {"report_id", report["id"]}, {"limit", 1}});
    ASSERT_TRUE(first.contains("next_cursor"));
    const json second = ok(h(), "get_audit_issues", {{"client_id", kPlumbing},
                                                     {"audit_id", report["id"]},
                                                     {"limit", 1},
                                                     {"cursor", first["next_cursor"]}});
    EXPECT_EQ(second["rows"][0], report["issues"][1]);

    ToolReply neither = h().call("get_audit_issues", {{"client_id", kPlumbing}});
    EXPECT_EQ(neither.reason(), "validation");
    EXPECT_NE(neither.tool_error()["message"].get<std::string>().find("report_id"), std::string::npos);
    ToolReply both = h().call("get_audit_issues",
                              {{"client_id", kPlumbing}, {"report_id", report["id"]}, {"audit_id", "other"}});
    EXPECT_EQ(both.reason(), "validation");
}

TEST(ReadAnswers, AGatewayWithCountsOnlySaysSoInsteadOfNoRows) {
    ToolHarness counts_only(agency::sample::Options{.counts_only_reports = true});
    const json report = counts_only.gw->rows("seo_reports", kPlumbing).at(0);
    ASSERT_FALSE(report.contains("issues"));
    ASSERT_GT(report["issues_found"].get<int>(), 0);
    const json s = ok(counts_only, "get_audit_issues", {{"client_id", kPlumbing}, {"report_id", report["id"]}});
    EXPECT_TRUE(s["rows"].empty());
    EXPECT_EQ(s["audit"]["detail_available"], false);
    EXPECT_EQ(s["audit"]["issues_found"], report["issues_found"]);
    const std::string note = s.value("note", "");
    EXPECT_NE(note.find("counts"), std::string::npos) << note;
    EXPECT_NE(note.find("issues_found: " + report["issues_found"].dump()), std::string::npos) << note;

    // With the detail, an audit with issues has no such note.
    const json full = ok(h(), "get_audit_issues", {{"client_id", kPlumbing},
                                                   {"report_id", h().gw->rows("seo_reports", kPlumbing)[0]["id"]}});
    EXPECT_FALSE(full.contains("note"));
    EXPECT_FALSE(full["audit"].contains("detail_available"));
}

TEST(ReadAnswers, FieldsSelectsMembersOnEveryKindOfList) {
    const json kw = ok(h(), "list_keywords",
                       {{"client_id", kPlumbing}, {"limit", 5}, {"fields", {"keyword", "position"}}});
    ASSERT_EQ(kw["rows"].size(), 5u);
    for (const auto& row : kw["rows"]) {
        EXPECT_EQ(row.size(), 2u) << row;
        EXPECT_TRUE(row.contains("keyword") && row.contains("position"));
    }
    // Merged lists keep the resource tag; renamed members are asked for by their new name.
    const json art = ok(h(), "list_articles", {{"client_id", kPlumbing}, {"limit", 3}, {"fields", {"title"}}});
    for (const auto& row : art["rows"]) {
        EXPECT_EQ(row.size(), 2u) << row;
        EXPECT_TRUE(row["title"].is_string());
        EXPECT_EQ(row["resource"], "blogs");
    }
    const json rank = ok(h(), "list_rankings", {{"client_id", kPlumbing}, {"from", "2026-11-14"},
                                                {"fields", {"tracked_at"}}, {"limit", 3}});
    for (const auto& row : rank["rows"]) EXPECT_EQ(row, json({{"tracked_at", "2026-11-14"}}));
    const json changes = ok(h(), "ranking_changes", {{"client_id", kPlumbing}, {"from", "2026-11-01"},
                                                     {"to", "2026-11-14"}, {"fields", {"keyword", "change"}}});
    for (const auto& row : changes["rows"]) EXPECT_EQ(row.size(), 2u) << row;

    // Paging with fields yields the same rows as without (the cursor ignores fields).
    const json page1 = ok(h(), "list_keywords", {{"client_id", kPlumbing}, {"limit", 2}, {"fields", {"id"}}});
    const json page2 = ok(h(), "list_keywords", {{"client_id", kPlumbing}, {"limit", 2},
                                                 {"cursor", page1["next_cursor"]}});
    const json stored = ok(h(), "list_keywords", {{"client_id", kPlumbing}, {"limit", 4}});
    EXPECT_EQ(page2["rows"][0]["id"], stored["rows"][2]["id"]);
}

TEST(ReadAnswers, AnswersStayInsideTheirSizeBudget) {
    // No limit: a default page near 6k tokens, cut and continued.
    const json first = ok(h(), "list_keywords", {{"client_id", kPlumbing}});
    EXPECT_LE(first.dump().size(), 24'000u);
    EXPECT_EQ(first["truncated"], true);
    EXPECT_LT(first["returned"].get<int>(), 100);
    EXPECT_TRUE(first.contains("next_cursor"));
    // A named limit: no answer over ~100 KB unless max_bytes raises it.
    const json big = ok(h(), "list_keywords", {{"client_id", kPlumbing}, {"limit", 1000}});
    EXPECT_LE(big.dump().size(), 100'000u);
    EXPECT_EQ(big["truncated"], true);
    const json raised = ok(h(), "list_keywords", {{"client_id", kPlumbing}, {"limit", 1000}, {"max_bytes", 400000}});
    EXPECT_EQ(raised["returned"], 1000);
    EXPECT_EQ(raised["truncated"], false);
    // A page that ends at its limit is not truncated.
    const json small = ok(h(), "list_keywords", {{"client_id", kPlumbing}, {"limit", 10}});
    EXPECT_EQ(small["truncated"], false);
    std::cout << "[ measure  ] list_keywords default page: " << first.dump().size() << " bytes, "
              << first["returned"] << " rows; limit 1000: " << big.dump().size() << " bytes\n";
}

TEST(ReadAnswers, EmptyRangesSayWhatDatesTheDataCovers) {
    const std::set<std::string> dates = tracking_dates(kLaw);
    // Between two weekly tracking dates: the nearest dates either side.
    const std::string a = *std::next(dates.begin(), 10), b = *std::next(dates.begin(), 11);
    const std::string inside = next_day(a);
    ASSERT_LT(a, inside);
    const json gap = ok(h(), "list_rankings", {{"client_id", kLaw}, {"from", inside}, {"to", inside}});
    EXPECT_TRUE(gap["rows"].empty());
    const std::string note = gap.value("note", "");
    EXPECT_NE(note.find("covers " + *dates.begin() + " to " + *dates.rbegin()), std::string::npos) << note;
    EXPECT_NE(note.find("nearest dates with data are " + a + " and " + b), std::string::npos) << note;

    // Before all the data (the user's "last month" a year before it starts).
    const json before = ok(h(), "list_rankings", {{"client_id", kPlumbing}, {"from", "2025-06-01"},
                                                  {"to", "2025-06-30"}});
    const std::set<std::string> daily = tracking_dates(kPlumbing);
    EXPECT_NE(before.value("note", "").find("covers " + *daily.begin() + " to " + *daily.rbegin()),
              std::string::npos) << before;
    const json calls = ok(h(), "list_calls", {{"client_id", kPlumbing}, {"from", "2020-01-01"}, {"to", "2020-01-31"}});
    EXPECT_NE(calls.value("note", "").find("covers"), std::string::npos) << calls;

    // A filter that matches nothing, and a list with rows: no note.
    const json none = ok(h(), "list_articles", {{"client_id", kPlumbing}, {"status", "no-such-status"}});
    EXPECT_NE(none.value("note", "").find("status = no-such-status"), std::string::npos) << none;
    EXPECT_FALSE(ok(h(), "list_citations", {{"client_id", kPlumbing}}).contains("note"));
}

TEST(ReadAnswers, RankingChangesAgreeWithTheStoredHistory) {
    for (const auto& [client, from, to] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {kPlumbing, "2026-10-15", "2026-11-14"}, {kLaw, "2026-09-02", "2026-11-10"}}) {
        const auto hist = history(client);
        const std::set<std::string> dates = tracking_dates(client);
        const std::string from_date = on_or_before(dates, from), to_date = on_or_before(dates, to);
        std::map<std::string, int> expected;  // keyword -> change
        for (const auto& [keyword, rows] : hist)
            if (rows.contains(from_date) && rows.contains(to_date))
                expected[keyword] = rows.at(from_date)["position"].get<int>() -
                                    rows.at(to_date)["position"].get<int>();
        ASSERT_FALSE(expected.empty());
        const json all = ok(h(), "ranking_changes",
                            {{"client_id", client}, {"from", from}, {"to", to}, {"limit", 500}});
        EXPECT_EQ(all["from_date"], from_date) << client;
        EXPECT_EQ(all["to_date"], to_date) << client;
        EXPECT_EQ(all["keywords_compared"], expected.size());
        int improved = 0, dropped = 0;
        for (const auto& [k, c] : expected) improved += c > 0, dropped += c < 0;
        EXPECT_EQ(all["improved"], improved);
        EXPECT_EQ(all["dropped"], dropped);
        // total counts the keywords that moved (issue 46): unchanged ones are neither shown nor
        // counted; each row carries the keyword's search volume on the end date.
        EXPECT_EQ(all["total"], improved + dropped) << client;
        for (const auto& row : all["rows"]) {
            EXPECT_EQ(row["change"], expected.at(row["keyword"])) << row;
            EXPECT_NE(row["change"], 0) << row;
            EXPECT_EQ(row["change"].get<int>(), row["from_position"].get<int>() - row["to_position"].get<int>());
            EXPECT_EQ(row["search_volume"], hist.at(row["keyword"]).at(to_date)["search_volume"]) << row;
            EXPECT_FALSE(row.contains("from_url")) << row;  // one page per keyword in the sample
        }

        const json worst = ok(h(), "ranking_changes", {{"client_id", client}, {"from", from}, {"to", to},
                                                       {"direction", "dropped"}, {"limit", 3}});
        EXPECT_EQ(worst["total"], dropped);
        std::vector<int> drops;
        for (const auto& [k, c] : expected)
            if (c < 0) drops.push_back(c);
        std::sort(drops.begin(), drops.end());
        for (std::size_t i = 0; i < worst["rows"].size(); ++i)
            EXPECT_EQ(worst["rows"][i]["change"], drops[i]) << client;
    }
    // A keyword filter keeps keywords containing the text.
    const json cost = ok(h(), "ranking_changes", {{"client_id", kPlumbing}, {"from", "2026-11-01"},
                                                  {"to", "2026-11-14"}, {"keyword", "COST"}});
    ASSERT_FALSE(cost["rows"].empty());
    for (const auto& row : cost["rows"])
        EXPECT_NE(row["keyword"].get<std::string>().find("cost"), std::string::npos);
    ToolReply backwards = h().call("ranking_changes", {{"client_id", kPlumbing}, {"from", "2026-11-14"}, {"to", "2026-11-01"}});
    EXPECT_EQ(backwards.reason(), "validation");
    const json empty = ok(h(), "ranking_changes", {{"client_id", kPlumbing}, {"from", "2025-01-01"}, {"to", "2025-02-01"}});
    EXPECT_NE(empty.value("note", "").find("covers"), std::string::npos) << empty;
}

TEST(ReadAnswers, LatestRankingsGiveEachKeywordsNewestRow) {
    const auto hist = history(kLaw);
    const json s = ok(h(), "latest_rankings", {{"client_id", kLaw}, {"limit", 1000}});
    EXPECT_EQ(s["total"], hist.size());
    ASSERT_EQ(s["rows"].size(), hist.size());
    int previous = 0;
    for (const auto& row : s["rows"]) {
        EXPECT_EQ(row, hist.at(row["keyword"]).rbegin()->second);  // every member, as stored
        EXPECT_GE(row["position"].get<int>(), previous);
        previous = row["position"].get<int>();
    }
    // 26 weekly dates go back further than the 90-day window: the walk ends there and says so.
    EXPECT_NE(s.value("note", "").find("within_days 90"), std::string::npos) << s.value("note", "");
    const json week = ok(h(), "latest_rankings", {{"client_id", kLaw}, {"within_days", 6}, {"limit", 1000}});
    EXPECT_EQ(week["total"], hist.size());  // every keyword is tracked on the newest date
    const std::string as_of = *std::next(tracking_dates(kLaw).begin(), 3);
    const json then = ok(h(), "latest_rankings", {{"client_id", kLaw}, {"as_of", as_of}, {"limit", 1000}});
    for (const auto& row : then["rows"]) EXPECT_EQ(date_of(row), as_of);
}

// docs/tools.md (the whole schema) names the useful order and filter values per resource;
// tools/list, in every model's context, keeps the short descriptions: `where` and `order_by`
// push those values to the gateway without being told.
TEST(ReadAnswers, ReadResourceDescribesDirectionAndUsefulValues) {
    for (const agency::mcp::ToolDef* tool : h().server->visible_tools({})) {
        if (tool->name != "read_resource") continue;
        const json& props = tool->input()["properties"];
        const std::string order = props["order"]["description"];
        const std::string filter = props["filter_field"]["description"];
        EXPECT_NE(props["direction"]["description"].get<std::string>().find("asc: oldest"),
                  std::string::npos);
        EXPECT_NE(order.find("appearances (competitors)"), std::string::npos) << order;
        EXPECT_NE(filter.find("sentiment (reviews)"), std::string::npos) << filter;
        EXPECT_NE(filter.find("lead_grade, quality_grade (call_scores, call_transcriptions)"),
                  std::string::npos) << filter;
        const json& listed = tool->listed_input()["properties"];
        EXPECT_EQ(listed["order"]["description"], "Field to order by");
        EXPECT_EQ(listed["filter_field"]["description"],
                  "Exact-match filter field (needs filter_value)");
        EXPECT_FALSE(listed["direction"].contains("description"));
        EXPECT_FALSE(listed["direction"].contains("x-listed"));
        EXPECT_EQ(listed["resource"]["enum"], props["resource"]["enum"]);
        return;
    }
    ADD_FAILURE() << "read_resource is not registered";
}

}  // namespace

// --- rows bigger than the answer (issue 30) --------------------------------------------------

namespace {

agency::sample::Fault hostile_fault(const std::string& target, agency::sample::FaultMode mode, int size) {
    agency::sample::Fault fault;
    fault.target = target;
    fault.mode = mode;
    fault.count = 1;
    fault.size = size;
    return fault;
}

}  // namespace

TEST(ReadAnswers, ARowBiggerThanTheBudgetIsCutToItAndSaysSo) {
    using agency::sample::FaultMode;
    // 200,000 members (~2.6 MB): without and with `fields`, under the smallest budget.
    for (const json& extra : {json::object(), json{{"fields", {"id", "f1", "f150000"}}}}) {
        h().gw->inject(hostile_fault("keywords", FaultMode::wide, 200'000));
        json args = {{"client_id", kPlumbing}, {"max_bytes", 2000}};
        args.update(extra);
        ToolReply r = h().call("list_keywords", args);
        ASSERT_FALSE(r.is_error()) << r.response.dump().substr(0, 600);
        const json& s = r.structured();
        EXPECT_LE(s.dump().size(), 2000u) << s.dump().substr(0, 600);
        EXPECT_EQ(s["returned"], 1);
        EXPECT_EQ(s["truncated"], true);
        EXPECT_EQ(s["rows"][0]["id"], "hostile-1");
        const std::string note = s.value("note", "");
        EXPECT_NE(note.find("row 1 was cut"), std::string::npos) << note;
        EXPECT_NE(note.find("left out"), std::string::npos) << note;
        // The compact text beside it renders the same cut answer.
        for (const auto& block : r.result["content"])
            EXPECT_LE(block.value("text", "").size(), 2000u);
    }
}

TEST(ReadAnswers, ARowNestedPastTheLimitIsAnUpstreamErrorNamingIt) {
    h().gw->inject(hostile_fault("keywords", agency::sample::FaultMode::deep, 100'000));
    ToolReply r = h().call("list_keywords", {{"client_id", kPlumbing}});
    ASSERT_TRUE(r.is_error()) << r.response.dump().substr(0, 600);
    EXPECT_EQ(r.reason(), "upstream");
    EXPECT_NE(r.tool_error().value("message", "").find("64 levels"), std::string::npos)
        << r.tool_error().dump();
    // The next read is whole again.
    EXPECT_FALSE(h().call("list_keywords", {{"client_id", kPlumbing}}).is_error());
}

TEST(RowWriter, ShortensALongStringAndDropsWhatDoesNotFit) {
    std::string big(100'000, 'a');
    big.replace(1000, 3, "\xE2\x80\xA6");  // a UTF-8 character near where a cut may fall
    const std::string row = R"({"id":"r1","title":"short","body":")" + big +
                            R"(","tags":[)" + std::string(50'000, '1') + R"(],"n":2})";
    agency::tools::RowWriter writer("c1", "articles", 4000);
    ASSERT_TRUE(writer.add(row));
    const std::string text = writer.finish(1, "");
    EXPECT_LE(text.size(), 4000u);
    const json answer = json::parse(text);  // valid JSON, valid UTF-8
    const json& cut = answer["rows"][0];
    EXPECT_EQ(cut["id"], "r1");
    EXPECT_EQ(cut["title"], "short");
    const std::string body = cut["body"].get<std::string>();
    EXPECT_GT(body.size(), 1000u);
    EXPECT_TRUE(body.ends_with("\xE2\x80\xA6"));
    EXPECT_FALSE(cut.contains("tags"));
    EXPECT_EQ(answer["truncated"], true);
    const std::string note = answer["note"];
    EXPECT_NE(note.find("1 string(s) shortened"), std::string::npos) << note;
    EXPECT_NE(note.find("(body)"), std::string::npos) << note;
    EXPECT_NE(note.find("left out (tags"), std::string::npos) << note;

    // A row that fits is untouched, and a second row that does not ends the page as before.
    agency::tools::RowWriter two("c1", "articles", 4000);
    ASSERT_TRUE(two.add(R"({"id":"a"})"));
    EXPECT_FALSE(two.add(row));
    const json second = json::parse(two.finish(2, "cursor"));
    EXPECT_EQ(second["rows"], json::parse(R"([{"id":"a"}])"));
    EXPECT_FALSE(second.contains("note"));
}
