// What a host that shows its model structuredContent (and drops content) reads: a lean
// structuredContent (server/lean_answer.cpp; docs/design.md, "What an answer carries besides
// the result"). Claude Code, GitHub Copilot CLI, opencode and Codex hand their model
// JSON.stringify(structuredContent) and nothing else, so the compact text never reaches them.
#pragma once

#include <string>
#include <string_view>

#include "server/mcp_server.hpp"

namespace agency::mcp {

// The answer's JSON with its rows as columns and arrays: {"columns":["id","keyword",...],
// "rows":[["kw-1","plumber",...],...]}: no key repeated per row, a column that is null or
// absent in every row left out, and null members left out of the top level. Every value is the
// one the full answer has (a row's missing member is null in its array). Text that is not a JSON
// object, or whose "rows" is not an array of objects, comes back as it is.
std::string lean_structured(std::string_view structured);

// The client's name (clientInfo.name: the session's in the legacy eras, the request's
// io.modelcontextprotocol/clientInfo in 2026-07-28), "" when it sent none.
std::string client_name(const RequestContext& ctx);

// Hosts known to hand their model structuredContent alone (ASCII case-insensitive names:
// claude-code, copilot, opencode, codex).
bool shows_model_structured_content(std::string_view client_name);

// Whether this call's answer goes lean: the option, or for `automatic` the host.
bool lean_answer_for(const ServerOptions& options, const RequestContext& ctx);

}  // namespace agency::mcp
