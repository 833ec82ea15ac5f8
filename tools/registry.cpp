#include "tools/registry.hpp"
#include "server/mcp_server.hpp"
#include "tools/kit/views.hpp"

#include <stdexcept>

#include "base/log.hpp"

#include "tools/actions/action_tools.hpp"
#include "tools/insights/insights.hpp"
#include "tools/kit/toolsets.hpp"
#include "tools/pipeline/client_scope.hpp"
#include "tools/surface/surface.hpp"

namespace agency::tools {

ToolCatalog register_all(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                         std::shared_ptr<ActionRuntime> actions) {
    server.set_tool_groups(tool_groups());
    ToolCatalog docs = register_read_tools(server, box);
    ToolCatalog insight_docs = insights::register_insight_tools(server, box);
    docs.insert(docs.end(), insight_docs.begin(), insight_docs.end());
    if (!actions) throw std::invalid_argument("register_all: no ActionRuntime");
    ToolCatalog action_docs = register_action_tools(server, box, actions);
    docs.insert(docs.end(), action_docs.begin(), action_docs.end());
    register_surface(server, box, actions);  // resources, prompts, completion
    register_views(server);                  // MCP Apps: the ui:// views
    scope_tasks_to_clients(server);          // a task of a client out of reach is unknown
    return docs;
}

void watch_discovery(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                     std::chrono::milliseconds period) {
    if (period.count() <= 0) return;
    // The filter of register_action_tools reads the client's cached discovery, which the
    // refresher replaces: listing follows by itself, the notification tells clients to look.
    box->gateway().start_discovery_refresh(period, [&server] {
        log::info("the gateway's actions changed: telling clients the tool list changed");
        server.notify_tools_changed();
    });
    server.on_shutdown([box] { box->gateway().stop_discovery_refresh(); });
}

}  // namespace agency::tools
