// What tools/list publishes of a tool's schemas. The embedded schemas (schemas/) are the whole
// contract: docs/tools.md renders them and every call is validated against them. A client needs
// less to write a call: the bounds that only guard the server (maxLength, minLength, maxItems,
// pattern: a value past them gets an error naming the bound) and the output's descriptions are
// left out, a row the gateway writes ("x-passthrough": every member passes through, so the
// server cannot promise their types) is published as a plain object, a part marked "x-brief"
// (an insight's rows, provenance, model) by its type alone, and an output keeps, at
// its top, the fields every answer has and those that lead to the next call (next_cursor,
// truncated, note, preview, confirmation_id), not those repeating the call (client_id,
// resource) or counting rows (returned). This keeps tools/list with every toolset within 32 KB.
#pragma once

#include <memory>
#include <string_view>

#include "server/mcp_server.hpp"

namespace agency::tools {

mcp::json listed_input(const mcp::json& schema);
mcp::json listed_output(const mcp::json& schema);
// The published form of an embedded schema ("list_keywords.input"), made once.
std::shared_ptr<const mcp::json> listed_schema(std::string_view name);

}  // namespace agency::tools
