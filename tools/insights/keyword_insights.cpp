// The keyword insights (issue 46): quick wins, cannibalization and declining pages, each
// computed while the client's keyword history streams past newest first. Memory holds one
// entry per keyword (or per page and keyword), never the history; the walk stops at the oldest
// date the question needs.
#include "tools/insights/insights.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "base/text.hpp"
#include "tools/kit/data_age.hpp"

namespace agency::tools::insights {

namespace {

// Keywords (or page and keyword pairs) held at once; a history with more answers for the first
// ones met, and says so.
constexpr std::size_t kMaxEntries = 50'000;
// Quick wins compare each position with the one this many tracking dates earlier.
constexpr std::size_t kCompareBack = 4;

std::size_t limit_of(const json& args, std::size_t fallback) {
    return args.value("limit", fallback);
}

std::string capped_note(std::string_view what) {
    return "more than " + std::to_string(kMaxEntries) + " " + std::string(what) +
           ": the first met were counted";
}

// ---- find_quick_wins ---------------------------------------------------------------------------

struct Win {
    std::string keyword, url;
    double position = 0;
    std::optional<double> volume, difficulty;
    std::optional<double> earlier;  // the position kCompareBack tracking dates earlier
    double gain = 0;
};

struct QuickWinAsk {
    double min_position, max_position, min_volume;
    std::string as_of;
    std::size_t limit;
};

QuickWinAsk quick_win_ask(const json& args) {
    return {args.value("min_position", 4.0), args.value("max_position", 20.0),
            args.value("min_search_volume", 0.0), string_arg(args, "as_of"),
            limit_of(args, 10)};
}

// Each keyword's best row on the newest tracking date (on or before as_of), and its best
// position kCompareBack dates earlier.
struct NewestRows {
    std::unordered_map<std::string, Win> wins;
    TrackingDates dates;
    bool capped = false, any_volume = false;
};

NewestRows newest_rows(Toolbox& box, const std::string& client_id, const std::string& as_of,
                       mcp::RequestContext& ctx, Provenance& p) {
    NewestRows out;
    walk_keywords(box, client_id, as_of, ctx, p, [&](const KeywordRow& k) {
        const std::size_t at = out.dates.see(k.date);
        if (at > kCompareBack) return false;
        if (!k.position) return true;
        const std::string keyword(k.keyword);
        if (at == 0) {
            auto it = out.wins.find(keyword);
            if (it == out.wins.end()) {
                if (out.wins.size() >= kMaxEntries) return out.capped = true;
                it = out.wins.emplace(keyword, Win{.keyword = keyword}).first;
            } else if (it->second.position <= *k.position) {
                return true;
            }
            Win& w = it->second;
            w.url = std::string(k.url);
            w.position = *k.position;
            w.volume = k.search_volume;
            w.difficulty = k.difficulty;
            out.any_volume = out.any_volume || k.search_volume.has_value();
        } else if (at == kCompareBack) {
            auto it = out.wins.find(keyword);
            if (it != out.wins.end() && (!it->second.earlier || *k.position < *it->second.earlier))
                it->second.earlier = k.position;
        }
        return true;
    });
    return out;
}

ojson win_row(const Win& w, bool with_gain) {
    ojson row = {{"keyword", text_of(w.keyword)}, {"url", text_of(w.url)},
                 {"position", rounded(w.position)}};
    row["search_volume"] = w.volume ? rounded(*w.volume) : ojson(nullptr);
    row["difficulty"] = w.difficulty ? rounded(*w.difficulty) : ojson(nullptr);
    row["position_change"] = w.earlier ? rounded(*w.earlier - w.position) : ojson(nullptr);
    row["estimated_clicks_gain"] = with_gain ? rounded(std::round(w.gain)) : ojson(nullptr);
    return row;
}

}  // namespace

mcp::ToolResult find_quick_wins(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = client_of(args);
    const QuickWinAsk ask = quick_win_ask(args);
    if (ask.min_position > ask.max_position)
        return tool_error("validation", "min_position is above max_position: give "
                                        "min_position <= max_position (default 4 to 20)");
    Provenance p;
    p.method = "each keyword's best position on the newest tracking date" +
               std::string(ask.as_of.empty() ? "" : " on or before as_of") +
               ", kept when within [min_position, max_position] and search_volume >= "
               "min_search_volume; gain = clicks at position 3 minus clicks now (model)";
    NewestRows found = newest_rows(box, client_id, ask.as_of, ctx, p);
    const auto& dates = found.dates.dates();
    std::vector<Win*> kept;
    for (auto& [keyword, w] : found.wins) {
        if (w.position < ask.min_position || w.position > ask.max_position) continue;
        if (ask.min_volume > 0 && (!w.volume || *w.volume < ask.min_volume)) continue;
        if (w.volume)
            w.gain = std::max(0.0, clicks(*w.volume, kTargetPosition) - clicks(*w.volume, w.position));
        kept.push_back(&w);
    }
    const std::size_t shown = std::min(ask.limit, kept.size());
    std::partial_sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(shown), kept.end(),
                      [](const Win* a, const Win* b) {
                          if (a->gain != b->gain) return a->gain > b->gain;
                          if (a->position != b->position) return a->position < b->position;
                          return a->keyword < b->keyword;
                      });
    ojson rows = ojson::array();
    for (std::size_t i = 0; i < shown; ++i) rows.push_back(win_row(*kept[i], found.any_volume));
    std::vector<std::string> notes;
    if (dates.empty())
        notes.push_back("no keyword rows" +
                        (ask.as_of.empty() ? std::string() : " dated on or before " + ask.as_of) +
                        " for " + client_id);
    if (!dates.empty() && !found.any_volume)
        notes.push_back(cannot_tell("keywords", "search_volume") +
                        ", so no clicks are estimated (rows ordered by position)");
    if (found.capped) notes.push_back(capped_note("keywords"));
    if (!dates.empty() && dates.size() <= kCompareBack)
        notes.push_back("position_change needs a tracking date " + std::to_string(kCompareBack) +
                        " dates before " + dates[0] + ": there is none");
    ojson body = {{"client_id", client_id},
                  {"as_of", dates.empty() ? ojson(nullptr) : ojson(dates[0])},
                  {"compared_with", dates.size() > kCompareBack ? ojson(dates[kCompareBack])
                                                                 : ojson(nullptr)},
                  {"candidates", kept.size()},
                  {"returned", rows.size()},
                  {"rows", std::move(rows)}};
    ojson model = click_model();
    model["target_position"] = kTargetPosition;
    body["model"] = std::move(model);
    if (!notes.empty()) body["note"] = base::join(notes, "; ");
    if (!dates.empty()) p.from = dates.back(), p.to = dates[0];
    return answer(std::move(body), p);
}

