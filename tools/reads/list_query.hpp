// Filters and an order on every list tool: `where`, `order_by` and `direction`
// (tools/reads/list_query.cpp), and the page that answers them (tools/reads/query_page.cpp). What
// the gateway's whitelists allow is pushed down to it; the rest is applied over every page in the
// server, within the call budget: a filter as the rows stream past, an order as a top-k that
// holds at most the rows up to the page asked for.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tools/reads/read_tools.hpp"

namespace agency::tools {

enum class WhereOp { eq, ne, gt, gte, lt, lte, in, contains };

// One test of `where`: a top-level member against a value.
struct WhereTest {
    std::string member;
    WhereOp op = WhereOp::eq;
    json value;
};

struct ListQuery {
    std::vector<WhereTest> where;
    std::string order_by;  // "" = the tool's own order
    bool descending = true;
    std::vector<std::string> members;  // distinct members read: where's, then order_by
    bool active() const { return !where.empty() || !order_by.empty(); }
    // Index of `name` in members.
    std::size_t member_index(std::string_view name) const;
    // "where domain_authority > 50, order_by domain_authority desc", for notes.
    std::string describe() const;
};

// Limits on what a caller may ask: a where of at most 8 members, an `in` of at most 100 values,
// no text value longer than 1 KiB.
inline constexpr std::size_t kMaxWhereMembers = 8;
inline constexpr std::size_t kMaxInValues = 100;
// A text value (to match, compare or look for) is at most this many bytes.
inline constexpr std::size_t kMaxWhereText = 1024;
// An order the server applies holds the rows up to the page asked for: cursors end there.
inline constexpr std::int64_t kMaxRankedRows = 10'000;

// The query of a call's arguments; `error` says what is wrong and what to write instead.
ListQuery parse_list_query(const json& args, std::string& error);

// Whether `field` passes `test` (a row without the member, or with null, passes none).
bool passes(const WhereTest& test, const RowField& field);

// What the gateway applies itself, under the spec's whitelists for `resource` (the table of
// filters and orders suggested per resource) or the order the tool already asks it for.
struct Pushdown {
    std::string filter_field, filter_value;  // one equality test on a string value
    std::optional<std::size_t> filter_test;  // which test of where it is
    std::string order, direction;            // order_by, when the gateway can order by it
};
Pushdown plan_pushdown(const ListQuery& query, std::string_view resource, bool may_filter,
                       bool may_order, std::string_view tool_order);

// A row's place in an order: numbers before text, missing last in either direction.
struct SortKey {
    enum Kind { number, text, missing } kind = missing;
    double value = 0;
    std::string string;
};
SortKey sort_key(const RowField& field);
// a before b in the order (ties: neither).
bool ranks_before(const SortKey& a, const SortKey& b, bool descending);

// The best `k` rows of an order as they stream past; ties keep the order they came in.
class TopRows {
public:
    struct Entry {
        SortKey key;
        std::size_t seq = 0;
        std::string row;
        std::size_t members_left_out = 0;
    };
    TopRows(std::size_t k, bool descending) : k_(k), descending_(descending) {}
    void offer(SortKey key, std::string_view row, std::size_t members_left_out);
    // Best first.
    std::vector<Entry> take();

private:
    std::size_t k_;
    bool descending_;
    std::size_t seq_ = 0;
    std::vector<Entry> held_;
    bool before(const Entry& a, const Entry& b) const;
    void shrink();
};

// The member names of the first rows read, for a refusal that names what rows do have.
class MembersSeen {
public:
    void see(std::string_view row_json);
    std::string list() const;  // "a, b, c" (sorted, at most 40)

private:
    std::vector<std::string> names_;
    int rows_ = 0;
};

// --- the page (tools/reads/query_page.cpp)

// One gateway resource a list reads, as the tool reads it without a query.
struct QuerySource {
    std::string resource;
    std::string order, direction;  // the tool's gateway order ("" = gateway's)
    RowShape shape;
    std::string filter_field, filter_value;  // the tool's own gateway filter ("" = none)
    std::string tag;                         // the rows' "resource" member ("" = none)
};

// A tool's own test of each row besides the query (a date range, a client scope).
enum class OwnVerdict { keep, skip, end_of_source };

struct QueryTool {
    std::string tool, label, client_id;
    std::vector<QuerySource> sources;
    std::vector<std::string> own_fields;  // members own_test reads, in this order
    std::function<OwnVerdict(std::span<const RowField>)> own_test;
    json binding_extra;  // joins the cursor's binding (a client scope)
    int default_limit = 100;
    // Read on past a full page to count every matching row, so that `total` is on every page
    // (the lists whose answers promise it); else total is on the last page only.
    bool count_all = true;
};

// One page of the rows of `tool` passing `query`, in its order, with a cursor that continues
// the same query and "scanned" (rows read by this call). A member no row read has is refused,
// naming the members the rows do have.
mcp::ToolResult query_page(Toolbox& box, const QueryTool& tool, const ListQuery& query,
                           const json& args, mcp::RequestContext& ctx);

}  // namespace agency::tools
