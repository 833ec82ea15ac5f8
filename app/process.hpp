// What the process does for itself around serving: logging, memory, limits, signals.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <thread>

namespace agency::app {

// The variable's value, or `fallback` when it is unset or empty.
// (A value that is a whole unfilled `${placeholder}`, as a bundle's host passes an optional
// setting left empty, is unset.)
std::string env_or(const char* name, std::string fallback = {});
// A whole `${user_config.x}`: how a bundle's host (.mcpb) passes an optional setting the
// person left empty. It is no value.
bool unfilled_placeholder(std::string_view value);
// The first line of a file holding a secret (trailing spaces and CR dropped).
std::string read_secret_file(const std::string& path);
// spdlog to stderr, or appended to `file` when one is named; never stdout, which carries
// protocol messages in stdio mode. `format`: "text" or "json" (app/log_format.hpp). Throws
// std::runtime_error when the file cannot be opened, std::invalid_argument for a bad format.
void setup_logging(const std::string& level, const std::string& file = {},
                   const std::string& format = "text");
void tune_malloc();
// Threads started after this get kThreadStack of stack instead of glibc's 8 MiB (the
// RLIMIT_STACK default). A call's connection thread and its worker mostly wait (on a client,
// on the gateway), and hundreds of them may be waiting at once; what they use is a few dozen
// kB (messages are parsed to a bounded depth). Not under a sanitizer, whose frames are larger.
void small_thread_stacks();
void prefault_heap();
// Parses every embedded tool schema on a thread of its own; join before exit.
std::jthread warm_schemas();
// The connection bound that fits the file descriptor limit (raised to the hard limit first).
std::size_t fit_connections_to_fd_limit(std::size_t wanted);
// The bound on running tasks (each holds a thread) that fits what the process may still create:
// RLIMIT_NPROC, which counts every thread of the user (unless the process is exempt), and the
// kernel's threads-max, less the threads there are now and `headroom` for everything else.
std::size_t fit_tasks_to_thread_limit(std::size_t wanted, std::size_t headroom);
// From now on SIGINT and SIGTERM ask the process to stop instead of ending it: the returned
// descriptor becomes readable. Before this call they end it at once (nothing to drain yet).
int catch_stop_signals();
// Blocks until SIGINT or SIGTERM (calls catch_stop_signals).
void wait_for_signal();

}  // namespace agency::app