// ---- find_cannibalization ----------------------------------------------------------------------

namespace {

struct UrlRanked {
    std::string url;
    std::size_t dates = 0;
    std::string first, last;  // oldest and newest tracking date it ranked
    double best = std::numeric_limits<double>::infinity();
    double last_position = 0;  // on `last`
};

// Urls held per keyword: a gateway that names a new page on every row ends there.
constexpr std::size_t kMaxUrlsHeld = 32;

struct KeywordUrls {
    std::vector<UrlRanked> urls;
    bool more_urls = false;  // a url past kMaxUrlsHeld was met
    std::optional<double> volume;
    // The best-placed url of the date being read, and of the date read before it (newer).
    std::string date, url, newer_url;
    double position = 0;
    std::size_t switches = 0;
    void close_date() {
        if (!newer_url.empty() && url != newer_url) ++switches;
        newer_url = url;
    }
    void see(const KeywordRow& k) {
        if (k.date != date) {
            if (!date.empty()) close_date();
            date = std::string(k.date), url = std::string(k.url), position = *k.position;
        } else if (*k.position < position) {
            url = std::string(k.url), position = *k.position;
        }
        auto it = std::find_if(urls.begin(), urls.end(),
                               [&](const UrlRanked& u) { return u.url == k.url; });
        if (it == urls.end()) {
            if (urls.size() == kMaxUrlsHeld) {
                more_urls = true;
                return;
            }
            urls.push_back({.url = std::string(k.url), .last = std::string(k.date),
                            .last_position = *k.position});
            it = urls.end() - 1;
            if (!volume) volume = k.search_volume;
        }
        if (it->first != k.date) ++it->dates;
        it->first = std::string(k.date);
        it->best = std::min(it->best, *k.position);
    }
};

// The window asked, with `to` defaulting to the newest tracking date and `from` to 90 days
// before `to`.
struct Window {
    std::string from, to;
};
constexpr int kDefaultWindowDays = 90;

ojson url_json(const UrlRanked& u) {
    return {{"url", text_of(u.url)}, {"dates", u.dates}, {"first", u.first}, {"last", u.last},
            {"best", rounded(u.best)}, {"last_position", rounded(u.last_position)}};
}

constexpr std::size_t kUrlsShown = 4;

ojson cannibal_json(const std::string& keyword, KeywordUrls& k) {
    std::sort(k.urls.begin(), k.urls.end(), [](const UrlRanked& a, const UrlRanked& b) {
        return a.dates != b.dates ? a.dates > b.dates : a.url < b.url;
    });
    ojson urls = ojson::array();
    for (std::size_t i = 0; i < k.urls.size() && i < kUrlsShown; ++i) urls.push_back(url_json(k.urls[i]));
    ojson out = {{"keyword", text_of(keyword)},
                 {"search_volume", k.volume ? rounded(*k.volume) : ojson(nullptr)},
                 {"switches", k.switches},
                 {"urls", std::move(urls)}};
    if (k.urls.size() > kUrlsShown) out["urls_total"] = k.urls.size();
    if (k.more_urls) out["more_urls"] = true;  // past the urls held: urls_total is a floor
    return out;
}

}  // namespace

