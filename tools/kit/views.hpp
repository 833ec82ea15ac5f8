// MCP Apps views (the io.modelcontextprotocol/ui extension): four HTML documents built from
// views/ at build time and embedded in the binary (cmake/embed_views.cmake), served as ui://
// resources and linked from the tools whose results they show (ToolSpec::view). Only clients
// that declare the extension see the links (mcp::RequestContext::renders_views); the others
// get every result's complete text as before.
#pragma once

#include <string_view>
#include <vector>

#include "server/tool_def.hpp"

namespace agency::tools {

inline constexpr std::string_view kRankingsView = "ui://agency-mcp/rankings.html";
inline constexpr std::string_view kAuditView = "ui://agency-mcp/audit.html";
inline constexpr std::string_view kApproveView = "ui://agency-mcp/approve.html";
inline constexpr std::string_view kClientOverviewView = "ui://agency-mcp/client-overview.html";

struct EmbeddedView {
    std::string_view name;  // "rankings": ui://agency-mcp/rankings.html
    std::string_view html;
};
// Generated at build time; empty when the build left the views out (-DAGENCY_VIEWS=OFF).
const std::vector<EmbeddedView>& embedded_views();

// Whether the binary carries the view at `uri` (a tool links only a view that exists).
bool view_embedded(std::string_view uri);

// The views as ui:// resources (listed to clients that render views, readable by any).
void register_views(mcp::Server& server);

}  // namespace agency::tools
