// Registers agency-mcp's tools on an MCP server. Each family lives in its own file.
#pragma once

#include <chrono>
#include <memory>

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

class ActionRuntime;

// Every tool of the product. Action tools keep their state (jobs, drafts, idempotency records)
// in `actions` and its store, which app/ opens. Returns the docs of every tool registered
// (tools_markdown's catalog).
ToolCatalog register_all(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                         std::shared_ptr<ActionRuntime> actions);

// Re-reads the gateway's discovery every `period`; when the deployment's actions change, the
// tool list follows (tools of withdrawn actions hide) and legacy sessions are sent
// notifications/tools/list_changed. Stops when the server is destroyed.
void watch_discovery(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                     std::chrono::milliseconds period);

}  // namespace agency::tools
