#include "tools/registry.hpp"

#include "tools/action_tools.hpp"

namespace agency::tools {

void register_all(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                  std::shared_ptr<ActionRuntime> actions) {
    register_read_tools(server, box);
    if (!actions) actions = std::make_shared<ActionRuntime>(ActionSettings{});
    register_action_tools(server, box, actions);
}

}  // namespace agency::tools
