// The aggregate reads agencies ask for most, computed in the server while the keyword history
// streams past newest first: ranking_changes (each keyword's position at the start and the end
// of a range) and latest_rankings (each keyword's newest row). Memory holds one entry per
// keyword (capped), never the history.
#include "tools/reads/range_tools.hpp"

#include "base/text.hpp"
#include "base/untrusted_text.hpp"
#include "tools/kit/data_age.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <unordered_map>

namespace agency::tools {

namespace {

// Keywords held at once; a history with more is answered for the first ones met, and says so.
constexpr std::size_t kMaxKeywords = 50'000;

// Fields read from each keyword row, in this order.
enum Field : std::size_t { kTracked, kCreated, kKeyword, kPosition, kUrl, kVolume, kFieldCount };
constexpr std::array<std::string_view, kFieldCount> kFields{
    "tracked_at", "created_at", "keyword", "position", "url", "search_volume"};

// A keyword row's filters: `keyword` and `url` as case-insensitive substrings.
struct RowFilter {
    std::string keyword, url;
    bool passes(std::span<const RowField> f) const {
        if (!keyword.empty() && !(f[kKeyword].is_string && icontains(f[kKeyword].text, keyword)))
            return false;
        return url.empty() || (f[kUrl].is_string && icontains(f[kUrl].text, url));
    }
};

// Walks the keyword history newest first; `visit` gets the rows that pass `filter` with their
// date and returns false to stop. Fills `seen` with the dates met (for an empty answer's note).
template <typename Visit>
void stream_keywords(Toolbox& box, const std::string& client_id, const RowFilter& filter,
                     const std::string& from, const std::string& to, DatesSeen& seen,
                     const gateway::RowSelection* select, mcp::RequestContext& ctx, Visit visit) {
    const gateway::WalkOptions walk{.fields = kFields, .select = select};
    seen.reached_end = walk_newest_first(
        box, {"keywords", client_id, "tracked_at"}, 0, walk, ctx,
        [&](const Row& row, std::int64_t) {
            const std::string_view date = row_date(row.fields[kTracked], row.fields[kCreated]);
            seen.see(date, from, to);
            return date.empty() || !filter.passes(row.fields) || visit(row, date);
        });
}

struct Point {
    std::string date;
    std::optional<double> position;
    std::string url;
    std::optional<double> search_volume;
};

struct Change {
    std::string keyword;
    Point start, end;
    bool start_fixed = false;  // start is the newest row on or before `from`
};

double delta(const Change* c) { return *c->start.position - *c->end.position; }

// The keywords compared (a position on two dates), the counts, and the top `limit` of those
// that moved in `direction`, biggest move first.
struct Picked {
    std::vector<const Change*> compared, shown;
    std::size_t matching = 0, improved = 0, dropped = 0, unchanged = 0;
};

Picked pick(const std::unordered_map<std::string, Change>& changes, const std::string& direction,
            std::size_t limit) {
    Picked p;
    for (const auto& [keyword, c] : changes) {
        if (!c.start.position || !c.end.position || c.start.date == c.end.date) continue;
        p.compared.push_back(&c);
        const double d = delta(&c);
        (d > 0 ? p.improved : d < 0 ? p.dropped : p.unchanged)++;
        // Only keywords that moved are shown and counted in total, whatever the direction.
        if (d == 0 || (direction == "dropped" && d > 0) || (direction == "improved" && d < 0))
            continue;
        p.shown.push_back(&c);
    }
    auto size = [&](const Change* c) {
        return direction == "dropped"    ? -delta(c)
               : direction == "improved" ? delta(c)
                                         : std::fabs(delta(c));
    };
    auto order = [&](const Change* a, const Change* b) {
        const double x = size(a), y = size(b);
        return x != y ? x > y : a->keyword < b->keyword;
    };
    p.matching = p.shown.size();
    const std::size_t shown = std::min(limit, p.matching);
    std::partial_sort(p.shown.begin(), p.shown.begin() + static_cast<std::ptrdiff_t>(shown),
                      p.shown.end(), order);
    p.shown.resize(shown);
    return p;
}

using ojson = nlohmann::ordered_json;

void put_number(ojson& row, const char* name, const std::optional<double>& v) {
    if (!v) {
        row[name] = nullptr;
    } else if (*v == std::floor(*v) && std::fabs(*v) < 1e15) {
        row[name] = static_cast<std::int64_t>(*v);
    } else {
        row[name] = *v;
    }
}

// The date most keywords share, so rows need their own dates only where they differ.
std::string common_date(const std::vector<const Change*>& rows, bool start) {
    std::map<std::string, std::size_t> counts;
    for (const Change* c : rows) ++counts[start ? c->start.date : c->end.date];
    std::string best;
    std::size_t most = 0;
    for (const auto& [date, n] : counts)
        if (n > most) best = date, most = n;
    return best;
}

// Rows kept per the `fields` argument, and written until the size budget.
std::size_t write_rows(RowWriter& writer, const std::vector<ojson>& rows, const json& args) {
    std::vector<std::string> keep;
    if (auto f = args.find("fields"); f != args.end() && f->is_array())
        for (const auto& name : *f) keep.push_back(name.get<std::string>());
    std::size_t written = 0;
    for (const ojson& row : rows) {
        ojson out = row;
        if (!keep.empty())
            for (auto it = out.begin(); it != out.end();)
                it = std::find(keep.begin(), keep.end(), it.key()) == keep.end() ? out.erase(it)
                                                                                 : ++it;
        if (!writer.add(out.dump())) break;
        ++written;
    }
    return written;
}

// The tracking dates of the rows ranking_changes met (those passing its filters), around its
// [from, to] range.
struct RangeDates {
    std::size_t in_range = 0;  // distinct dates within [from, to]
    std::string newest_in, oldest_in;
    std::string before;  // the newest date before `from` the walk reached
    std::string after;   // the oldest date after `to`
    void see(std::string_view date, const std::string& from, const std::string& to) {
        if (date > to) {
            after = date;  // newest first: the last one is the oldest
        } else if (date < from) {
            if (before.empty()) before = date;
        } else if (date != oldest_in) {
            ++in_range;
            if (newest_in.empty()) newest_in = date;
            oldest_in = date;
        }
    }
};

// Why no keyword could be compared although rows were met: the tracking dates the range
// holds, the nearest ones outside it, and the dates the data covers.
std::string uncompared_note(Toolbox& box, const RangeRead& read, const DatesSeen& seen,
                            const RangeDates& d, const std::string& which,
                            mcp::RequestContext& ctx) {
    const std::string& from = read.from;
    const std::string& to = read.to;
    const std::string range = " between " + from + " and " + to;
    std::string note;
    if (d.in_range == 0) {
        note = "no tracking date" + which + range + ", so there are no positions to compare";
        if (!d.before.empty() && !d.after.empty())
            note += "; the nearest tracking dates are " + d.before + " (before) and " + d.after +
                    " (after): from " + d.before + " to " + d.after + " compares those";
        else if (!d.before.empty())
            note += "; the newest tracking date before it is " + d.before + ", and none is later";
        else if (!d.after.empty())
            note += "; the first tracking date after it is " + d.after + ", and none is earlier";
    } else if (d.in_range == 1) {
        note = "only one tracking date" + which + range + ": " + d.newest_in;
        note += d.newest_in == from && !d.before.empty()
                    ? " (positions on " + from + " are the start)"
                    : ", and none before it to compare with";
        if (!d.after.empty())
            note += "; the next tracking date is " + d.after +
                    ": a \"to\" on or after it "
                    "compares the two";
    } else {
        note = "no keyword" + which + " has positions on two of the " + std::to_string(d.in_range) +
               " tracking dates" + range + " (" + d.oldest_in + " to " + d.newest_in + ")";
    }
    return note + "; " + data_coverage(box, read, seen, ctx);
}

// The compared dates when they lie well away from the dates asked (data that begins late,
// ends early, or has a gap), or "".
std::string compared_dates_note(const std::string& from, const std::string& to,
                                const std::string& from_date, const std::string& to_date) {
    std::vector<std::string> parts;
    if (const auto gap = days_between(from_date, from); gap && *gap > kTrackingSlackDays)
        parts.push_back("the start positions are from " + from_date +
                        ", the newest tracking date on or before from " + from + ", " +
                        age_words(*gap) + " before it");
    else if (gap && -*gap > kTrackingSlackDays)
        parts.push_back("the start positions are from " + from_date + ", " + age_words(*gap) +
                        " after from " + from + " (no earlier tracking date)");
    if (const auto gap = days_between(to_date, to); gap && *gap > kTrackingSlackDays)
        parts.push_back("the end positions are from " + to_date +
                        ", the newest tracking date on or before to " + to + ", " +
                        age_words(*gap) + " before it");
    return base::join(parts, "; ");
}

// How old latest_rankings' positions are: against as_of when asked, and against today.
std::string latest_age_note(const std::string& as_of, const std::string& newest,
                            const std::string& today) {
    std::string note;
    const auto behind_asked = days_between(newest, as_of);
    if (!as_of.empty() && behind_asked && *behind_asked > 0)
        note = "positions as of " + newest + ", the newest tracking date on or before as_of " +
               as_of + " (" + age_words(*behind_asked) + " before it)";
    const auto behind_today = days_between(newest, today);
    if (behind_today && *behind_today > kTrackingSlackDays) {
        const std::string old = age_words(*behind_today) + " before today (" + today + ")";
        if (!note.empty())
            note += ", " + old;
        else if (!as_of.empty())
            note = "positions as of " + newest + ", " + old;
        else
            note = "the newest tracking date is " + newest + ", " + old +
                   ": nothing was tracked after it";
    }
    return note;
}

}  // namespace

mcp::ToolResult ranking_changes(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string from = args.at("from").get<std::string>();
    const std::string to = args.at("to").get<std::string>();
    if (from > to)
        return tool_error("validation", "\"from\" (" + from + ") is after \"to\" (" + to +
                                            "); give from <= to, both YYYY-MM-DD");
    const std::string direction = args.value("direction", std::string("all"));
    const std::size_t limit = args.value("limit", 25u);
    const RowFilter filter{string_arg(args, "keyword"), string_arg(args, "url")};

    std::unordered_map<std::string, Change> changes;
    bool capped = false;
    std::string stop_date;  // the newest tracking date on or before `from`, once met
    DatesSeen seen;
    RangeDates dates;
    stream_keywords(box, client_id, filter, from, to, seen, nullptr, ctx,
                    [&](const Row& row, std::string_view date) {
                        dates.see(date, from, to);
                        if (date > to) return true;
                        if (date <= from) {
                            if (stop_date.empty()) stop_date = date;
                            if (date < stop_date) return false;  // every start is known
                        }
                        const std::span<const RowField> f = row.fields;
                        if (!f[kKeyword].is_string) return true;
                        auto it = changes.find(std::string(f[kKeyword].text));
                        const Point point{
                            std::string(date), number_of(f[kPosition]),
                            f[kUrl].is_string ? std::string(f[kUrl].text) : std::string(),
                            number_of(f[kVolume])};
                        if (it == changes.end()) {
                            if (changes.size() >= kMaxKeywords) {
                                capped = true;
                                return true;
                            }
                            it = changes
                                     .emplace(std::string(f[kKeyword].text),
                                              Change{std::string(f[kKeyword].text), point, point})
                                     .first;
                        }
                        Change& c = it->second;
                        if (!c.start_fixed)
                            c.start = point;  // the oldest so far in the range, until...
                        if (date <= from)
                            c.start_fixed = true;  // ...the newest on or before `from`
                        return true;
                    });

    const Picked p = pick(changes, direction, limit);
    const std::vector<const Change*>& compared = p.compared;
    const std::vector<const Change*>& picked = p.shown;
    const std::size_t matching = p.matching;
    const std::size_t improved = p.improved, dropped = p.dropped, unchanged = p.unchanged;
    const std::string from_date = common_date(compared, true);
    const std::string to_date = common_date(compared, false);
    std::vector<ojson> rows;
    for (const Change* c : picked) {
        ojson row = {{"keyword", c->keyword}, {"url", c->end.url}};
        // The page that ranked at the start, when another one ranks now.
        if (!c->start.url.empty() && c->start.url != c->end.url) row["from_url"] = c->start.url;
        put_number(row, "from_position", c->start.position);
        put_number(row, "to_position", c->end.position);
        put_number(row, "change", delta(c));
        put_number(row, "search_volume",
                   c->end.search_volume ? c->end.search_volume : c->start.search_volume);
        if (c->start.date != from_date) row["from_date"] = c->start.date;
        if (c->end.date != to_date) row["to_date"] = c->end.date;
        rows.push_back(std::move(row));
    }
    RowWriter writer(client_id, "keywords", answer_budget(box.settings(), args));
    write_rows(writer, rows, args);
    std::vector<std::string> notes;
    if (compared.empty()) {
        const RangeRead read{client_id, "keywords", "tracked_at", "created_at", from, to};
        std::string which;
        if (!filter.keyword.empty()) which += "for keywords containing \"" + filter.keyword + "\"";
        if (!filter.url.empty())
            which += (which.empty() ? "" : " and ") + std::string("for urls containing \"") +
                     filter.url + "\"";
        notes.push_back(changes.empty() ? range_note(box, read, seen, which, ctx)
                                        : uncompared_note(box, read, seen, dates,
                                                          which.empty() ? "" : " " + which, ctx));
    } else {
        if (picked.empty())
            notes.push_back("no keyword " +
                            (direction == "all" ? std::string("moved") : direction) + " between " +
                            from_date + " and " + to_date + " (" + std::to_string(compared.size()) +
                            " keywords compared)");
        if (std::string dated = compared_dates_note(from, to, from_date, to_date); !dated.empty())
            notes.push_back(std::move(dated));
    }
    if (capped)
        notes.push_back("more than " + std::to_string(kMaxKeywords) +
                        " keywords: the first met were compared; narrow with keyword or url");
    if (!notes.empty()) writer.set_note(base::join(notes, "; "));
    ojson extra = {{"from", from},           {"to", to},
                   {"direction", direction}, {"keywords_compared", compared.size()},
                   {"improved", improved},   {"dropped", dropped},
                   {"unchanged", unchanged}};
    if (!from_date.empty()) extra["from_date"] = from_date;
    if (!to_date.empty()) extra["to_date"] = to_date;
    const std::string members = extra.dump();
    return mcp::ToolResult::structured(
        writer.finish(static_cast<std::int64_t>(matching), "",
                      std::string_view(members).substr(1, members.size() - 2)));
}

mcp::ToolResult latest_rankings(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string as_of = string_arg(args, "as_of");
    const std::size_t limit = args.value("limit", 100u);
    const int within_days = args.value("within_days", 90);
    const RowFilter filter{string_arg(args, "keyword"), string_arg(args, "url")};

    struct Latest {
        std::optional<double> position;
        std::string keyword;
        std::string row;  // the gateway's row, every member
    };
    std::unordered_map<std::string, Latest> latest;
    bool capped = false;
    DatesSeen seen;
    const RowSelect select(nullptr, args);
    std::string scratch;
    // The walk ends within_days before the newest date it keeps: a history of years is not read
    // to its start for keywords no longer tracked.
    std::string oldest_kept;
    std::string newest_kept;  // the newest tracking date of the answer
    bool windowed = false;
    stream_keywords(box, client_id, filter, "", as_of, seen, select.selection(), ctx,
                    [&](const Row& row, std::string_view date) {
                        if (!as_of.empty() && date > as_of) return true;
                        if (oldest_kept.empty()) {
                            oldest_kept = days_before(date, within_days);
                            newest_kept = date;
                        }
                        if (date < oldest_kept) {
                            windowed = true;
                            return false;
                        }
                        const std::span<const RowField> f = row.fields;
                        if (!f[kKeyword].is_string) return true;
                        const std::string keyword(f[kKeyword].text);
                        if (latest.contains(keyword)) return true;
                        if (latest.size() >= kMaxKeywords) {
                            capped = true;
                            return true;
                        }
                        latest.emplace(keyword, Latest{number_of(f[kPosition]), keyword,
                                                       std::string(select.row(row, "", scratch))});
                        return true;
                    });

    std::vector<const Latest*> sorted;
    for (const auto& [k, v] : latest) sorted.push_back(&v);
    // Best position first; unranked (no number) last.
    std::sort(sorted.begin(), sorted.end(), [](const Latest* a, const Latest* b) {
        if (a->position.has_value() != b->position.has_value()) return a->position.has_value();
        if (a->position && *a->position != *b->position) return *a->position < *b->position;
        return a->keyword < b->keyword;
    });
    RowWriter writer(client_id, "keywords", answer_budget(box.settings(), args));
    for (std::size_t i = 0; i < sorted.size() && i < limit; ++i)
        if (!writer.add(sorted[i]->row)) break;
    std::vector<std::string> notes;
    if (latest.empty()) {
        const RangeRead read{client_id, "keywords", "tracked_at", "created_at", "", as_of};
        notes.push_back(range_note(
            box, read, seen,
            filter.keyword.empty() ? "" : "for keywords containing \"" + filter.keyword + "\"",
            ctx));
    } else if (std::string age = latest_age_note(as_of, newest_kept, today_of(box.clock()));
               !age.empty()) {
        notes.push_back(std::move(age));
    }
    if (capped)
        notes.push_back("more than " + std::to_string(kMaxKeywords) +
                        " keywords: the first met are listed; narrow with keyword or url");
    if (windowed && !capped)
        notes.push_back("keywords last tracked before " + oldest_kept + " (within_days " +
                        std::to_string(within_days) + " before the newest date) are not listed");
    if (!notes.empty()) writer.set_note(base::join(notes, "; "));
    return mcp::ToolResult::structured(writer.finish(static_cast<std::int64_t>(latest.size()), ""));
}

// The rankings view's keyword picker (view_ranking_history): one keyword's positions (exact,
// any case) within [from, to], oldest first, up to kMaxHistoryPoints of the newest.
mcp::ToolResult ranking_history(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    constexpr std::size_t kMaxHistoryPoints = 5000;
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string keyword = args.at("keyword").get<std::string>();
    const std::string from = args.value("from", "");
    const std::string to = args.value("to", "");
    DatesSeen seen;
    json points = json::array();
    bool truncated = false;
    stream_keywords(
        box, client_id, RowFilter{.keyword = keyword}, from, to, seen, nullptr, ctx,
        [&](const Row& row, std::string_view date) {
            if (!to.empty() && date > to) return true;
            if (!from.empty() && date < from) return false;  // newest first: the rest is older
            if (!base::iequals(row.fields[kKeyword].text, keyword)) return true;
            if (points.size() == kMaxHistoryPoints) {
                truncated = true;
                return false;
            }
            const auto position = number_of(row.fields[kPosition]);
            json point = {{"date", date}, {"position", position ? json(*position) : json(nullptr)}};
            if (row.fields[kUrl].is_string)
                point["url"] = base::clean_untrusted_text(row.fields[kUrl].text);
            points.push_back(std::move(point));
            return true;
        });
    std::reverse(points.begin(), points.end());
    return mcp::ToolResult::structured(json{
        {"client_id", client_id},
        {"keyword", keyword},
        {"points", std::move(points)},
        {"truncated", truncated}}.dump());
}

}  // namespace agency::tools
