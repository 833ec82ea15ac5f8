// triage_clients (issue 46): every client the caller reaches, most urgent first. Clients are
// read a few at once within the one call's budget, each resource at most once per client (one
// walk, stopped as soon as the question is answered), so memory is a page per client in
// flight. A client the budget did not reach is named as missing: the answer is partial and
// says so, never silently shorter.
#include "tools/insights/insights.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/text.hpp"
#include "base/trace_context.hpp"
#include "gateway/retry.hpp"
#include "tools/kit/data_age.hpp"

namespace agency::tools::insights {

namespace {

// Clients read at once.
constexpr std::size_t kClientsAtOnce = 8;
// Clients triaged in one call: an agency's list, not a gateway's endless one.
constexpr std::size_t kMaxClients = 5000;
// A keyword counts as dropped (or improved) when it moved this many positions or more.
constexpr double kMoved = 3;

struct Keywords {
    std::string newest, compared_with;
    std::size_t compared = 0, dropped = 0, improved = 0;
    double clicks_change = 0;
    bool any_rows = false, any_volume = false;
};

struct Facts {
    std::string id, name;
    Keywords keywords;
    std::optional<double> audit_score, audit_change;
    std::string audit_date;
    std::optional<std::size_t> inaccurate_citations, negative_reviews, lost_backlinks;
    std::size_t rows_with_data = 0;  // rows read across the resources (0: a client without data)
    std::vector<std::string> unread;  // resources whose read failed, with why
    std::string missing;              // why the client was not triaged ("" = it was)
    Provenance read;
};

// Positions on the newest tracking date and on the newest date at least `weeks` weeks before.
Keywords keyword_facts(Toolbox& box, const std::string& client_id, int weeks,
                       mcp::RequestContext& ctx, Provenance& p) {
    Keywords out;
    struct Pair {
        std::optional<double> now, then, volume;
    };
    std::unordered_map<std::string, Pair> positions;
    std::string cutoff;
    walk_keywords(box, client_id, "", ctx, p, [&](const KeywordRow& k) {
        out.any_rows = true;
        if (out.newest.empty()) {
            out.newest = std::string(k.date);
            cutoff = days_before(out.newest, 7 * weeks);
        }
        const bool now = k.date == out.newest;
        if (!now && k.date > cutoff) return true;
        if (!now && out.compared_with.empty()) out.compared_with = std::string(k.date);
        if (!now && k.date != out.compared_with) return false;
        if (!k.position) return true;
        Pair& at = positions[std::string(k.keyword)];
        std::optional<double>& slot = now ? at.now : at.then;
        if (!slot || *k.position < *slot) slot = k.position;
        if (now && k.search_volume) at.volume = k.search_volume, out.any_volume = true;
        return true;
    });
    for (const auto& [keyword, at] : positions) {
        if (!at.now || !at.then) continue;
        ++out.compared;
        const double moved = *at.now - *at.then;  // positive: worse
        if (moved >= kMoved) ++out.dropped;
        if (-moved >= kMoved) ++out.improved;
        const double v = at.volume.value_or(0);
        out.clicks_change += clicks(v, *at.now) - clicks(v, *at.then);
    }
    return out;
}

enum AuditField : std::size_t { kAuditScore, kAuditCreated, kAuditFields };
constexpr std::array<std::string_view, kAuditFields> kAuditFieldNames{"score", "created_at"};

void audit_facts(Toolbox& box, Facts& f, mcp::RequestContext& ctx) {
    std::vector<double> scores;
    walk_rows(box, {"seo_reports", f.id, "created_at"}, kAuditFieldNames, ctx, f.read,
              [&](const Row& row) {
        ++f.rows_with_data;
        const auto score = number_of(row.fields[kAuditScore]);
        if (!score) return true;
        if (scores.empty() && row.fields[kAuditCreated].is_string)
            f.audit_date = std::string(row.fields[kAuditCreated].text.substr(0, 10));
        scores.push_back(*score);
        return scores.size() < 2;
    });
    if (!scores.empty()) f.audit_score = scores[0];
    if (scores.size() == 2) f.audit_change = scores[0] - scores[1];
}

// Citation members that say whether a listing's details are right, by name; and the values
// that say they are not.
constexpr std::array<std::string_view, 4> kCitationFields{"accuracy", "accuracy_status",
                                                          "nap_accuracy", "status"};
bool inaccurate(std::string_view value) {
    for (std::string_view word : {"inconsistent", "inaccurate", "incorrect", "mismatch", "wrong",
                                  "needs_update"})
        if (base::iequals(value, word)) return true;
    return false;
}

void citation_facts(Toolbox& box, Facts& f, mcp::RequestContext& ctx) {
    std::size_t count = 0;
    bool marked = false;
    walk_rows(box, {"citations", f.id, ""}, kCitationFields, ctx, f.read, [&](const Row& row) {
        ++f.rows_with_data;
        for (const RowField& m : row.fields) {
            if (!m.is_string) continue;
            marked = true;
            if (inaccurate(m.text)) ++count;
            break;  // the first member the row has decides
        }
        return true;
    });
    if (marked) f.inaccurate_citations = count;
}

enum ReviewField : std::size_t { kSentiment, kRating, kReviewCreated, kReviewFields };
constexpr std::array<std::string_view, kReviewFields> kReviewFieldNames{"sentiment", "rating",
                                                                        "created_at"};

void review_facts(Toolbox& box, Facts& f, const std::string& since, mcp::RequestContext& ctx) {
    std::size_t count = 0;
    bool marked = false;
    walk_rows(box, {"reviews", f.id, "created_at"}, kReviewFieldNames, ctx, f.read,
              [&](const Row& row) {
        ++f.rows_with_data;
        const RowField& sentiment = row.fields[kSentiment];
        const auto rating = number_of(row.fields[kRating]);
        // The first row older than the window still says whether rows carry a sentiment: a
        // client without recent reviews has 0 negative ones, not an unknown number.
        marked = marked || sentiment.is_string || rating.has_value();
        const RowField& created = row.fields[kReviewCreated];
        if (created.is_string && created.text.substr(0, 10) < since) return false;
        if (sentiment.is_string ? base::iequals(sentiment.text, "negative") : rating && *rating <= 2)
            ++count;
        return true;
    });
    if (marked) f.negative_reviews = count;
}

// One part of a client's facts; a failed read is noted, and the other parts still run.
template <typename Part>
void read_part(Facts& f, std::string_view resource, Part part) {
    if (const auto* scope = gateway::DeadlineScope::current(); scope && scope->left().count() <= 0) {
        f.unread.push_back(std::string(resource) + ": the call's budget ran out first");
        return;
    }
    try {
        part();
    } catch (const gateway::Error& e) {
        if (e.reason() == gateway::ErrorReason::cancelled) throw;
        f.unread.push_back(std::string(resource) + ": " + text_of(e.what()));
    }
}

void client_facts(Toolbox& box, Facts& f, int weeks, const std::string& since,
                  mcp::RequestContext& ctx) {
    read_part(f, "keywords", [&] {
        f.keywords = keyword_facts(box, f.id, weeks, ctx, f.read);
        if (f.keywords.any_rows) ++f.rows_with_data;
    });
    read_part(f, "seo_reports", [&] { audit_facts(box, f, ctx); });
    read_part(f, "citations", [&] { citation_facts(box, f, ctx); });
    read_part(f, "reviews", [&] { review_facts(box, f, since, ctx); });
    read_part(f, "backlinks", [&] {
        const LostCount lost = count_lost_backlinks(box, f.id, ctx, f.read);
        f.rows_with_data += lost.total;
        if (lost.marked) f.lost_backlinks = lost.lost;
    });
}

// ---- urgency ---------------------------------------------------------------------------------

struct Points {
    double value;
    std::string reason;
};

std::string count_words(double n, std::string_view one, std::string_view many) {
    const long whole = std::lround(n);
    return std::to_string(whole) + " " + std::string(whole == 1 ? one : many);
}

// The reasons are short: the answer says once what they compare (`keywords_compared_with`,
// `weeks`), and a client's own compare date only where it differs.
std::vector<Points> urgency_points(const Facts& f, const std::string& common_date) {
    std::vector<Points> out;
    const Keywords& k = f.keywords;
    if (k.dropped > 0)
        out.push_back({static_cast<double>(k.dropped),
                       count_words(static_cast<double>(k.dropped), "keyword", "keywords") +
                           " down 3+" +
                           (k.compared_with == common_date ? "" : " since " + k.compared_with)});
    if (k.clicks_change < 0)
        out.push_back({-k.clicks_change / 50,
                       "~" + count_words(-k.clicks_change, "click", "clicks") + "/month lost"});
    if (f.audit_score && *f.audit_score < 50)
        out.push_back({10, "audit score " + std::to_string(std::lround(*f.audit_score)) +
                               " (below 50)"});
    if (f.audit_change && *f.audit_change < 0)
        out.push_back({-*f.audit_change / 2,
                       "audit down " + std::to_string(std::lround(-*f.audit_change))});
    if (f.inaccurate_citations.value_or(0) > 0)
        out.push_back({2.0 * static_cast<double>(*f.inaccurate_citations),
                       count_words(static_cast<double>(*f.inaccurate_citations),
                                   "inaccurate citation", "inaccurate citations")});
    if (f.negative_reviews.value_or(0) > 0)
        out.push_back({3.0 * static_cast<double>(*f.negative_reviews),
                       count_words(static_cast<double>(*f.negative_reviews), "negative review",
                                   "negative reviews")});
    if (f.lost_backlinks.value_or(0) > 0)
        out.push_back({0.5 * static_cast<double>(*f.lost_backlinks),
                       count_words(static_cast<double>(*f.lost_backlinks), "lost backlink",
                                   "lost backlinks")});
    std::stable_sort(out.begin(), out.end(),
                     [](const Points& a, const Points& b) { return a.value > b.value; });
    return out;
}

// The tracking date most clients' keywords were compared with ("" when none was).
std::string most_common_compare_date(const std::vector<Facts>& all) {
    std::unordered_map<std::string, std::size_t> counts;
    std::string best;
    for (const Facts& f : all) {
        const std::string& d = f.keywords.compared_with;
        if (d.empty()) continue;
        const std::size_t n = ++counts[d];
        if (n > counts[best] || (n == counts[best] && d > best)) best = d;
    }
    return best;
}

double urgency_of(const std::vector<Points>& points) {
    double sum = 0;
    for (const Points& p : points) sum += p.value;
    return std::round(sum * 10) / 10;
}

ojson optional_count(const std::optional<std::size_t>& n) {
    return n ? ojson(*n) : ojson(nullptr);
}

ojson facts_json(const Facts& f) {
    const Keywords& k = f.keywords;
    ojson out = ojson::object();
    if (k.compared > 0) {
        out["keywords_dropped"] = k.dropped;
        out["keywords_improved"] = k.improved;
        out["clicks_change"] = k.any_volume ? rounded(std::round(k.clicks_change)) : ojson(nullptr);
    } else {
        out["keywords_dropped"] = nullptr;
    }
    out["audit_score"] = f.audit_score ? rounded(*f.audit_score) : ojson(nullptr);
    out["audit_change"] = f.audit_change ? rounded(*f.audit_change) : ojson(nullptr);
    out["inaccurate_citations"] = optional_count(f.inaccurate_citations);
    out["negative_reviews"] = optional_count(f.negative_reviews);
    out["lost_backlinks"] = optional_count(f.lost_backlinks);
    return out;
}

ojson client_json(const Facts& f, double urgency, const std::vector<Points>& points) {
    ojson reasons = ojson::array();
    for (const Points& p : points) reasons.push_back(p.reason);
    ojson out = {{"client_id", text_of(f.id)}, {"name", text_of(f.name)}, {"urgency", rounded(urgency)},
                 {"reasons", std::move(reasons)}, {"facts", facts_json(f)}};
    std::vector<std::string> notes;
    if (f.rows_with_data == 0 && f.unread.empty())
        notes.push_back("no data: no keyword, audit, citation, review or backlink rows");
    else if (f.keywords.any_rows && f.keywords.compared == 0)
        notes.push_back("keywords: no tracking date to compare with before " + f.keywords.newest);
    for (const std::string& u : f.unread) notes.push_back("not read: " + u);
    if (!notes.empty()) out["note"] = base::join(notes, "; ");
    return out;
}

// ---- the clients and the run -----------------------------------------------------------------

struct ClientName {
    std::string id, name;
};

enum ClientField : std::size_t { kId, kName, kBrand, kClientFields };
constexpr std::array<std::string_view, kClientFields> kClientFieldNames{"id", "name", "brand_name"};

// The clients the caller reaches, at most kMaxClients (`capped` says there were more).
std::vector<ClientName> reachable_clients(Toolbox& box, mcp::RequestContext& ctx, Provenance& p,
                                          bool& capped) {
    std::vector<ClientName> out;
    walk_rows(box, {"clients", "", ""}, kClientFieldNames, ctx, p, [&](const Row& row) {
        const std::span<const RowField> f = row.fields;
        if (!f[kId].is_string || !ctx.principal.reaches_client(f[kId].text)) return true;
        if (out.size() == kMaxClients) return !(capped = true);
        const RowField& name = f[kName].is_string ? f[kName] : f[kBrand];
        out.push_back({std::string(f[kId].text), name.is_string ? std::string(name.text) : ""});
        return true;
    });
    return out;
}

// Reads every client's facts, kClientsAtOnce at a time, within the budget of `scope`.
void read_all(Toolbox& box, std::vector<Facts>& all, int weeks, const std::string& since,
              mcp::RequestContext& ctx, const gateway::DeadlineScope& scope) {
    std::atomic<std::size_t> next{0};
    auto trace = base::shared_call_trace();
    auto work = [&] {
        const base::CallTraceScope traced(trace);
        const gateway::DeadlineScope within(scope.clock(), scope.deadline(), scope.budget());
        for (std::size_t i; (i = next.fetch_add(1)) < all.size();) {
            Facts& f = all[i];
            if (ctx.stop.stop_requested() || within.left().count() <= 0) {
                f.missing = "not read: the call's budget ran out first";
                continue;
            }
            try {
                client_facts(box, f, weeks, since, ctx);
            } catch (const std::exception& e) {
                f.missing = std::string("not read: ") + text_of(e.what());
            }
        }
    };
    std::vector<std::jthread> threads;
    const std::size_t n = std::min(kClientsAtOnce, all.size());
    for (std::size_t i = 1; i < n; ++i) threads.emplace_back(work);
    work();
}

ojson scoring() {
    return "urgency = keywords dropped 3+ positions + estimated monthly clicks lost / 50 + 10 "
           "when the audit score is below 50 + audit points lost / 2 + 2 per inaccurate "
           "citation + 3 per negative review in the window + 0.5 per lost backlink";
}

}  // namespace

mcp::ToolResult triage_clients(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const int weeks = args.value("weeks", 4);
    const std::size_t limit = args.value("limit", 10u);
    gateway::Client& gateway = box.gateway();
    const gateway::DeadlineScope scope(gateway.clock(), gateway.config().call_timeout);
    Provenance p;
    p.method = "per client: keyword positions on the newest tracking date against the newest "
               "date " + std::to_string(weeks) + " weeks before it; the two newest audits; "
               "every citation and backlink row; reviews since the window's start";
    bool capped = false;
    const std::vector<ClientName> clients = reachable_clients(box, ctx, p, capped);
    const std::string today = today_of(box.clock());
    const std::string since = days_before(today, 7 * weeks);
    std::vector<Facts> all(clients.size());
    for (std::size_t i = 0; i < clients.size(); ++i) all[i].id = clients[i].id, all[i].name = clients[i].name;
    read_all(box, all, weeks, since, ctx, scope);
    if (ctx.stop.stop_requested())
        throw gateway::Error(gateway::ErrorReason::cancelled, "the request was cancelled");

    struct Ranked {
        const Facts* facts;
        double urgency;
        std::vector<Points> points;
    };
    const std::string common_date = most_common_compare_date(all);
    std::vector<Ranked> ranked;
    ojson missing = ojson::array();
    for (const Facts& f : all) {
        for (const std::string& r : f.read.resources) p.used(r);
        p.read.rows += f.read.read.rows;
        p.read.requests += f.read.read.requests;
        if (!f.missing.empty()) {
            missing.push_back({{"client_id", text_of(f.id)}, {"reason", f.missing}});
            continue;
        }
        std::vector<Points> points = urgency_points(f, common_date);
        const double urgency = urgency_of(points);
        ranked.push_back({&f, urgency, std::move(points)});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
        return a.urgency != b.urgency ? a.urgency > b.urgency : a.facts->id < b.facts->id;
    });
    ojson rows = ojson::array();
    for (std::size_t i = 0; i < ranked.size() && i < limit; ++i)
        rows.push_back(client_json(*ranked[i].facts, ranked[i].urgency, ranked[i].points));
    ojson body = {{"weeks", weeks}, {"reviews_since", since},
                  {"keywords_compared_with",
                   common_date.empty() ? ojson(nullptr) : ojson(common_date)},
                  {"clients_reached", clients.size()}, {"triaged", ranked.size()},
                  {"returned", rows.size()}, {"clients", std::move(rows)}};
    const bool some_unread = std::any_of(all.begin(), all.end(),
                                         [](const Facts& f) { return !f.unread.empty(); });
    if (!missing.empty() || some_unread || capped) body["partial"] = true;
    if (!missing.empty()) body["missing"] = std::move(missing);
    body["scoring"] = scoring();
    if (clients.empty()) body["note"] = "this caller reaches no client";
    if (capped)
        body["note"] = "more than " + std::to_string(kMaxClients) + " clients: the first " +
                       std::to_string(kMaxClients) + " listed were triaged";
    p.from = since, p.to = today;
    return answer(std::move(body), p);
}

}  // namespace agency::tools::insights
