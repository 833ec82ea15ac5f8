// A tools/call request as a modern (2026-07-28) caller sends it: the protocol version and the
// client's capabilities in `_meta`, no initialize needed. For the tests that drive the real
// binary over stdio or HTTP.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace agency::testing {

inline nlohmann::json modern_tool_call(int id, const std::string& tool,
                                       const nlohmann::json& args) {
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params",
             {{"name", tool},
              {"arguments", args},
              {"_meta",
               {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()}}}}}};
}

}  // namespace agency::testing
