// docs/tools.md, generated from the registered tool definitions (`agency-mcp tools-doc`), so
// that the reference cannot drift from what tools/list actually says.
#pragma once

#include <string>

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// The Markdown reference of every tool `principal` sees on `server`, in registration order:
// summary table, then per tool its description, annotations, arguments (from the input schema),
// output fields (from the output schema) and gateway mapping (from `catalog`, what registration
// returned). Deterministic: the same definitions always give the same bytes.
std::string tools_markdown(const mcp::Server& server, const mcp::Principal& principal,
                           const ToolCatalog& catalog);
// The toolsets table (toolset, its tools, what for) and how to choose them: in docs/tools.md
// and the README.
std::string toolsets_markdown(const ToolCatalog& catalog);
// The README's generated section (`agency-mcp tools-doc --readme`): the toolsets, resources
// and prompts.
std::string readme_markdown(const ToolCatalog& catalog);

}  // namespace agency::tools
