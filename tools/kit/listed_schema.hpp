// What tools/list publishes of a tool's schemas. The embedded schemas (schemas/) are the whole
// contract: docs/tools.md renders them and every call is validated against them. tools/list is
// in every model's context on connect, so it carries what a client needs to write a call and
// check an answer, within 32 KiB with every toolset and views (docs/tool-budget.md):
// - an input leaves out the bounds that only guard the server (maxLength, minLength, maxItems,
//   maxProperties, pattern, max_bytes's range: a value past them gets an error naming the
//   bound) and the examples (the sample gateway's ids, which a model elsewhere would copy),
//   describes the arguments many tools share (cursor, fields, limit, max_bytes, idempotency_key)
//   once (docs/tools.md, the instructions) rather than in every tool, and says "x-listed" instead
//   of a description too long for every model's context;
// - an output is the members every answer has (required), without those repeating the call
//   (client_id, resource) or counting rows (returned); their types, and the members only some
//   answers have, are in docs/tools.md. Hosts do not show output schemas to the model; the
//   programs that validate answers keep the promise that matters, which members are there.
//   An answer whose members the gateway writes ("x-passthrough") is a plain object.
#pragma once

#include <memory>
#include <string_view>

#include "server/tool_def.hpp"

namespace agency::tools {

mcp::json listed_input(const mcp::json& schema);
mcp::json listed_output(const mcp::json& schema);
// The published form of an embedded schema ("list_keywords.input"), made once.
std::shared_ptr<const mcp::json> listed_schema(std::string_view name);

}  // namespace agency::tools
