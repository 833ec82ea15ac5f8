// Routes beside the MCP endpoint (health, metrics, OAuth metadata…): what they see of a request
// and what they answer, without httplib types, so that the code behind them needs no transport.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agency::mcp {

struct HttpRequestView {
    std::string method;
    std::string path;
    std::string remote_addr;
    std::string query;  // the raw query string, without '?'
    std::function<std::string(std::string_view)> header;  // "" when absent
};

struct HttpReply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// Served outside the MCP endpoint and never authenticated by the transport (a route that needs
// a caller checks it itself); still behind the Host and Origin guards. GET routes answer HEAD.
struct HttpRoute {
    std::string method = "GET";  // GET, POST or OPTIONS (a body is refused: routes read none)
    std::string path;            // matched exactly
    // Any Host header passes (the Origin guard still applies): a health check from a load
    // balancer names the machine by its address, which the DNS-rebinding guard would refuse.
    // Only for routes whose answers are no secret.
    bool any_host = false;
    std::function<HttpReply(const HttpRequestView&)> handler;
};

}  // namespace agency::mcp
