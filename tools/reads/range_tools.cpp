// Date-range reads: list_rankings and list_calls (rows in a range, paged), and the aggregates
// over the ranking history computed while its pages stream past (ranking_changes,
// latest_rankings). Each walks the gateway's rows newest first and stops as soon as the
// rows are older than the range; memory holds one entry per keyword, never the rows.
#include "tools/reads/range_tools.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "base/text.hpp"
#include "gateway/page_reader.hpp"
#include "tools/reads/list_query.hpp"

namespace agency::tools {

namespace {

constexpr int kScanPageRows = 1000;

std::string quoted_or_none(const std::string& s) { return s.empty() ? "" : " " + s; }

}  // namespace

std::optional<double> number_of(const RowField& field) {
    if (!field.present() || field.raw == "null") return std::nullopt;
    const std::string text(field.is_string ? field.text.substr(0, 32) : field.raw.substr(0, 32));
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(value)) return std::nullopt;
    return value;
}

std::string_view row_date(const RowField& primary, const RowField& fallback) {
    const RowField& f = primary.present() ? primary : fallback;
    return f.is_string && f.text.size() >= 10 ? f.text.substr(0, 10) : std::string_view();
}

bool walk_newest_first(Toolbox& box, const HistoryQuery& query, std::int64_t offset,
                       const gateway::WalkOptions& walk, mcp::RequestContext& ctx,
                       const std::function<bool(const Row& row, std::int64_t at)>& visit,
                       WalkTally* tally) {
    // The whole scan is one call: every page, read here or ahead, stays inside one call budget
    // (the reader below takes this scope's deadline to its threads).
    gateway::Client& gateway = box.gateway();
    const gateway::DeadlineScope budget(gateway.clock(), gateway.config().call_timeout);
    gateway::PageReader pages(box.gateway(),
                              {.resource = query.resource,
                               .client_id = query.client_id,
                               .limit = kScanPageRows,
                               .order = query.order_field,
                               .direction = query.order_field.empty() ? ""
                                            : query.direction.empty() ? "desc"
                                                                      : query.direction,
                               .filter_field = query.filter_field,
                               .filter_value = query.filter_value},
                              ctx.stop);
    std::optional<std::int64_t> total;  // the gateway's total, once a page has said it
    std::string first_rows;             // how the previous page's rows began, as the page held them
    const int max_pages = std::max(1, box.settings().scan_max_pages);
    for (int pages_read = 0;; ++pages_read) {
        if (ctx.stop.stop_requested())
            throw gateway::Error(gateway::ErrorReason::cancelled, "the request was cancelled");
        if (pages_read == max_pages)
            throw gateway::Error(gateway::ErrorReason::upstream,
                                 "stopped after reading " + std::to_string(max_pages) +
                                     " pages of " + query.resource + " rows for " +
                                     query.client_id +
                                     " and the gateway still says there are "
                                     "more: narrow what it reads (from and to; within_days "
                                     "for latest_rankings)");
        // The next pages are fetched while this one is walked, once a total says they exist.
        gateway::Page page = pages.read(offset, total);
        if (tally) ++tally->requests;
        // A gateway that ignores offset answers every page with the same rows.
        const std::string_view began = gateway::rows_begin(page.body);
        if (pages_read > 0 && !began.empty() && began == first_rows)
            throw gateway::Error(gateway::ErrorReason::upstream,
                                 "the gateway answered offset " + std::to_string(offset) + " of " +
                                     query.resource +
                                     " with the rows it gave for the "
                                     "previous page: it ignores offset, so the scan stopped "
                                     "rather than read the same rows again");
        first_rows.assign(began);
        const gateway::WalkResult walked = box.gateway().walk(page, walk, [&](const Row& row) {
            return visit(row, offset + static_cast<std::int64_t>(row.index));
        });
        if (tally) tally->rows += walked.rows;
        if (walked.stopped) return false;
        offset += static_cast<std::int64_t>(walked.rows);
        total = page.pagination.total;
        if (walked.rows == 0 || offset >= *total) return true;
    }
}

