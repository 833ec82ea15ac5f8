// The MCP core's names that the tests of the core, its transports and its tasks write
// unqualified, declared once. core_types holds those that mean nothing else in any test (safe in
// a unity batch); core_names adds json and Server, for a file compiled alone (in a unity batch
// another file's Server may be the sample gateway's).
#pragma once

#include "server/mcp_server.hpp"

namespace agency::testing::core_types {
using agency::mcp::Channel, agency::mcp::Era, agency::mcp::Inbound, agency::mcp::MemoryTaskStore,
    agency::mcp::Principal, agency::mcp::RequestContext, agency::mcp::ServerOptions,
    agency::mcp::Session, agency::mcp::TaskSupport, agency::mcp::ToolDef,
    agency::mcp::ToolResult;
}  // namespace agency::testing::core_types

namespace agency::testing::core_names {
using namespace agency::testing::core_types;
using agency::mcp::json, agency::mcp::Server;
}  // namespace agency::testing::core_names
