// Toolsets: which tools a server or a request keeps (ToolSelection). The core knows groups only
// as the names tools carry (ToolDef::group) and the aliases it is given; what they mean is the
// tools layer's.
#include <algorithm>
#include <stdexcept>

#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

bool contains(const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether `tool` is kept by `selection` under `groups`.
bool keeps(const ToolSelection& selection, const ToolGroups& groups, const ToolDef& tool) {
    if (contains(selection.exclude, tool.name)) return false;
    if (selection.groups.empty() && selection.tools.empty()) return true;
    if (contains(selection.tools, tool.name)) return true;
    if (selection.groups.empty() || tool.group.empty()) return false;
    if (contains(groups.always, tool.group)) return true;
    for (const auto& name : selection.groups) {
        if (name == tool.group) return true;
        auto alias = groups.aliases.find(name);
        if (alias != groups.aliases.end() && contains(alias->second, tool.group)) return true;
    }
    return false;
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

void Server::set_instructions(std::string instructions) {
    impl_->options.info.instructions = std::move(instructions);
}

void Server::set_tool_groups(ToolGroups groups) { impl_->tool_groups = std::move(groups); }

void Server::set_tool_selection(ToolSelection selection) {
    if (auto problem = check_tool_selection(selection); !problem.empty())
        throw std::invalid_argument(problem);
    impl_->selection = std::move(selection);
}

std::string Server::check_tool_selection(const ToolSelection& selection) const {
    std::vector<std::string> groups;
    for (const auto& [name, members] : impl_->tool_groups.aliases) groups.push_back(name);
    for (const auto& tool : impl_->tools)
        if (!tool.group.empty() && !contains(groups, tool.group)) groups.push_back(tool.group);
    for (const auto& name : selection.groups)
        if (!contains(groups, name))
            return "unknown toolset \"" + name + "\" (toolsets: " + join(groups) + ")";
    for (const auto* list : {&selection.tools, &selection.exclude})
        for (const auto& name : *list)
            if (!impl_->find_tool(name))
                return "unknown tool \"" + name + "\" (tool names are those of tools/list; " +
                       "docs/tools.md lists every one)";
    return {};
}

bool Server::tool_selected(const ToolDef& tool, const Principal& principal) const {
    return keeps(impl_->selection, impl_->tool_groups, tool) &&
           keeps(principal.selection, impl_->tool_groups, tool);
}

bool Server::offers_tool(std::string_view name, const Principal& principal) const {
    const ToolDef* tool = impl_->find_tool(std::string(name));
    if (tool == nullptr || !impl_->tool_visible(*tool) || !tool_selected(*tool, principal))
        return false;
    return std::all_of(tool->required_scopes.begin(), tool->required_scopes.end(),
                       [&](const std::string& scope) { return principal.has_scope(scope); });
}

}  // namespace agency::mcp
