#include "tools/insights/insight_kit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "base/untrusted_text.hpp"
#include "gateway/row_cut.hpp"
#include "tools/kit/untrusted_results.hpp"

namespace agency::tools::insights {

double click_rate(double position) {
    const double whole = std::round(position);
    if (!std::isfinite(whole) || whole < 1 || whole > static_cast<double>(kClickRates.size()))
        return 0;
    return kClickRates[static_cast<std::size_t>(whole) - 1];
}

double clicks(double search_volume, double position) {
    return search_volume > 0 ? search_volume * click_rate(position) : 0;
}

ojson click_model() {
    return {{"clicks", "search_volume x ctr(position rounded); 0 past position 20"},
            {"ctr", kClickRates}};
}

ojson rounded(double value) {
    const double tenth = std::round(value * 10) / 10;
    if (tenth == std::floor(tenth) && std::fabs(tenth) < 1e15)
        return static_cast<std::int64_t>(tenth);
    return tenth;
}

std::string text_of(std::string_view gateway_text) {
    std::string out = base::clean_untrusted_text(gateway_text);
    if (out.size() <= kMaxText) return out;
    return std::string(gateway::utf8_prefix(out, kMaxText)) + "...";
}

void Provenance::used(std::string_view resource) {
    if (std::find(resources.begin(), resources.end(), resource) == resources.end())
        resources.emplace_back(resource);
}

ojson Provenance::to_json() const {
    ojson out = {{"resources", resources}};
    if (!from.empty() || !to.empty()) out["window"] = {{"from", from}, {"to", to}};
    out["rows_read"] = read.rows;
    out["gateway_requests"] = read.requests;
    out["method"] = method;
    return out;
}

bool walk_rows(Toolbox& box, const HistoryQuery& query, std::span<const std::string_view> fields,
               mcp::RequestContext& ctx, Provenance& p,
               const std::function<bool(const Row& row)>& visit) {
    p.used(query.resource);
    const gateway::WalkOptions walk{.fields = fields};
    return walk_newest_first(
        box, query, 0, walk, ctx, [&](const Row& row, std::int64_t) { return visit(row); },
        &p.read);
}

namespace {

enum KeywordField : std::size_t {
    kTracked, kCreated, kKeyword, kPosition, kUrl, kVolume, kDifficulty, kKeywordFields
};
constexpr std::array<std::string_view, kKeywordFields> kKeywordFieldNames{
    "tracked_at", "created_at", "keyword", "position", "url", "search_volume", "difficulty"};

}  // namespace

void walk_keywords(Toolbox& box, const std::string& client_id, const std::string& as_of,
                   mcp::RequestContext& ctx, Provenance& p,
                   const std::function<bool(const KeywordRow&)>& visit) {
    walk_rows(box, {"keywords", client_id, "tracked_at"}, kKeywordFieldNames, ctx, p,
              [&](const Row& row) {
        const std::span<const RowField> f = row.fields;
        const std::string_view date = row_date(f[kTracked], f[kCreated]);
        if (date.empty() || !f[kKeyword].is_string) return true;
        if (!as_of.empty() && date > as_of) return true;
        const KeywordRow k{.date = date,
                           .keyword = f[kKeyword].text,
                           .url = f[kUrl].is_string ? f[kUrl].text : std::string_view(),
                           .position = number_of(f[kPosition]),
                           .search_volume = number_of(f[kVolume]),
                           .difficulty = number_of(f[kDifficulty])};
        return visit(k);
    });
}

std::size_t TrackingDates::see(std::string_view date) {
    // Newest first: a date met before is one of the last few (rows of a date come together).
    for (std::size_t i = dates_.size(); i-- > 0;)
        if (dates_[i] == date) return i;
    dates_.emplace_back(date);
    return dates_.size() - 1;
}

std::string cannot_tell(std::string_view resource, std::string_view member) {
    return "cannot tell: the " + std::string(resource) + " rows carry no " + std::string(member);
}

mcp::ToolResult answer(ojson body, const Provenance& p) {
    body["provenance"] = p.to_json();
    mcp::ToolResult result = mcp::ToolResult::structured(body.dump());
    mark_untrusted(result);
    return result;
}

std::string client_of(const json& args) {
    return args.at("client_id").get<std::string>();
}

}  // namespace agency::tools::insights
