// `where`, `order_by` and `direction`: parsed, tested against a row's members, pushed down to
// the gateway where its whitelists allow, and ordered by a top-k that holds k rows.
#include "tools/reads/list_query.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "base/text.hpp"
#include "base/untrusted_text.hpp"
#include "tools/reads/range_tools.hpp"

namespace agency::tools {

namespace {

struct OpName {
    std::string_view name;
    WhereOp op;
    std::string_view sign;
};
constexpr std::array<OpName, 8> kOps{{{"eq", WhereOp::eq, "="},
                                      {"ne", WhereOp::ne, "!="},
                                      {"gt", WhereOp::gt, ">"},
                                      {"gte", WhereOp::gte, ">="},
                                      {"lt", WhereOp::lt, "<"},
                                      {"lte", WhereOp::lte, "<="},
                                      {"in", WhereOp::in, "in"},
                                      {"contains", WhereOp::contains, "contains"}}};

bool plain_member_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

// A string (of at most kMaxWhereText bytes), number or boolean.
bool is_scalar_value(const json& v) {
    return (v.is_string() && v.get_ref<const std::string&>().size() <= kMaxWhereText) ||
           v.is_number() || v.is_boolean();
}

// "YYYY-MM-DD": a day, against which a timestamp compares by its first ten characters.
bool is_day_text(std::string_view s) {
    return s.size() == 10 && s[4] == '-' && s[7] == '-' &&
           std::all_of(s.begin(), s.end(),
                       [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
}

std::optional<double> number_in(std::string_view text) {
    RowField f{.raw = text};
    return number_of(f);
}

// The field against a scalar value: <0, 0, >0, or nullopt when they do not compare (a number
// against text that is not one, a boolean against anything but a boolean).
std::optional<int> compare_field(const RowField& field, const json& value) {
    if (!field.present() || field.raw == "null") return std::nullopt;
    if (value.is_boolean()) {
        const std::string_view b = field.is_string ? field.text : field.raw;
        if (b != "true" && b != "false") return std::nullopt;
        return (b == "true") == value.get<bool>() ? 0 : 1;
    }
    if (value.is_number()) {
        const auto n = number_of(field);
        if (!n) return std::nullopt;
        const double v = value.get<double>();
        return *n < v ? -1 : *n > v ? 1 : 0;
    }
    const std::string& v = value.get_ref<const std::string&>();
    if (!field.is_string) {
        const auto n = number_of(field);
        const auto m = number_in(v);
        if (!n || !m) return std::nullopt;
        return *n < *m ? -1 : *n > *m ? 1 : 0;
    }
    std::string_view text = field.text;
    if (is_day_text(v) && text.size() > 10 && is_day_text(text.substr(0, 10)))
        text = text.substr(0, 10);
    const int c = text.compare(v);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
}

std::string value_text(const json& v) {
    return v.is_string() ? "\"" + v.get<std::string>() + "\"" : v.dump();
}

void add_test(ListQuery& q, const std::string& member, std::string_view op_name, const json& v,
              std::string& error) {
    const auto op =
        std::find_if(kOps.begin(), kOps.end(), [&](const OpName& o) { return o.name == op_name; });
    if (op == kOps.end()) {
        error = "where." + member + ": unknown operator \"" + std::string(op_name) +
                "\"; use gt, gte, lt, lte, ne, in or contains (or a plain value for equality)";
        return;
    }
    if (op->op == WhereOp::in) {
        if (!v.is_array() || v.empty() || v.size() > kMaxInValues ||
            !std::all_of(v.begin(), v.end(), is_scalar_value)) {
            error = "where." + member + ".in takes a list of 1 to " + std::to_string(kMaxInValues) +
                    " strings (of at most " + std::to_string(kMaxWhereText) +
                    " bytes), numbers or booleans";
            return;
        }
    } else if (op->op == WhereOp::contains ? !(v.is_string() && is_scalar_value(v))
                                           : !is_scalar_value(v)) {
        error =
            "where." + member + "." + std::string(op_name) +
            (op->op == WhereOp::contains ? " takes text" : " takes a string, number or boolean") +
            " (text of at most " + std::to_string(kMaxWhereText) + " bytes)";
        return;
    }
    q.where.push_back({member, op->op, v});
}

}  // namespace

std::size_t ListQuery::member_index(std::string_view name) const {
    return static_cast<std::size_t>(std::find(members.begin(), members.end(), name) -
                                    members.begin());
}

std::string ListQuery::describe() const {
    std::string out;
    for (const WhereTest& t : where) {
        out += out.empty() ? "where " : " and ";
        const auto op =
            std::find_if(kOps.begin(), kOps.end(), [&](const OpName& o) { return o.op == t.op; });
        out += t.member + " " + std::string(op->sign) + " " + value_text(t.value);
    }
    if (!order_by.empty())
        out += (out.empty() ? "" : ", ") + std::string("order_by ") + order_by +
               (descending ? " desc" : " asc");
    return out;
}

ListQuery parse_list_query(const json& args, std::string& error) {
    ListQuery q;
    if (auto w = args.find("where"); w != args.end() && !w->is_null()) {
        if (!w->is_object()) {
            error = "where is an object: {\"member\": value} or {\"member\": {\"gt\": value}}";
            return q;
        }
        if (w->size() > kMaxWhereMembers) {
            error = "where names " + std::to_string(w->size()) + " members; at most " +
                    std::to_string(kMaxWhereMembers);
            return q;
        }
        for (const auto& [member, v] : w->items()) {
            if (!plain_member_name(member)) {
                error = "where: \"" + member.substr(0, 64) +
                        "\" is not a top-level member "
                        "name (letters, digits, _ and -; nested members cannot be filtered)";
                return q;
            }
            if (v.is_object()) {
                if (v.empty()) {
                    error = "where." + member +
                            " is an empty object; give an operator such as "
                            "{\"gt\": 50}";
                    return q;
                }
                for (const auto& [op, operand] : v.items()) {
                    add_test(q, member, op, operand, error);
                    if (!error.empty()) return q;
                }
            } else if (is_scalar_value(v)) {
                q.where.push_back({member, WhereOp::eq, v});
            } else {
                error = "where." + member + ": give a string (at most " +
                        std::to_string(kMaxWhereText) +
                        " bytes), number or boolean to match, "
                        "or an operator object such as {\"in\": [\"a\", \"b\"]}";
                return q;
            }
        }
    }
    q.order_by = string_arg(args, "order_by");
    if (!q.order_by.empty() && !plain_member_name(q.order_by)) {
        error = "order_by: \"" + q.order_by.substr(0, 64) + "\" is not a top-level member name";
        return q;
    }
    q.descending = string_arg(args, "direction") != "asc";
    for (const WhereTest& t : q.where)
        if (q.member_index(t.member) == q.members.size()) q.members.push_back(t.member);
    if (!q.order_by.empty() && q.member_index(q.order_by) == q.members.size())
        q.members.push_back(q.order_by);
    return q;
}

bool passes(const WhereTest& test, const RowField& field) {
    if (!field.present() || field.raw == "null") return false;
    switch (test.op) {
        case WhereOp::eq: return compare_field(field, test.value) == 0;
        case WhereOp::ne: return compare_field(field, test.value) != 0;
        case WhereOp::gt: return compare_field(field, test.value) > 0;
        case WhereOp::gte: return compare_field(field, test.value) >= 0;
        case WhereOp::lt: {
            auto c = compare_field(field, test.value);
            return c && *c < 0;
        }
        case WhereOp::lte: {
            auto c = compare_field(field, test.value);
            return c && *c <= 0;
        }
        case WhereOp::in:
            return std::any_of(test.value.begin(), test.value.end(),
                               [&](const json& v) { return compare_field(field, v) == 0; });
        case WhereOp::contains:
            return icontains(field.is_string ? field.text : field.raw,
                             test.value.get_ref<const std::string&>());
    }
    return false;
}

// --- pushdown --------------------------------------------------------------------------------

namespace {

// The spec's table: the filters and orders it suggests per resource (the gateway may refuse
// others with 400, or ignore them).
struct Suggested {
    std::vector<std::string_view> filters, orders;
};
const std::map<std::string_view, Suggested, std::less<>>& suggested() {
    static const std::map<std::string_view, Suggested, std::less<>> table{
        {"clients", {{"status", "id"}, {}}},
        {"keywords", {{"status"}, {"tracked_at"}}},
        {"seo_tasks", {{"status", "category_id"}, {"created_at"}}},
        {"seo_reports", {{}, {"created_at"}}},
        {"blogs", {{"status", "category_id"}, {}}},
        {"blog_categories", {{"id"}, {}}},
        {"blog_authors", {{"id"}, {}}},
        {"geo_articles", {{"status"}, {}}},
        {"topical_maps", {{}, {"created_at"}}},
        {"press_releases", {{"status"}, {}}},
        {"backlinks", {{"source_type", "source_id"}, {"external_pages", "linking_domains"}}},
        {"anchor_texts", {{"source_id"}, {}}},
        {"top_linked_pages", {{}, {"linking_domains"}}},
        {"domain_metrics", {{}, {"fetched_at"}}},
        {"backlink_outreach", {{"status"}, {}}},
        {"backlink_summaries", {{"status"}, {}}},
        {"citations", {{"status"}, {}}},
        {"gbp_profiles", {{"status"}, {}}},
        {"gbp_posts", {{"status"}, {}}},
        {"reviews", {{"sentiment"}, {"created_at"}}},
        {"locations", {{"id"}, {}}},
        {"grid_searches", {{}, {"tracked_at"}}},
        {"competitors", {{}, {"appearances"}}},
        {"llm_reports", {{}, {"scored_at"}}},
        {"ai_summaries", {{"source_id"}, {}}},
        {"ai_training", {{"source_id"}, {}}},
        {"call_tracking_calls", {{}, {"created_at"}}},
        {"call_scores", {{"lead_grade", "quality_grade"}, {}}},
        {"call_transcriptions", {{"lead_grade", "quality_grade"}, {}}},
        {"integrations", {{"status"}, {}}},
    };
    return table;
}

bool suggests(const std::vector<std::string_view>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Pushdown plan_pushdown(const ListQuery& query, std::string_view resource, bool may_filter,
                       bool may_order, std::string_view tool_order) {
    Pushdown plan;
    static const Suggested none;
    const auto it = suggested().find(resource);
    const bool vendor_calls = resource.ends_with("_calls");
    const Suggested& s = it != suggested().end() ? it->second
                         : vendor_calls          ? suggested().at("call_tracking_calls")
                                                 : none;
    if (may_filter)
        for (std::size_t i = 0; i < query.where.size(); ++i) {
            const WhereTest& t = query.where[i];
            if (t.op != WhereOp::eq || !t.value.is_string() || !suggests(s.filters, t.member))
                continue;
            plan.filter_field = t.member;
            plan.filter_value = t.value.get<std::string>();
            plan.filter_test = i;
            break;
        }
    if (may_order && !query.order_by.empty() &&
        (suggests(s.orders, query.order_by) || query.order_by == tool_order)) {
        plan.order = query.order_by;
        plan.direction = query.descending ? "desc" : "asc";
    }
    return plan;
}

// --- order -----------------------------------------------------------------------------------

SortKey sort_key(const RowField& field) {
    SortKey key;
    if (!field.present() || field.raw == "null") return key;
    if (const auto n = number_of(field)) {
        key.kind = SortKey::number;
        key.value = *n;
    } else {
        key.kind = SortKey::text;
        key.string.assign(field.is_string ? field.text : field.raw);
    }
    return key;
}

bool ranks_before(const SortKey& a, const SortKey& b, bool descending) {
    if (a.kind != b.kind) return a.kind < b.kind;  // numbers, then text, then missing
    if (a.kind == SortKey::missing) return false;
    if (a.kind == SortKey::number) return descending ? a.value > b.value : a.value < b.value;
    return descending ? a.string > b.string : a.string < b.string;
}

bool TopRows::before(const Entry& a, const Entry& b) const {
    if (ranks_before(a.key, b.key, descending_)) return true;
    if (ranks_before(b.key, a.key, descending_)) return false;
    return a.seq < b.seq;
}

void TopRows::shrink() {
    std::nth_element(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(k_), held_.end(),
                     [&](const Entry& a, const Entry& b) { return before(a, b); });
    held_.resize(k_);
}

void TopRows::offer(SortKey key, std::string_view row, std::size_t members_left_out) {
    if (k_ == 0) return;
    held_.push_back({std::move(key), seq_++, std::string(row), members_left_out});
    if (held_.size() >= 2 * k_ + 16) shrink();  // amortised: at most about 2k rows held
}

std::vector<TopRows::Entry> TopRows::take() {
    if (held_.size() > k_) shrink();
    std::sort(held_.begin(), held_.end(),
              [&](const Entry& a, const Entry& b) { return before(a, b); });
    return std::move(held_);
}

// --- members seen ----------------------------------------------------------------------------

void MembersSeen::see(std::string_view row_json) {
    if (rows_ >= 5) return;  // the first rows name what a resource's rows carry
    ++rows_;
    const json row = json::parse(row_json, nullptr, false);
    if (!row.is_object()) return;
    for (const auto& [name, value] : row.items())
        if (names_.size() < 200 && std::find(names_.begin(), names_.end(), name) == names_.end())
            names_.push_back(name);
}

std::string MembersSeen::list() const {
    std::vector<std::string> names = names_;
    std::sort(names.begin(), names.end());
    std::string out;
    for (std::size_t i = 0; i < names.size() && i < 40; ++i) {
        out += (out.empty() ? "" : ", ") + base::clean_untrusted_text(names[i].substr(0, 64));
    }
    if (names.size() > 40) out += ", ...";
    return out;
}

}  // namespace agency::tools