mcp::ToolResult find_cannibalization(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = client_of(args);
    Window w{string_arg(args, "from"), string_arg(args, "to")};
    if (!w.from.empty() && !w.to.empty() && w.from > w.to)
        return tool_error("validation", "\"from\" (" + w.from + ") is after \"to\" (" + w.to +
                                            "); give from <= to, both YYYY-MM-DD");
    const std::size_t limit = limit_of(args, 10);
    Provenance p;
    p.method = "per keyword, the urls with a ranked row (a position) in the window; switches "
               "counts the tracking dates whose best-placed url differs from the next date's";
    std::unordered_map<std::string, KeywordUrls> seen;
    bool capped = false, any_url = false, any_position = false;
    std::string newest;
    walk_keywords(box, client_id, w.to, ctx, p, [&](const KeywordRow& k) {
        if (newest.empty()) {
            newest = std::string(k.date);
            if (w.from.empty()) w.from = days_before(newest, kDefaultWindowDays);
        }
        if (k.date < w.from) return false;
        any_url = any_url || !k.url.empty();
        any_position = any_position || k.position.has_value();
        if (!k.position || k.url.empty()) return true;
        auto it = seen.find(std::string(k.keyword));
        if (it == seen.end()) {
            if (seen.size() >= kMaxEntries) return capped = true, true;
            it = seen.emplace(std::string(k.keyword), KeywordUrls{}).first;
        }
        it->second.see(k);
        return true;
    });
    std::vector<std::pair<const std::string*, KeywordUrls*>> found;
    for (auto& [keyword, k] : seen) {
        k.close_date();
        if (k.urls.size() >= 2) found.emplace_back(&keyword, &k);
    }
    const std::size_t shown = std::min(limit, found.size());
    std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(shown),
                      found.end(), [](const auto& a, const auto& b) {
                          if (a.second->switches != b.second->switches)
                              return a.second->switches > b.second->switches;
                          const double va = a.second->volume.value_or(0);
                          const double vb = b.second->volume.value_or(0);
                          return va != vb ? va > vb : *a.first < *b.first;
                      });
    ojson keywords = ojson::array();
    for (std::size_t i = 0; i < shown; ++i)
        keywords.push_back(cannibal_json(*found[i].first, *found[i].second));
    if (w.to.empty()) w.to = newest;
    ojson body = {{"client_id", client_id}, {"from", w.from.empty() ? ojson(nullptr) : ojson(w.from)},
                  {"to", w.to.empty() ? ojson(nullptr) : ojson(w.to)},
                  {"keywords_seen", seen.size()}, {"candidates", found.size()},
                  {"returned", keywords.size()}, {"keywords", std::move(keywords)}};
    std::vector<std::string> notes;
    if (newest.empty()) notes.push_back("no keyword rows" +
                                        (w.to.empty() ? std::string() : " dated on or before " + w.to) +
                                        " for " + client_id);
    else if (!any_url) notes.push_back(cannot_tell("keywords", "url") + ", so no page is named");
    else if (!any_position) notes.push_back(cannot_tell("keywords", "position"));
    else if (found.empty()) notes.push_back("no keyword had two or more urls ranking in the window");
    if (capped) notes.push_back(capped_note("keywords"));
    if (!notes.empty()) body["note"] = base::join(notes, "; ");
    p.from = w.from, p.to = w.to;
    return answer(std::move(body), p);
}

