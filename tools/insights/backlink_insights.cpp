// find_lost_backlinks (issue 46): the backlink rows the gateway marks lost, strongest first,
// over every page of the client's backlinks; memory holds the top `limit` rows, not the list.
// The spec fixes no backlink member, so the lost mark and the authority are found by meaning:
// the first of several names a deployment uses, and the answer says which it read.
#include "tools/insights/insights.hpp"

#include <algorithm>
#include <array>

#include "base/text.hpp"

namespace agency::tools::insights {

namespace {

enum Field : std::size_t {
    kStatus, kLost, kIsLost, kLostAt, kLostDate, kRemovedAt,  // the lost marks
    kDomainAuthority, kDomainRating, kAuthorityScore, kAuthority, kDr, kDa, kSourceAuthority,
    kSourceUrl, kSourceDomain, kTargetUrl, kAnchor, kFirstSeen, kLastSeen, kFieldCount
};
constexpr std::array<std::string_view, kFieldCount> kFields{
    "status", "lost", "is_lost", "lost_at", "lost_date", "removed_at",
    "domain_authority", "domain_rating", "authority_score", "authority", "dr", "da",
    "source_authority",
    "source_url", "source_domain", "target_url", "anchor", "first_seen", "last_seen"};
constexpr Field kFirstMark = kStatus, kLastMark = kRemovedAt;
constexpr Field kFirstAuthority = kDomainAuthority, kLastAuthority = kSourceAuthority;

bool lost_status(std::string_view status) {
    for (std::string_view word : {"lost", "removed", "deleted", "gone", "broken", "dead"})
        if (base::iequals(status, word)) return true;
    return false;
}

// Whether a row is lost by its first lost mark; nullopt when it has none.
std::optional<std::pair<bool, Field>> lost_mark(std::span<const RowField> f) {
    for (std::size_t i = kFirstMark; i <= kLastMark; ++i) {
        const RowField& m = f[i];
        if (!m.present()) continue;
        const auto field = static_cast<Field>(i);
        if (field == kStatus) {
            if (m.is_string) return std::pair{lost_status(m.text), field};
        } else if (field == kLost || field == kIsLost) {
            if (m.raw == "true" || m.raw == "false") return std::pair{m.raw == "true", field};
        } else {
            return std::pair{m.is_string && !m.text.empty(), field};  // a date, or null
        }
    }
    return std::nullopt;
}

struct Lost {
    double authority = -1;  // -1: the row has no authority member
    ojson row;
};

ojson lost_row(std::span<const RowField> f, Field authority, Field mark) {
    ojson row = ojson::object();
    for (Field m : {kSourceUrl, kSourceDomain, kTargetUrl, kAnchor}) {
        if (f[m].is_string) row[std::string(kFields[m])] = text_of(f[m].text);
    }
    if (auto a = number_of(f[authority])) row[std::string(kFields[authority])] = rounded(*a);
    if (mark != kStatus && mark != kLost && mark != kIsLost && f[mark].is_string)
        row[std::string(kFields[mark])] = text_of(f[mark].text);
    for (Field m : {kFirstSeen, kLastSeen})
        if (f[m].is_string) row[std::string(kFields[m])] = text_of(f[m].text.substr(0, 10));
    return row;
}

}  // namespace

mcp::ToolResult find_lost_backlinks(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = client_of(args);
    const std::size_t limit = args.value("limit", 10u);
    Provenance p;
    p.method = "every backlink row read; lost by the first lost mark a row has (status "
               "lost/removed, lost or is_lost true, a lost_at/lost_date/removed_at date); "
               "ordered by the first authority member the rows carry";
    std::size_t total = 0, lost = 0;
    std::optional<Field> authority, mark;
    auto weaker = [](const Lost& a, const Lost& b) { return a.authority > b.authority; };
    std::vector<Lost> top;  // a min-heap on authority, at most `limit`
    walk_rows(box, {"backlinks", client_id, ""}, kFields, ctx, p, [&](const Row& row) {
        ++total;
        const std::span<const RowField> f = row.fields;
        if (!authority)
            for (std::size_t i = kFirstAuthority; i <= kLastAuthority && !authority; ++i)
                if (number_of(f[i])) authority = static_cast<Field>(i);
        const auto is_lost = lost_mark(f);
        if (!is_lost) return true;
        if (!mark) mark = is_lost->second;
        if (!is_lost->first) return true;
        ++lost;
        const Field by = authority.value_or(kDomainAuthority);
        Lost entry{number_of(f[by]).value_or(-1), ojson()};
        if (top.size() == limit && !top.empty() && !(entry.authority > top.front().authority))
            return true;
        entry.row = lost_row(f, by, is_lost->second);
        top.push_back(std::move(entry));
        std::push_heap(top.begin(), top.end(), weaker);
        if (top.size() > limit) {
            std::pop_heap(top.begin(), top.end(), weaker);
            top.pop_back();
        }
        return true;
    });
    std::sort_heap(top.begin(), top.end(), weaker);
    ojson rows = ojson::array();
    for (Lost& l : top) rows.push_back(std::move(l.row));
    ojson body = {{"client_id", client_id}, {"total_backlinks", total}};
    body["total_lost"] = mark ? ojson(lost) : ojson(nullptr);
    body["lost_mark"] = mark ? ojson(std::string(kFields[*mark])) : ojson(nullptr);
    body["authority_member"] = authority ? ojson(std::string(kFields[*authority])) : ojson(nullptr);
    body["returned"] = rows.size();
    body["rows"] = std::move(rows);
    std::vector<std::string> notes;
    if (total == 0) notes.push_back("no backlink rows for " + client_id);
    else if (!mark)
        notes.push_back(cannot_tell("backlinks", "lost mark (status, lost, is_lost, lost_at, "
                                                 "lost_date, removed_at)") +
                        ", so which links are lost is unknown, not zero");
    if (total > 0 && !authority)
        notes.push_back(cannot_tell("backlinks", "authority (domain_authority, domain_rating, "
                                                 "authority_score, authority, dr, da, "
                                                 "source_authority)") +
                        ": rows in the gateway's order");
    if (!notes.empty()) body["note"] = base::join(notes, "; ");
    return answer(std::move(body), p);
}

LostCount count_lost_backlinks(Toolbox& box, const std::string& client_id,
                               mcp::RequestContext& ctx, Provenance& p) {
    LostCount out;
    walk_rows(box, {"backlinks", client_id, ""}, std::span(kFields).first(kLastMark + 1), ctx, p,
              [&](const Row& row) {
        ++out.total;
        if (const auto is_lost = lost_mark(row.fields)) {
            out.marked = true;
            if (is_lost->first) ++out.lost;
        }
        return true;
    });
    return out;
}

}  // namespace agency::tools::insights
