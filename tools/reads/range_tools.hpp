// Date-range reads over one resource (tools/reads/range_tools.cpp, tools/reads/ranking_tools.cpp):
// what they share to walk rows newest first and to explain an empty answer by the dates the data
// actually covers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tools/reads/read_tools.hpp"

namespace agency::tools {

// A number as the gateway sent it, 12 or "12"; nullopt for null, absent or any other text (a
// position that is not ranked).
std::optional<double> number_of(const RowField& field);

// The YYYY-MM-DD a row is dated by: its order field, else the fallback; "" when neither.
std::string_view row_date(const RowField& primary, const RowField& fallback);

// A resource's history, newest first by a date field the gateway orders by.
struct HistoryQuery {
    std::string resource;
    std::string client_id;
    std::string order_field;
    std::string direction{};                     // "" = desc when order_field is set
    std::string filter_field{}, filter_value{};  // "" = no gateway filter
};

// Walks the rows of `query` from `offset` in pages of 1000 (the next pages fetched while one
// is walked) until `visit` returns false or the rows end; `at` is a row's offset in the whole
// list. True when the walk reached the end of the rows. Throws gateway::Error (cancelled, when
// the call's stop token fires).
// What a walk read, for an answer's provenance: gateway requests (pages) and rows walked.
struct WalkTally {
    std::size_t requests = 0;
    std::size_t rows = 0;
};
// An empty order_field walks the gateway's own order.
bool walk_newest_first(Toolbox& box, const HistoryQuery& query, std::int64_t offset,
                       const gateway::WalkOptions& walk, mcp::RequestContext& ctx,
                       const std::function<bool(const Row& row, std::int64_t at)>& visit,
                       WalkTally* tally = nullptr);

// The YYYY-MM-DD `days` days before `date` (a row_date), or "" when `date` does not have
// digits where a date has them.
std::string days_before(std::string_view date, int days);

// ASCII case-insensitive substring test.
bool icontains(std::string_view haystack, std::string_view needle);

// The dates a newest-first walk saw around a [from, to] range.
struct DatesSeen {
    std::string newest;        // the first dated row's date
    std::string oldest;        // the last dated row's date the walk reached
    std::string after_to;      // the oldest date later than `to`
    std::string before_from;   // the newest date earlier than `from`
    bool reached_end = false;  // the walk saw every row (oldest is the data's first date)
    void see(std::string_view date, std::string_view from, std::string_view to);
};

struct RangeRead {
    std::string client_id;
    std::string resource;
    std::string order_field;     // the date field the gateway orders by
    std::string fallback_field;  // a row's date when it lacks order_field
    std::string from, to;        // "" = open
};

// "this client's keywords data covers X to Y": the dates the walk saw, and the oldest row read
// (one request) when the walk did not reach it. `seen.newest` must be set.
std::string data_coverage(Toolbox& box, const RangeRead& read, const DatesSeen& seen,
                          mcp::RequestContext& ctx);

// Why a range read found nothing: "no keywords rows dated A to B; this client's keywords data
// covers X to Y; the nearest dates with data are P and Q". Reads the oldest row when the walk
// did not reach it (one request).
std::string range_note(Toolbox& box, const RangeRead& read, const DatesSeen& seen,
                       std::string_view matching, mcp::RequestContext& ctx);

// The aggregate reads over keyword rankings (tools/reads/ranking_tools.cpp).
mcp::ToolResult ranking_changes(Toolbox& box, const json& args, mcp::RequestContext& ctx);
mcp::ToolResult latest_rankings(Toolbox& box, const json& args, mcp::RequestContext& ctx);
// The rankings view's keyword picker (the app-only tool view_ranking_history).
mcp::ToolResult ranking_history(Toolbox& box, const json& args, mcp::RequestContext& ctx);

}  // namespace agency::tools
