// Shared pieces of the read tools.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tools/tool_kit.hpp"

namespace agency::tools {

// A list tool over one gateway resource.
struct ListSpec {
    std::string tool;  // set at registration
    std::string resource;
    std::string order;      // "" = gateway default
    std::string direction;  // "" = gateway default
    std::string filter_field;     // fixed filter field ("" = none)
    std::string filter_argument;  // tool argument giving filter_value (absent: no filter)
    std::string filter_value;     // fixed filter value when filter_argument is empty
    bool per_client = true;       // takes client_id
    int default_limit = 100;
};

// The arguments a cursor is bound to: everything but limit and cursor.
json filter_arguments(const json& args);

// One page of `spec.resource`: rows spliced raw into the answer, cut at the size budget, with
// a signed next_cursor that continues at the first row left out.
mcp::ToolResult list_page(Toolbox& box, const ListSpec& spec, const json& args,
                          mcp::RequestContext& ctx);

// --- reduced rows and the other page kinds (tools/read_tools.cpp), for the entries

// An output row built from some top-level fields of a gateway row: {out, from} pairs. Adjacent
// pairs with the same `out` are alternatives: the first field present wins. Fields absent from
// the row are left out of the output row.
struct Projection {
    std::vector<std::pair<std::string, std::string>> members;
    std::vector<std::string> sources;  // distinct `from` names: what the scan extracts
    std::vector<std::string_view> names;

    explicit Projection(std::vector<std::pair<std::string, std::string>> m)
        : members(std::move(m)) {
        for (const auto& [out, from] : members)
            if (std::find(sources.begin(), sources.end(), from) == sources.end())
                sources.push_back(from);
        names.assign(sources.begin(), sources.end());
    }
    Projection(const Projection&) = delete;
    Projection& operator=(const Projection&) = delete;

    std::size_t index(const std::string& from) const {
        return static_cast<std::size_t>(std::find(sources.begin(), sources.end(), from) -
                                        sources.begin());
    }

    // Writes the reduced row into `out` (replacing its contents); `tag`, when given, becomes
    // a leading "resource" member.
    void write(std::string& out, std::span<const RowField> fields, std::string_view tag) const {
        out.assign("{");
        if (!tag.empty()) {
            out += R"("resource":)";
            mcp::append_json_string(out, tag);
        }
        std::string_view last_out;
        bool last_written = false;
        for (const auto& [name, from] : members) {
            if (name == last_out && last_written) continue;  // an earlier alternative won
            if (name != last_out) last_written = false;
            last_out = name;
            const RowField& f = fields[index(from)];
            if (!f.present()) continue;
            if (out.size() > 1) out.push_back(',');
            mcp::append_json_string(out, name);
            out.push_back(':');
            out.append(f.raw);
            last_written = true;
        }
        out.push_back('}');
    }
};

struct Source {
    std::string resource;
    std::string order;
    std::shared_ptr<const Projection> projection;  // null: rows as the gateway sends them
};

// Pages through `sources` one after the other (each in its own order), optionally filtered by
// one argument on every source. total is the sum of the sources' totals.
struct MergedSpec {
    std::string tool;
    std::string label;  // the answer's "resource"
    std::vector<Source> sources;
    std::string filter_field;
    std::string filter_argument;
    bool tag_rows = false;  // reduced rows name their resource
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

}  // namespace agency::tools
