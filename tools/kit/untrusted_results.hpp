// Results that carry third-party text (gateway rows and records) say so in their _meta, so a
// client can treat them as data, never as instructions (docs/security.md, "Threat model:
// untrusted text"). The text itself is cleaned by base/untrusted_text.hpp where it enters an
// answer.
#pragma once

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// The members the mark adds to a result's _meta: github-mcp-server's information-flow label
// ("ifc": integrity untrusted; confidentiality private, as agency client data is) and this
// server's own flag ("agency-mcp/untrusted": true).
const json& untrusted_meta();

// Adds untrusted_meta() to `result`'s _meta, beside whatever it holds (the core merges the
// sample-data marker in later).
void mark_untrusted(mcp::ToolResult& result);

// `handler` whose successful results are marked (tool errors carry no gateway text).
Handler marking_untrusted(Handler handler);

}  // namespace agency::tools