std::string days_before(std::string_view date, int days) {
    using namespace std::chrono;
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (i >= date.size() || date[i] < '0' || date[i] > '9') return {};  // no window then
    const auto number = [&](std::size_t at, std::size_t n) {
        int v = 0;
        for (char c : date.substr(at, n)) v = v * 10 + (c - '0');
        return v;
    };
    const year_month_day day{sys_days{year{number(0, 4)} / number(5, 2) / number(8, 2)} -
                             std::chrono::days{days}};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(day.year()) % 10000,
                  static_cast<unsigned>(day.month()), static_cast<unsigned>(day.day()));
    return text;
}

bool icontains(std::string_view haystack, std::string_view needle) {
    if (needle.empty()) return true;
    if (needle.size() > haystack.size()) return false;
    for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i)
        if (base::iequals(haystack.substr(i, needle.size()), needle)) return true;
    return false;
}

void DatesSeen::see(std::string_view date, std::string_view from, std::string_view to) {
    if (date.empty()) return;
    if (newest.empty()) newest = date;
    oldest = date;
    if (!to.empty() && date > to) after_to = date;  // newest first: the last one is the oldest
    if (!from.empty() && date < from && before_from.empty()) before_from = date;
}

std::string data_coverage(Toolbox& box, const RangeRead& read, const DatesSeen& seen,
                          mcp::RequestContext& ctx) {
    std::string oldest = seen.oldest;
    if (!seen.reached_end) {
        // The walk stopped early: one row read oldest first says where the data begins.
        const std::array<std::string_view, 2> names{read.order_field, read.fallback_field};
        gateway::Page first = box.gateway().read_body({.resource = read.resource,
                                                       .client_id = read.client_id,
                                                       .limit = 1,
                                                       .order = read.order_field,
                                                       .direction = "asc"},
                                                      ctx.stop);
        box.gateway().walk(first, {.fields = names}, [&](const Row& row) {
            const std::string_view d = row_date(row.fields[0], row.fields[1]);
            if (!d.empty() && d < oldest) oldest = d;
            return false;
        });
    }
    return "this client's " + read.resource + " data covers " + oldest + " to " + seen.newest;
}

std::string range_note(Toolbox& box, const RangeRead& read, const DatesSeen& seen,
                       std::string_view matching, mcp::RequestContext& ctx) {
    const std::string what = read.resource + " rows";
    const std::string range = (read.from.empty() ? std::string("the start") : read.from) + " to " +
                              (read.to.empty() ? std::string("now") : read.to);
    if (seen.newest.empty())
        return "client " + read.client_id + " has no dated " + what + " at this gateway";
    std::string note = "no " + what + quoted_or_none(std::string(matching)) + " dated " + range +
                       "; " + data_coverage(box, read, seen, ctx);
    if (!seen.before_from.empty() && !seen.after_to.empty())
        note += "; the nearest dates with data are " + seen.before_from + " and " + seen.after_to;
    return note;
}

