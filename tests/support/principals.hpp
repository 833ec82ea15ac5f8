// Callers as the transports name them, for tests that call as someone: key_principal("alice")
// is the caller that presented API key "alice" ("key:alice", authenticated).
#pragma once

#include <string>

#include "server/tool_def.hpp"

namespace agency::testing {

inline agency::mcp::Principal key_principal(const std::string& name) {
    agency::mcp::Principal p;
    p.name = "key:" + name;
    p.authenticated = true;
    return p;
}

}  // namespace agency::testing
