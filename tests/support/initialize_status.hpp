// The HTTP status an `initialize` to 127.0.0.1:port/mcp gets with this API key ("" none): how
// the key tests see whether a running server accepts a key (-1 when nothing answered).
#pragma once

#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace agency::testing {

inline int initialize_status(int port, const std::string& key) {
    httplib::Client client("127.0.0.1", port);
    httplib::Headers headers{{"Accept", "application/json, text/event-stream"}};
    if (!key.empty()) headers.emplace("X-API-Key", key);
    const nlohmann::json body{{"jsonrpc", "2.0"},
                              {"id", 1},
                              {"method", "initialize"},
                              {"params",
                               {{"protocolVersion", "2025-06-18"},
                                {"capabilities", nlohmann::json::object()},
                                {"clientInfo", {{"name", "keys-test"}, {"version", "1"}}}}}};
    auto res = client.Post("/mcp", headers, body.dump(), "application/json");
    return res ? res->status : -1;
}

}  // namespace agency::testing
