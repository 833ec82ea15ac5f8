#include "tools/registry.hpp"

namespace agency::tools {

void register_all(mcp::Server& server, const std::shared_ptr<Toolbox>& box) {
    register_read_tools(server, box);
}

}  // namespace agency::tools