mcp::ToolResult scan_page(Toolbox& box, const ScanSpec& spec, const json& args,
                          mcp::RequestContext& ctx) {
    const std::string from = string_arg(args, "from");
    const std::string to = string_arg(args, "to");
    if (!from.empty() && !to.empty() && from > to)
        return tool_error("validation", "\"from\" (" + from + ") is after \"to\" (" + to +
                                            "); give from <= to, both YYYY-MM-DD and inclusive");
    const std::string match =
        spec.match_field.empty() ? "" : string_arg(args, spec.match_field.c_str());
    const std::string client_id = args.at("client_id").get<std::string>();
    std::string bad;
    const ListQuery list_query = parse_list_query(args, bad);
    if (!bad.empty()) return tool_error("validation", bad);
    if (list_query.active()) {
        // The range and the match are the tool's own test of each row; newest first, a dated
        // row older than `from` ends the rows.
        QueryTool tool{
            .tool = spec.tool,
            .label = spec.resource,
            .client_id = client_id,
            .sources = {{.resource = spec.resource,
                         .order = spec.order_field,
                         .direction = "desc"}},
            .own_fields = {spec.order_field, spec.fallback_field,
                           spec.match_field.empty() ? spec.order_field : spec.match_field},
            .count_all = false};  // total on the last page, as without a query
        tool.own_test = [&](std::span<const RowField> f) {
            const std::string_view date = row_date(f[0], f[1]);
            if (!from.empty() && f[0].present() && !date.empty() && date < from)
                return OwnVerdict::end_of_source;
            if ((!from.empty() || !to.empty()) && date.empty()) return OwnVerdict::skip;
            if (!to.empty() && date > to) return OwnVerdict::skip;
            if (!match.empty() && !(f[2].is_string && base::iequals(f[2].text, match)))
                return OwnVerdict::skip;
            return OwnVerdict::keep;
        };
        return query_page(box, tool, list_query, args, ctx);
    }
    const json filters = filter_arguments(args);
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{spec.tool, client_id, principal, &filters};
    const CursorPosition start = args.contains("cursor")
                                     ? box.open_cursor(binding, args["cursor"].get<std::string>())
                                     : CursorPosition{};
    const std::int64_t earlier = start.extra.is_object() ? start.extra.value("n", 0) : 0;
    const std::size_t limit = args.value("limit", 100u);

    std::array<std::string_view, 3> names{
        spec.order_field, spec.fallback_field,
        spec.match_field.empty() ? spec.order_field : spec.match_field};
    const RowSelect select(nullptr, args);
    // Without `from` no row ends the scan early, so the rows that cannot hold the wanted value
    // are passed over unread (most of them, when one keyword of many is asked for).
    const gateway::WalkOptions walk{.fields = names,
                                    .select = select.selection(),
                                    .must_contain = from.empty() ? std::string_view(match) : ""};
    RowWriter writer(client_id, spec.resource, answer_budget(box.settings(), args));
    std::string cursor;
    std::string scratch;
    DatesSeen seen;
    const HistoryQuery history{spec.resource, client_id, spec.order_field};
    seen.reached_end = walk_newest_first(
        box, history, start.offset, walk, ctx, [&](const Row& row, std::int64_t at) {
            const std::span<const RowField> f = row.fields;
            const std::string_view date = row_date(f[0], f[1]);
            seen.see(date, from, to);
            // Newest first: a dated row older than `from` means every later row is too. Rows
            // lacking the order field sort last, so they do not prove it.
            if (!from.empty() && f[0].present() && !date.empty() && date < from) return false;
            if ((!from.empty() || !to.empty()) && date.empty()) return true;
            if (!to.empty() && date > to) return true;
            if (!match.empty() && !(f[2].is_string && base::iequals(f[2].text, match))) return true;
            if (writer.count() >= limit ||
                !writer.add(select.row(row, "", scratch), row.members_left_out)) {
                cursor = box.issue_cursor(
                    binding, at, json{{"n", earlier + static_cast<std::int64_t>(writer.count())}});
                return false;
            }
            return true;
        });
    // The count is known once the scan has reached the end of the range.
    std::optional<std::int64_t> total;
    if (cursor.empty()) total = earlier + static_cast<std::int64_t>(writer.count());
    if (writer.count() == 0 && start.offset == 0) {
        const RangeRead read{client_id,           spec.resource, spec.order_field,
                             spec.fallback_field, from,          to};
        writer.set_note(
            range_note(box, read, seen,
                       match.empty() ? "" : "for " + spec.match_field + " \"" + match + "\"", ctx));
    }
    return mcp::ToolResult::structured(writer.finish(total, cursor));
}

}  // namespace agency::tools
