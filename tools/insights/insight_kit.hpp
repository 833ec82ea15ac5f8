// What the insight tools share (issue 46: decisions, not rows): the click model their estimates
// use, the walk that streams a client's rows newest first while counting what it read, the
// keyword row as they read it, and the answer with its provenance. Every fact an answer states
// is a gateway value or arithmetic over such values, shown with the model that made it.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/kit/tool_kit.hpp"
#include "tools/reads/range_tools.hpp"

namespace agency::tools::insights {

using ojson = nlohmann::ordered_json;

// ---- the click model ----------------------------------------------------------------------

// The share of a keyword's monthly searches that click a result at positions 1 to 20; past 20,
// none. An estimate of the usual organic click-through curve, stated in every answer that
// uses it (click_model()) so that anyone can redo the arithmetic.
inline constexpr std::array<double, 20> kClickRates{
    0.28, 0.15, 0.11, 0.08, 0.06, 0.05, 0.04, 0.03, 0.025, 0.02,
    0.015, 0.013, 0.011, 0.01, 0.009, 0.008, 0.007, 0.006, 0.005, 0.004};
// The position a quick win is estimated to reach.
inline constexpr int kTargetPosition = 3;
// ctr(position): the position rounded to a whole number; 0 past 20 or below 1.
double click_rate(double position);
// Estimated clicks a month: search_volume x ctr(position).
double clicks(double search_volume, double position);
// The model as answers state it.
ojson click_model();

// ---- values ---------------------------------------------------------------------------------

// A row field's number, 12 or "12" (tools/reads/range_tools.hpp).
using agency::tools::number_of;
// A value for an answer: whole numbers as integers, others to one decimal.
ojson rounded(double value);
// Gateway text for an answer: cleaned (base/untrusted_text.hpp) and at most kMaxText bytes
// (cut on a character boundary, with "..." after), so one long value cannot fill an answer.
inline constexpr std::size_t kMaxText = 240;
std::string text_of(std::string_view gateway_text);

// ---- reading --------------------------------------------------------------------------------

// What an answer read and how it reasoned: the resources, the window of dates, the rows and
// gateway requests, and one line on the method.
struct Provenance {
    std::vector<std::string> resources;
    std::string from, to;
    WalkTally read;
    std::string method;
    void used(std::string_view resource);
    ojson to_json() const;
};

// Walks `resource` of the client newest first by `order_field` ("" = the gateway's order) in
// pages of 1000 until `visit` returns false, counting into `p`. Throws gateway::Error.
bool walk_rows(Toolbox& box, const HistoryQuery& query, std::span<const std::string_view> fields,
               mcp::RequestContext& ctx, Provenance& p,
               const std::function<bool(const Row& row)>& visit);

// A keyword ranking row (the spec's fields) as the keyword insights read it.
struct KeywordRow {
    std::string_view date;     // tracked_at, else created_at (YYYY-MM-DD)
    std::string_view keyword;
    std::string_view url;
    std::optional<double> position;
    std::optional<double> search_volume;
    std::optional<double> difficulty;
};

// Walks the client's keyword rows newest first, each with its date and a keyword; rows dated
// after `as_of` ("" = none) are passed over. `visit` returns false to stop.
void walk_keywords(Toolbox& box, const std::string& client_id, const std::string& as_of,
                   mcp::RequestContext& ctx, Provenance& p,
                   const std::function<bool(const KeywordRow&)>& visit);

// The distinct tracking dates a newest-first walk met, in that order (newest first).
class TrackingDates {
public:
    // The index of `date` among the dates met so far (0 = the newest), adding it when new.
    std::size_t see(std::string_view date);
    const std::vector<std::string>& dates() const { return dates_; }

private:
    std::vector<std::string> dates_;
};

// ---- answering ------------------------------------------------------------------------------

// The sentence an answer carries when the rows lack what a figure needs: "cannot tell: the
// keywords rows carry no search_volume".
std::string cannot_tell(std::string_view resource, std::string_view member);

// A structured result: `body` with its provenance appended, marked untrusted (gateway text).
mcp::ToolResult answer(ojson body, const Provenance& p);

// The client_id argument.
std::string client_of(const json& args);

}  // namespace agency::tools::insights
