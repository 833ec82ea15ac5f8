// The read tools: what a list, merged or dated read takes (ListSpec, MergedSpec, ScanSpec) and
// the pages they answer with; shared pieces of every read.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// A list tool over one gateway resource.
struct ListSpec {
    std::string tool;  // set at registration
    std::string resource;
    std::string order;            // "" = gateway default
    std::string direction;        // "" = gateway default
    std::string filter_field;     // fixed filter field ("" = none)
    std::string filter_argument;  // tool argument giving filter_value (absent: no filter)
    std::string filter_value;     // fixed filter value when filter_argument is empty
    bool per_client = true;       // takes client_id
    int default_limit = 100;
};

// Registers the read tools (rankings, audits, backlinks, ...): read_tool_entries.cpp.
ToolCatalog register_read_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box);

// The arguments a cursor is bound to: everything but limit and cursor.
json filter_arguments(const json& args);

// One page of `spec.resource`: rows spliced raw into the answer, cut at the size budget, with
// a signed next_cursor that continues at the first row left out.
mcp::ToolResult list_page(Toolbox& box, const ListSpec& spec, const json& args,
                          mcp::RequestContext& ctx);

// --- row shapes and the other page kinds (tools/reads/read_tools.cpp), for the entries

// How a list's rows differ from the gateway's: members left out (the heavy ones an answer should
// not carry: an audit's issue list, an article's body) and members renamed so that one list over
// several resources reads alike. Every other member passes through as the gateway sent it: the
// spec's fields are the floor, and a deployment's extra fields (a report's severity split, an
// article's url) reach the caller.
struct RowShape {
    std::vector<std::string_view> drop;
    std::vector<std::pair<std::string_view, std::string_view>> rename;  // {from, to}
};

// What one call's rows become: the shape and the `fields` argument, applied by the page walk.
class RowSelect {
public:
    RowSelect(const RowShape* shape, const json& args);
    RowSelect(const RowSelect&) = delete;
    RowSelect& operator=(const RowSelect&) = delete;
    // Null: rows pass as the gateway sent them (the walk reads no member).
    const gateway::RowSelection* selection() const { return active_ ? &selection_ : nullptr; }
    // The row as the answer carries it; `tag`, when given, becomes a leading "resource" member.
    std::string_view row(const Row& row, std::string_view tag, std::string& scratch) const;

private:
    std::vector<std::string> keep_;
    std::vector<std::string_view> keep_views_;
    gateway::RowSelection selection_;
    bool active_ = false;
};

// An answer's size budget: max_bytes when given; else the settings' budget for a call that
// names its limit, or the smaller default page for one that does not.
std::size_t answer_budget(const Settings& settings, const json& args);

// Why a list page has no rows, in one sentence.
std::string empty_note(std::string_view client_id, std::string_view resource,
                       std::string_view filter, std::int64_t total, std::int64_t offset);

struct Source {
    std::string resource;
    std::string order;
    RowShape shape;
};

// Pages through `sources` one after the other (each in its own order), optionally filtered by
// one argument on every source. total is the sum of the sources' totals.
struct MergedSpec {
    std::string tool;
    std::string label;  // the answer's "resource"
    std::vector<Source> sources;
    std::string filter_field;
    std::string filter_argument;
    bool tag_rows = false;  // rows name their resource
};

// A list the gateway cannot filter: pages through `resource` newest first (limit 1000) and keeps
// the rows whose date lies in [from, to] (and whose `match_field` equals the argument of that
// name, ignoring case). Stops at the first row older than `from`. The cursor holds the gateway
// offset of the first matching row left out, and how many rows earlier pages returned, so
// that the last page can state total.
struct ScanSpec {
    std::string tool;
    std::string resource;
    std::string order_field;     // a date field the gateway orders by
    std::string fallback_field;  // the row's date when it lacks order_field
    std::string match_field;     // "" = none
};

mcp::ToolResult merged_page(Toolbox& box, const MergedSpec& spec, const json& args,
                            mcp::RequestContext& ctx);
mcp::ToolResult scan_page(Toolbox& box, const ScanSpec& spec, const json& args,
                          mcp::RequestContext& ctx);
mcp::ToolResult get_client(Toolbox& box, const json& args, mcp::RequestContext& ctx);
mcp::ToolResult get_audit_issues(Toolbox& box, const json& args, mcp::RequestContext& ctx);

// Resources a curated read tool covers; read_resource offers every other discovered one.
bool covered_by_curated_tool(std::string_view resource);

// list_clients for a caller with a client scope: its clients only, read from the gateway's
// list (so an id the gateway does not have is not listed), paged here; total and cursors count
// its clients only, and a cursor is bound to the scope it was issued under.
mcp::ToolResult scoped_clients_page(Toolbox& box, const ListSpec& spec, const json& args,
                                    mcp::RequestContext& ctx);

}  // namespace agency::tools