// ---- find_declining_pages ----------------------------------------------------------------------

namespace {

// Sums over one window's rows: volume-weighted and plain positions, estimated clicks.
struct Sums {
    double weighted = 0, volume = 0, plain = 0, clicks = 0;
    std::size_t rows = 0;
    void add(const KeywordRow& k) {
        const double v = k.search_volume.value_or(0);
        weighted += v * *k.position;
        volume += v;
        plain += *k.position;
        clicks += insights::clicks(v, *k.position);
        ++rows;
    }
    double position() const { return volume > 0 ? weighted / volume : plain / static_cast<double>(rows); }
};

struct PageWindows {
    Sums before, after;
    std::map<std::string, std::pair<Sums, Sums>> keywords;
};

struct WindowDates {
    std::string from, to;
    std::size_t dates = 0;
    void see(std::string_view date) {
        if (date != from) ++dates;
        if (to.empty()) to = std::string(date);
        from = std::string(date);
    }
    ojson to_json() const {
        return {{"from", from.empty() ? ojson(nullptr) : ojson(from)},
                {"to", to.empty() ? ojson(nullptr) : ojson(to)},
                {"tracking_dates", dates}};
    }
};

struct Decline {
    const std::string* url;
    const PageWindows* page;
    double before_clicks, after_clicks;
    double lost() const { return before_clicks - after_clicks; }
};

constexpr std::size_t kFellShown = 3;

ojson decline_json(const Decline& d, const WindowDates& before, const WindowDates& after) {
    const double nb = static_cast<double>(std::max<std::size_t>(1, before.dates));
    const double na = static_cast<double>(std::max<std::size_t>(1, after.dates));
    std::vector<std::pair<double, const std::string*>> fell;
    for (const auto& [keyword, s] : d.page->keywords)
        if (s.first.rows > 0 && s.second.rows > 0 && s.second.position() > s.first.position())
            fell.emplace_back(s.second.position() - s.first.position(), &keyword);
    std::sort(fell.begin(), fell.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : *a.second < *b.second;
    });
    ojson fell_most = ojson::array();
    for (std::size_t i = 0; i < fell.size() && i < kFellShown; ++i) {
        const auto& s = d.page->keywords.at(*fell[i].second);
        fell_most.push_back({{"keyword", text_of(*fell[i].second)},
                             {"before", rounded(s.first.position())},
                             {"after", rounded(s.second.position())}});
    }
    return {{"url", text_of(*d.url)},
            {"position_before", rounded(d.page->before.position())},
            {"position_after", rounded(d.page->after.position())},
            {"clicks_before", rounded(std::round(d.page->before.clicks / nb))},
            {"clicks_after", rounded(std::round(d.page->after.clicks / na))},
            {"clicks_lost", rounded(std::round(d.page->before.clicks / nb - d.page->after.clicks / na))},
            {"keywords", d.page->keywords.size()},
            {"fell_most", std::move(fell_most)}};
}

}  // namespace

