// Action tools: gateway POST actions behind the write scope, idempotency keys, a per-client
// credit limiter and durable audit jobs. Deploy and send act only after a person confirmed
// them (elicitation, or a preview and a single-use confirmation_id).
#pragma once

#include <memory>

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/pipeline/action_runtime.hpp"

namespace agency::tools {

// Registers the action tools and get_audit_status, hides those whose gateway action the live
// discovery lacks, and starts the audit workers (picking up jobs a previous run left). Returns
// their docs.
ToolCatalog register_action_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                                  const std::shared_ptr<ActionRuntime>& runtime);

}  // namespace agency::tools
