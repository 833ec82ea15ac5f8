// CORS for the Streamable HTTP transport: the preflight answer and the headers that let an
// allowed origin read our answers (see http_cors.hpp).
#include "transport/http_cors.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/text.hpp"
#include "server/protocol.hpp"
#include "transport/http_headers.hpp"

namespace agency::mcp {

// Origins that pass the Origin check (in the pre-routing handler; others got 403 there) may
// send the MCP headers; the answer is cached for 10 minutes.
void answer_preflight(const httplib::Request& req, httplib::Response& res) {
    res.status = 204;
    res.set_header("Allow", "POST, DELETE, OPTIONS");
    if (!req.has_header("Origin")) return;
    res.set_header("Access-Control-Allow-Methods", "POST, DELETE, OPTIONS");
    // The fixed MCP headers, and the Mcp-Param-* headers a tool call may carry (their
    // names depend on the tool, so they are taken from the request).
    std::string allowed =
        "Content-Type, Accept, Authorization, X-API-Key, X-MCP-Toolsets, X-MCP-Tools, "
        "X-MCP-Exclude-Tools, X-MCP-Readonly, ";
    for (std::string_view name :
         {kHeaderSessionId, kHeaderProtocolVersion, kHeaderMethod, kHeaderName})
        allowed.append(name).append(", ");
    allowed += "Last-Event-ID";
    const std::string param_prefix = base::ascii_lower(kHeaderParamPrefix);
    const std::string requested = req.get_header_value("Access-Control-Request-Headers");
    for (std::size_t at = 0; at < requested.size();) {
        auto comma = requested.find(',', at);
        if (comma == std::string::npos) comma = requested.size();
        const std::string name = trimmed(requested.substr(at, comma - at));
        at = comma + 1;
        if (name.size() > param_prefix.size() &&
            base::ascii_lower(name.substr(0, param_prefix.size())) == param_prefix &&
            std::all_of(name.begin(), name.end(),
                        [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_'; }))
            allowed += ", " + name;
    }
    res.set_header("Access-Control-Allow-Headers", allowed);
    res.set_header("Access-Control-Max-Age", "600");
}

void allow_origin_to_read(const httplib::Request& req, httplib::Response& res) {
    if (!req.has_header("Origin") || res.status == 403) return;
    res.set_header("Access-Control-Allow-Origin", req.get_header_value("Origin"));
    res.set_header("Access-Control-Expose-Headers", std::string(kHeaderSessionId));
    res.set_header("Vary", "Origin");
}

}  // namespace agency::mcp
