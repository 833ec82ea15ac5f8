// list_clients for a caller with a client scope: the gateway's clients that are in it, paged
// by a cursor bound to the scope.
#include "tools/reads/read_tools.hpp"

#include <algorithm>

namespace agency::tools {

namespace {

// The row with only the members `fields` names (every member when it names none).
std::string selected_members(std::string_view row_json, const json& args) {
    auto f = args.find("fields");
    if (f == args.end() || !f->is_array() || f->empty()) return std::string(row_json);
    const json row = json::parse(row_json, nullptr, false);
    if (!row.is_object()) return std::string(row_json);
    json kept = json::object();
    for (const auto& name : *f)
        if (name.is_string() && row.contains(name.get<std::string>()))
            kept[name.get<std::string>()] = row[name.get<std::string>()];
    return kept.dump();
}

std::string row_id(std::string_view row_json) {
    const json row = json::parse(row_json, nullptr, false);
    if (!row.is_object()) return "";
    const json& id = row.contains("id") ? row["id"] : row.value("client_id", json());
    return id.is_string() ? id.get<std::string>() : id.is_number() ? id.dump() : "";
}

}  // namespace

mcp::ToolResult scoped_clients_page(Toolbox& box, const ListSpec& spec, const json& args,
                                    mcp::RequestContext& ctx) {
    const auto& scope = ctx.principal.clients;
    // The scope is one of the filters: a cursor issued under another scope (keys update changed
    // it since) no longer opens, as for any change of the arguments.
    json filters = filter_arguments(args);
    filters["client_scope"] = scope;
    const std::string principal = principal_of(ctx);
    const CursorBinding binding{spec.tool, "", principal, &filters};
    std::int64_t offset = 0;
    if (auto c = args.find("cursor"); c != args.end())
        offset = box.open_cursor(binding, c->get<std::string>()).offset;

    // Every client of the gateway that is in the scope, in the gateway's order.
    std::vector<std::string> rows;
    box.gateway().for_each_row(
        {.resource = "clients", .limit = 1000},
        [&](std::string_view row) {
            const std::string id = row_id(row);
            if (std::find(scope.begin(), scope.end(), id) != scope.end())
                rows.push_back(selected_members(row, args));
            return rows.size() < scope.size();
        },
        ctx.stop);
    const auto total = static_cast<std::int64_t>(rows.size());
    const std::int64_t limit = args.value("limit", spec.default_limit);
    RowWriter writer("", spec.resource, answer_budget(box.settings(), args));
    for (std::int64_t i = offset; i < total && i < offset + limit; ++i)
        if (!writer.add(rows[static_cast<std::size_t>(i)])) break;
    const std::int64_t next = offset + static_cast<std::int64_t>(writer.count());
    const std::string cursor = next < total ? box.issue_cursor(binding, next) : "";
    if (writer.count() == 0) writer.set_note(empty_note("", spec.resource, "", total, offset));
    return mcp::ToolResult::structured(writer.finish(total, cursor));
}

}  // namespace agency::tools
