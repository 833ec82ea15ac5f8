// Routes served beside the MCP endpoint, and what a route sees of a request (no httplib types).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agency::mcp {

struct HttpRequestView {  // what a route sees of a request (no httplib types)
    std::string method, path, remote_addr, query;  // query: the raw query string
    std::function<std::string(std::string_view)> header;  // "" when absent
};

struct HttpReply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpRoute {  // a route outside the MCP endpoint (GET unless said)
    std::string method = "GET";
    std::string path;  // exact path, e.g. "/healthz"
    std::function<HttpReply(const HttpRequestView&)> handler;
};

}  // namespace agency::mcp
