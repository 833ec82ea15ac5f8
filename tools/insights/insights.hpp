// The insight tools (toolset `insights`, issue 46): the agency's everyday questions answered
// in one call, computed in the server from every page they need within the call's budget. Each
// answer is small (about 4 KB at its default limit), states the gateway's values and the
// arithmetic over them, says "cannot tell" where the rows lack what a figure needs, and
// carries its provenance (tools/insights/insight_kit.hpp).
#pragma once

#include <memory>

#include "server/tool_def.hpp"
#include "tools/insights/insight_kit.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools::insights {

// Keywords whose newest position lies in a range, by the clicks reaching position 3 would add.
mcp::ToolResult find_quick_wins(Toolbox& box, const json& args, mcp::RequestContext& ctx);
// Keywords for which two or more of the client's urls ranked in a window.
mcp::ToolResult find_cannibalization(Toolbox& box, const json& args, mcp::RequestContext& ctx);
// Pages whose keywords slid over the newest weeks, by estimated clicks lost.
mcp::ToolResult find_declining_pages(Toolbox& box, const json& args, mcp::RequestContext& ctx);
// The backlinks the gateway marks lost, strongest first (tools/insights/backlink_insights.cpp).
mcp::ToolResult find_lost_backlinks(Toolbox& box, const json& args, mcp::RequestContext& ctx);
// The client's backlinks counted (every row), the lost ones by the same marks.
struct LostCount {
    std::size_t total = 0, lost = 0;
    bool marked = false;  // some row carries a lost mark: `lost` is a count, not a guess
};
LostCount count_lost_backlinks(Toolbox& box, const std::string& client_id,
                               mcp::RequestContext& ctx, Provenance& p);
// Every client the caller reaches, most urgent first (tools/insights/triage.cpp).
mcp::ToolResult triage_clients(Toolbox& box, const json& args, mcp::RequestContext& ctx);

// Registers the insight tools and get_client_overview (tools/insights/insight_tools.cpp).
ToolCatalog register_insight_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box);

}  // namespace agency::tools::insights