mcp::ToolResult find_declining_pages(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = client_of(args);
    const int weeks = args.value("weeks", 4);
    const std::size_t limit = limit_of(args, 10);
    Provenance p;
    p.method = "per url, the search-volume-weighted mean position of its keyword rows in the "
               "newest `weeks` weeks (after) and the `weeks` weeks before them (before); "
               "clicks = the model's monthly clicks, averaged over each window's tracking dates";
    std::unordered_map<std::string, PageWindows> pages;
    std::size_t pairs = 0;  // (page, keyword) entries held across pages
    WindowDates before, after;
    std::string newest, split, oldest;
    bool capped = false, any_volume = false;
    walk_keywords(box, client_id, "", ctx, p, [&](const KeywordRow& k) {
        if (newest.empty()) {
            newest = std::string(k.date);
            split = days_before(newest, 7 * weeks);
            oldest = days_before(newest, 14 * weeks);
        }
        if (k.date <= oldest) return false;
        const bool is_after = k.date > split;
        (is_after ? after : before).see(k.date);
        if (!k.position || k.url.empty()) return true;
        auto it = pages.find(std::string(k.url));
        if (it == pages.end()) {
            if (pages.size() >= kMaxEntries) return capped = true, true;
            it = pages.emplace(std::string(k.url), PageWindows{}).first;
        }
        PageWindows& page = it->second;
        auto kw_it = page.keywords.find(std::string(k.keyword));
        if (kw_it == page.keywords.end()) {
            if (pairs >= kMaxEntries) return capped = true, true;
            ++pairs;
            kw_it = page.keywords.emplace(std::string(k.keyword), std::pair<Sums, Sums>{}).first;
        }
        auto& kw = kw_it->second;
        (is_after ? page.after : page.before).add(k);
        (is_after ? kw.second : kw.first).add(k);
        any_volume = any_volume || k.search_volume.has_value();
        return true;
    });
    const double nb = static_cast<double>(std::max<std::size_t>(1, before.dates));
    const double na = static_cast<double>(std::max<std::size_t>(1, after.dates));
    std::vector<Decline> declines;
    std::size_t compared = 0;
    for (const auto& [url, page] : pages) {
        if (page.before.rows == 0 || page.after.rows == 0) continue;
        ++compared;
        const Decline d{&url, &page, page.before.clicks / nb, page.after.clicks / na};
        if (any_volume ? d.lost() > 0 : page.after.position() > page.before.position())
            declines.push_back(d);
    }
    const std::size_t shown = std::min(limit, declines.size());
    std::partial_sort(declines.begin(), declines.begin() + static_cast<std::ptrdiff_t>(shown),
                      declines.end(), [](const Decline& a, const Decline& b) {
                          if (a.lost() != b.lost()) return a.lost() > b.lost();
                          const double fa = a.page->after.position() - a.page->before.position();
                          const double fb = b.page->after.position() - b.page->before.position();
                          return fa != fb ? fa > fb : *a.url < *b.url;
                      });
    ojson rows = ojson::array();
    for (std::size_t i = 0; i < shown; ++i) rows.push_back(decline_json(declines[i], before, after));
    ojson body = {{"client_id", client_id}, {"weeks", weeks},
                  {"before", before.to_json()}, {"after", after.to_json()},
                  {"pages_compared", compared}, {"candidates", declines.size()},
                  {"returned", rows.size()}, {"pages", std::move(rows)}, {"model", click_model()}};
    std::vector<std::string> notes;
    if (newest.empty()) notes.push_back("no keyword rows for " + client_id);
    else if (before.dates == 0)
        notes.push_back("no tracking date in the " + std::to_string(weeks) + " weeks before " +
                        after.from + ": the data begins there, so nothing is compared");
    if (!newest.empty() && !any_volume)
        notes.push_back(cannot_tell("keywords", "search_volume") +
                        ": positions are plain means and clicks are 0");
    if (capped) notes.push_back(capped_note("pages or keywords"));
    if (!notes.empty()) body["note"] = base::join(notes, "; ");
    p.from = before.from.empty() ? after.from : before.from, p.to = after.to;
    return answer(std::move(body), p);
}

}  // namespace agency::tools::insights
