// Shared pieces of the read tools.
#pragma once

#include <string>

#include "tools/tool_kit.hpp"

namespace agency::tools {

// A list tool over one gateway resource.
struct ListSpec {
    std::string tool;  // set at registration
    std::string resource;
    std::string order;      // "" = gateway default
    std::string direction;  // "" = gateway default
    std::string filter_field;     // fixed filter field ("" = none)
    std::string filter_argument;  // tool argument giving filter_value (absent: no filter)
    std::string filter_value;     // fixed filter value when filter_argument is empty
    bool per_client = true;       // takes client_id
    int default_limit = 100;
};

// The arguments a cursor is bound to: everything but limit and cursor.
json filter_arguments(const json& args);

// One page of `spec.resource`: rows spliced raw into the answer, cut at the size budget, with
// a signed next_cursor that continues at the first row left out.
mcp::ToolResult list_page(Toolbox& box, const ListSpec& spec, const json& args,
                          mcp::RequestContext& ctx);

// Resources a curated read tool covers; read_resource offers every other discovered one.
bool covered_by_curated_tool(std::string_view resource);

}  // namespace agency::tools
