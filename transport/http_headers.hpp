// What the Streamable HTTP transport checks in request headers before a message reaches the
// core: Host and Origin (against DNS rebinding), Mcp-Session-Id, and the modern routing
// headers that must agree with the body (MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Mcp-Param-*), with the base64 form clients use for non-ASCII values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <httplib.h>

#include "server/mcp_server.hpp"

namespace agency::mcp {

// "host:port" or "[v6]:port" -> host (lowercase, brackets kept for v6).
std::string host_part(const std::string& authority);
// An Origin header as browsers send it: scheme "://" host [":" port], nothing else (no
// userinfo, path, query or fragment). Returns "scheme://host[:port]" in lowercase with the
// host alone in `host` (v6 in brackets), or nullopt for anything else.
std::optional<std::string> parse_origin(const std::string& origin, std::string& host);
// Session ids are visible ASCII (0x21-0x7E), as the spec requires of servers; anything else
// in the header is refused before any lookup.
bool valid_session_id(const std::string& id);
// A header value without the blanks around it.
std::string trimmed(std::string_view value);
// Decodes the "=?base64?...?=" form that clients use for non-ASCII header values; a value
// without both markers is literal. nullopt: the marked value is not valid (padded) base64.
std::optional<std::string> decode_header_value(const std::string& value);
// The text form an argument takes in an Mcp-Param-* header; nullopt: it has none.
std::optional<std::string> header_form(const json& value);

// Narrows `principal` by the request's X-MCP-Toolsets, X-MCP-Tools, X-MCP-Exclude-Tools
// (comma-separated names) and X-MCP-Readonly (true/1/yes drops the write scope): a request can
// only narrow what the server and its key allow. Returns what is wrong with a header (an
// unknown name, a value that is not a boolean), or nullopt.
std::optional<std::string> narrow_by_headers(const httplib::Request& req, const Server& server,
                                             Principal& principal);

// For a modern request or notification: why its routing headers disagree with its body
// (the text after "header mismatch: "), or nullopt when they agree. A body whose _meta lacks
// the version or capabilities is left to the core, whose -32602 comes first.
std::optional<std::string> routing_mismatch(const httplib::Request& req,
                                            const Incoming& message,
                                            const std::string& version_header,
                                            const Server& server);

}  // namespace agency::mcp
