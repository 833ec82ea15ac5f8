// Notes that say what the data really covers (issue 31, item 4), end to end against the sample
// gateway varied as independent gateways are: a date range holding no tracking date, an as_of
// far in the past, and a gateway whose audit reports carry counts only and keep their per-page
// detail in seo_tasks (or do not list seo_tasks at all). Models read the text block, not
// structuredContent: every note is checked there too.
#include <chrono>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "server/server_impl.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/text.hpp"

namespace data_notes {  // named: a unity batch holds other tests' helpers of the same names

using agency::testing::ManualClock;
using agency::testing::ToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;
using namespace std::chrono;

using namespace agency::testing::sample_clients;

std::set<std::string> tracking_dates(ToolHarness& h, const std::string& client) {
    std::set<std::string> dates;
    for (const auto& row : h.gw->rows("keywords", client))
        dates.insert(row["tracked_at"].get<std::string>().substr(0, 10));
    return dates;
}

// The answer's note, checked to be in the text block a model reads as well.
std::string note_of(const ToolReply& r) {
    EXPECT_FALSE(r.is_error()) << r.response.dump().substr(0, 600);
    const std::string note = r.structured().value("note", "");
    std::string text;
    for (const auto& block : r.result.value("content", json::array()))
        text += block.value("text", "");
    EXPECT_NE(text.find(note), std::string::npos) << "the note is not in the text: " << text;
    return note;
}

using agency::testing::has;

system_clock::time_point noon_of(year_month_day day) { return sys_days{day} + hours{12}; }

TEST(DataNotes, ARangeWithNoTrackingDateNamesTheDatesAroundIt) {
    ToolHarness h;
    const std::set<std::string> dates = tracking_dates(h, kLaw);
    ASSERT_EQ(*dates.begin(), "2026-05-23");
    ASSERT_EQ(*dates.rbegin(), "2026-11-14");
    // Between the weekly dates 2026-05-30 and 2026-06-06.
    ASSERT_TRUE(dates.contains("2026-05-30") && dates.contains("2026-06-06"));
    const ToolReply gap = h.call("ranking_changes",
                                 {{"client_id", kLaw}, {"from", "2026-06-01"}, {"to", "2026-06-05"}});
    const std::string note = note_of(gap);
    EXPECT_TRUE(gap.structured()["rows"].empty());
    EXPECT_FALSE(has(note, "one tracking date")) << note;
    EXPECT_TRUE(has(note, "no tracking date between 2026-06-01 and 2026-06-05")) << note;
    EXPECT_TRUE(has(note, "nearest tracking dates are 2026-05-30 (before) and 2026-06-06 (after)"))
        << note;
    EXPECT_TRUE(has(note, "keywords data covers 2026-05-23 to 2026-11-14")) << note;
    // What it suggests works.
    const ToolReply around = h.call("ranking_changes",
                                    {{"client_id", kLaw}, {"from", "2026-05-30"}, {"to", "2026-06-06"}});
    EXPECT_GT(around.structured()["keywords_compared"].get<int>(), 0) << around.response.dump();

    // One date in the range and none before it: the data begins inside the range.
    const std::string first = note_of(h.call(
        "ranking_changes", {{"client_id", kLaw}, {"from", "2026-05-20"}, {"to", "2026-05-26"}}));
    EXPECT_TRUE(has(first, "only one tracking date between 2026-05-20 and 2026-05-26: 2026-05-23, "
                           "and none before it")) << first;
    EXPECT_TRUE(has(first, "the next tracking date is 2026-05-30")) << first;
    EXPECT_TRUE(has(first, "covers 2026-05-23 to 2026-11-14")) << first;

    // Compared, but on dates far from those asked: the answer says which and how far.
    const std::string wide = note_of(h.call(
        "ranking_changes", {{"client_id", kPlumbing}, {"from", "2026-06-01"}, {"to", "2026-11-27"}}));
    EXPECT_TRUE(has(wide, "the start positions are from 2026-09-16, 4 months after from "
                          "2026-06-01 (no earlier tracking date)")) << wide;
    EXPECT_TRUE(has(wide, "the end positions are from 2026-11-14, the newest tracking date on or "
                          "before to 2026-11-27, 13 days before it")) << wide;
    // Dates asked that the data has: no such note.
    const ToolReply exact = h.call("ranking_changes", {{"client_id", kPlumbing},
                                                        {"from", "2026-11-01"}, {"to", "2026-11-14"}});
    EXPECT_FALSE(exact.structured().contains("note")) << exact.structured()["note"];
}

TEST(DataNotes, LatestRankingsSayHowOldThePositionsAre) {
    ManualClock clock(noon_of(year{2027} / 10 / 1));
    agency::tools::Settings settings;
    settings.clock = &clock;
    ToolHarness h({}, settings);
    // An as_of far in the past: positions of its newest tracking date, dated against both.
    const std::string then = note_of(h.call(
        "latest_rankings", {{"client_id", kLaw}, {"as_of", "2026-06-01"}, {"limit", 3}}));
    EXPECT_TRUE(has(then, "positions as of 2026-05-30, the newest tracking date on or before "
                          "as_of 2026-06-01 (2 days before it), 16 months before today "
                          "(2027-10-01)")) << then;
    // No as_of: the newest data is itself old.
    const std::string now = note_of(h.call("latest_rankings", {{"client_id", kPlumbing}, {"limit", 3}}));
    EXPECT_TRUE(has(now, "the newest tracking date is 2026-11-14, 11 months before today "
                         "(2027-10-01): nothing was tracked after it")) << now;

    // Two days after the data ends there is nothing to say.
    ManualClock soon(noon_of(year{2026} / 11 / 16));
    settings.clock = &soon;
    ToolHarness fresh({}, settings);
    const ToolReply r = fresh.call("latest_rankings", {{"client_id", kPlumbing}, {"limit", 3}});
    EXPECT_FALSE(r.structured().contains("note")) << r.structured()["note"];
}

TEST(DataNotes, ACountsOnlyGatewayPointsToItsSeoTasks) {
    ToolHarness h(agency::sample::Options{.counts_only_reports = true});
    const json report = h.gw->rows("seo_reports", kPlumbing).at(0);
    const std::string note = note_of(
        h.call("get_audit_issues", {{"client_id", kPlumbing}, {"report_id", report["id"]}}));
    EXPECT_TRUE(has(note, "issues_found: " + report["issues_found"].dump())) << note;
    EXPECT_TRUE(has(note, "read_resource with resource \"seo_tasks\" and client_id \"demo-plumbing\""))
        << note;
    // The sample's tasks name no report: the note says they are not this report's issues.
    ASSERT_FALSE(h.gw->rows("seo_tasks", kPlumbing).at(0).contains("report_id"));
    EXPECT_TRUE(has(note, "Those rows name no audit report")) << note;
    // Where it points answers with per-page rows.
    const ToolReply tasks =
        h.call("read_resource", {{"resource", "seo_tasks"}, {"client_id", kPlumbing}, {"limit", 5}});
    ASSERT_FALSE(tasks.is_error()) << tasks.response.dump().substr(0, 600);
    ASSERT_FALSE(tasks.structured()["rows"].empty());
    EXPECT_TRUE(tasks.structured()["rows"][0]["url"].is_string());

    // A gateway whose discovery does not list seo_tasks: the note points nowhere.
    ToolHarness unlisted(agency::sample::Options{.counts_only_reports = true,
                                                 .unlisted_resources = {"seo_tasks"}});
    const std::string bare = note_of(unlisted.call(
        "get_audit_issues", {{"client_id", kPlumbing}, {"report_id", report["id"]}}));
    EXPECT_TRUE(has(bare, "issue counts")) << bare;
    EXPECT_FALSE(has(bare, "seo_tasks")) << bare;
}

// The summary text (for hosts that show structuredContent) says a result's note whole, not
// as one member cut at 80 characters.
TEST(DataNotes, TheSummaryTextSaysANoteWhole) {
    const std::string note = "the report is dated 2025-07-02 (its crawled_at), 14 months before "
                             "this audit was asked (2026-09-01): the gateway may have returned an "
                             "old report rather than a new crawl of the site";
    const std::string text = agency::mcp::structured_summary(
        json{{"ok", true}, {"status", "succeeded"}, {"note", note}}.dump());
    EXPECT_TRUE(has(text, " Note: " + note + ".")) << text;
    EXPECT_TRUE(has(text, "status=\"succeeded\"")) << text;
}

}  // namespace data_notes
