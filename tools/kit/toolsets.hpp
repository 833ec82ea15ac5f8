// Toolsets: the named groups a server or a request enables tools by (--toolsets, X-MCP-Toolsets),
// and the server instructions written from what is enabled. Each tool names its toolset in its
// entry (ToolSpec::toolset); this is the list of toolsets and what they are for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_def.hpp"

namespace agency::tools {

struct Toolset {
    std::string_view name;
    std::string_view description;
};

// Every toolset, in the order docs list them.
const std::vector<Toolset>& toolsets();
// The groups as the MCP core sees them: "all" (every toolset) and "default" (what `serve`
// enables without --toolsets: every toolset today), and `clients` in every selection by toolset
// (every other tool takes a client_id that list_clients finds); drop its tools by name.
mcp::ToolGroups tool_groups();
// Short instructions for a client, written from the tools enabled: which toolsets, where to
// start, what needs a person's confirmation or is polled. `read_only`: no action tools.
std::string server_instructions(const std::vector<const mcp::ToolDef*>& enabled, bool read_only);

}  // namespace agency::tools
