// A list page under `where` / `order_by`: the gateway applies what its whitelists allow, the
// server the rest over every page, within the call budget. Without an order of its own the
// rows stream past and the cursor holds the gateway offset of the first matching row left
// out; with one, every row is read and the best rows up to the page asked for are held.
#include "tools/reads/list_query.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "tools/reads/range_tools.hpp"

namespace agency::tools {

namespace {

struct Walked {
    std::int64_t scanned = 0;
    std::vector<char> present;  // per query member: some row read has it (not null)
    std::vector<std::int64_t> rows_of_source;
    MembersSeen seen;
};

// The fields a walk reads: the tool's own, then each query member it does not already read
// (a walk reads a name once), and where each test and the order find theirs.
struct FieldMap {
    std::vector<std::string_view> names;
    std::size_t own = 0;                    // names[0, own): the tool's own fields
    std::vector<std::size_t> member_field;  // per query member, its index in names
    std::vector<std::size_t> test_field;    // per where test
    std::size_t order_field = 0;

    FieldMap(const QueryTool& tool, const ListQuery& query)
        : names(tool.own_fields.begin(), tool.own_fields.end()), own(names.size()) {
        for (const std::string& m : query.members) {
            const auto at = std::find(names.begin(), names.end(), m);
            member_field.push_back(static_cast<std::size_t>(at - names.begin()));
            if (at == names.end()) names.push_back(m);
        }
        for (const WhereTest& t : query.where)
            test_field.push_back(member_field[query.member_index(t.member)]);
        if (!query.order_by.empty()) order_field = member_field[query.member_index(query.order_by)];
    }
};

// A where test the gateway applied found no row: whether the resource's rows lack the member
// at all, read from one row without the filter. "" when they have it (or have no rows).
std::string absent_pushed_member(Toolbox& box, const QueryTool& tool, const QuerySource& src,
                                 const std::string& member, Walked& walked,
                                 mcp::RequestContext& ctx) {
    const std::array<std::string_view, 1> names{member};
    gateway::Page page = box.gateway().read_body(
        {.resource = src.resource, .client_id = tool.client_id, .limit = 1}, ctx.stop);
    bool lacks = false;
    box.gateway().walk(page, {.fields = names}, [&](const Row& row) {
        walked.seen.see(row.json);
        lacks = !row.fields[0].present();
        return false;
    });
    return lacks ? member : "";
}

mcp::ToolResult member_refusal(const QueryTool& tool, const std::string& member,
                               const Walked& walked) {
    const std::string members = walked.seen.list();
    return tool_error("validation", "no " + tool.label + " row read has a value for \"" + member +
                                        "\" (" + std::to_string(walked.scanned) + " rows read)" +
                                        (members.empty() ? "" : "; the rows' members: " + members) +
                                        ". Name one of those in where or order_by.");
}

// A member no row read has: refused, naming what the rows do have. A where test the gateway
// applied that found nothing (on an empty first page) reads one more row to tell.
std::optional<mcp::ToolResult> absent_member(Toolbox& box, const QueryTool& tool,
                                             const ListQuery& query,
                                             const std::vector<Pushdown>& plans, Walked& walked,
                                             bool empty_first_page, mcp::RequestContext& ctx) {
    for (std::size_t i = 0; i < query.members.size(); ++i)
        if (!walked.present[i] && walked.scanned > 0)
            return member_refusal(tool, query.members[i], walked);
    if (!empty_first_page) return std::nullopt;
    for (std::size_t s = 0; s < tool.sources.size(); ++s)
        if (plans[s].filter_test && walked.rows_of_source[s] == 0) {
            const std::string& member = query.where[*plans[s].filter_test].member;
            if (!absent_pushed_member(box, tool, tool.sources[s], member, walked, ctx).empty())
                return member_refusal(tool, member, walked);
        }
    return std::nullopt;
}

}  // namespace

mcp::ToolResult query_page(Toolbox& box, const QueryTool& tool, const ListQuery& query,
                           const json& args, mcp::RequestContext& ctx) {
    json filters = filter_arguments(args);
    if (!tool.binding_extra.is_null()) filters["client_scope"] = tool.binding_extra;
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{tool.tool, tool.client_id, principal, &filters};
    CursorPosition start;
    if (auto c = args.find("cursor"); c != args.end())
        start = box.open_cursor(binding, c->get<std::string>());
    const std::int64_t limit = args.value("limit", tool.default_limit);

    // What each source's gateway read applies; an order it cannot apply is the server's.
    std::vector<Pushdown> plans;
    bool ranked = !query.order_by.empty();
    for (const QuerySource& src : tool.sources) {
        plans.push_back(plan_pushdown(query, src.resource, src.filter_field.empty(),
                                      tool.sources.size() == 1, src.order));
        if (!plans.back().order.empty()) ranked = false;
    }
    const std::int64_t rank_start = ranked ? start.offset : 0;
    if (ranked && rank_start + limit > kMaxRankedRows)
        return tool_error("validation",
                          "an order the server applies (order_by " + query.order_by +
                              ") pages through the first " + std::to_string(kMaxRankedRows) +
                              " rows; narrow the rows with where, or page in the tool's own "
                              "order without order_by");
    const bool resumed = !ranked && start.extra.is_object();
    const std::int64_t earlier = resumed ? start.extra.value("n", std::int64_t{0}) : 0;
    const std::size_t first_source = resumed ? start.extra.value("s", std::size_t{0}) : 0;

    const FieldMap fields(tool, query);
    Walked walked;
    walked.present.assign(query.members.size(), 0);
    walked.rows_of_source.assign(tool.sources.size(), 0);
    RowWriter writer(tool.client_id, tool.label, answer_budget(box.settings(), args));
    TopRows top(ranked ? static_cast<std::size_t>(rank_start + limit) : 0, query.descending);
    std::int64_t matched = 0;
    std::string cursor;
    std::string scratch;
    for (std::size_t s = first_source;
         s < tool.sources.size() && (cursor.empty() || tool.count_all); ++s) {
        const QuerySource& src = tool.sources[s];
        const Pushdown& plan = plans[s];
        const bool own_filter = !src.filter_field.empty();
        const HistoryQuery read{src.resource,
                                tool.client_id,
                                plan.order.empty() ? src.order : plan.order,
                                plan.order.empty() ? src.direction : plan.direction,
                                own_filter ? src.filter_field : plan.filter_field,
                                own_filter ? src.filter_value : plan.filter_value};
        const RowSelect select(&src.shape, args);
        const std::int64_t offset = resumed && s == first_source ? start.offset : 0;
        walk_newest_first(
            box, read, offset, {.fields = fields.names, .select = select.selection()}, ctx,
            [&](const Row& row, std::int64_t at) {
                ++walked.scanned;
                ++walked.rows_of_source[s];
                walked.seen.see(row.json);
                for (std::size_t i = 0; i < query.members.size(); ++i) {
                    const RowField& f = row.fields[fields.member_field[i]];
                    if (f.present() && f.raw != "null") walked.present[i] = 1;
                }
                if (tool.own_test) {
                    const OwnVerdict verdict = tool.own_test(row.fields.first(fields.own));
                    if (verdict == OwnVerdict::end_of_source) return false;
                    if (verdict == OwnVerdict::skip) return true;
                }
                // Every test, the one the gateway applied too: a gateway that ignores
                // filter_field (or matches more loosely) still answers only matching rows.
                for (std::size_t i = 0; i < query.where.size(); ++i)
                    if (!passes(query.where[i], row.fields[fields.test_field[i]])) return true;
                const std::string_view text = select.row(row, src.tag, scratch);
                if (ranked) {
                    ++matched;
                    top.offer(sort_key(row.fields[fields.order_field]), text, row.members_left_out);
                    return true;
                }
                ++matched;
                if (!cursor.empty()) return true;  // past the page: counted for total
                if (static_cast<std::int64_t>(writer.count()) >= limit ||
                    !writer.add(text, row.members_left_out)) {
                    const auto n = earlier + static_cast<std::int64_t>(writer.count());
                    cursor = box.issue_cursor(binding, at, json{{"s", s}, {"n", n}});
                    return tool.count_all;
                }
                return true;
            });
    }

    std::optional<std::int64_t> total;
    if (ranked) {
        std::int64_t rank = rank_start;
        std::vector<TopRows::Entry> best = top.take();
        for (auto i = static_cast<std::size_t>(rank_start); i < best.size(); ++i, ++rank)
            if (rank - rank_start >= limit || !writer.add(best[i].row, best[i].members_left_out))
                break;
        if (rank < matched) cursor = box.issue_cursor(binding, rank, json{{"k", 1}});
        total = matched;
    } else if (cursor.empty() || tool.count_all) {
        total = earlier + matched;  // every matching row from the cursor on was counted
    }

    // Once the scan ended (no cursor, or counted to the end) every row was read.
    if (cursor.empty() || tool.count_all)
        if (auto refused = absent_member(box, tool, query, plans, walked,
                                         writer.count() == 0 && start.offset == 0, ctx))
            return std::move(*refused);
    if (writer.count() == 0 && ranked && rank_start > 0 && rank_start >= matched)
        writer.set_note(empty_note(tool.client_id, tool.label, "", matched, rank_start));
    else if (writer.count() == 0)
        writer.set_note("no " + tool.label + " rows" +
                        (tool.client_id.empty() ? "" : " of client " + tool.client_id) + " pass " +
                        query.describe() + " (" + std::to_string(walked.scanned) + " rows read)");
    return mcp::ToolResult::structured(
        writer.finish(total, cursor, "\"scanned\":" + std::to_string(walked.scanned)));
}

}  // namespace agency::tools
