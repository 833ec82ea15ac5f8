// MCP over stdio: one JSON message per line. stdout carries protocol messages only.
#pragma once

#include <chrono>
#include <cstddef>

#include "server/mcp_server.hpp"

namespace agency::mcp {

struct StdioOptions {
    std::size_t max_message_bytes = 4 * 1024 * 1024;
    JsonLimits json_limits;  // nesting depth and string length, checked before parsing
    // Workers for calls, in two lanes as over HTTP: those that may wait long (actions,
    // tasks/result: Server::may_wait_long) and the rest, so reads never queue behind actions.
    std::size_t workers = 16;
    std::size_t read_workers = 8;
    std::chrono::milliseconds drain_timeout{30'000};
    Principal principal;  // the process's own scopes (--read-only drops "write")
    // When it becomes readable (SIGTERM), reading stops as at end of input: the calls in
    // flight are answered within drain_timeout, then serve_stdio returns. -1: none.
    int stop_fd = -1;
};

// Serves until end of input; returns the process exit code.
int serve_stdio(Server& server, const StdioOptions& options, int in_fd = 0, int out_fd = 1);

}  // namespace agency::mcp
