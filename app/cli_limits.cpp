// The command line's limits of `serve`: connections, streams, sessions, workers, the calls
// waiting on a client and the tasks. One group (`serve --help-all`), each with its variable.
#include <CLI/CLI.hpp>

#include "app/cli.hpp"
#include "app/cli_validators.hpp"
#include "server/mcp_server.hpp"

namespace agency::app {

void CommandLine::add_http_limits() {
    const mcp::HttpOptions defaults;
    max_connections_ = static_cast<int>(defaults.max_connections);
    max_connections_per_address_ = static_cast<int>(defaults.max_connections_per_peer);
    head_timeout_s_ = static_cast<int>(defaults.head_timeout.count() / 1000);
    idle_timeout_s_ = static_cast<int>(defaults.idle_timeout.count());
    max_streams_ = static_cast<int>(defaults.max_streams);
    max_streams_per_session_ = static_cast<int>(defaults.max_streams_per_session);
    max_sessions_ = static_cast<int>(defaults.max_sessions);
    max_sessions_per_caller_ = static_cast<int>(defaults.max_sessions_per_principal);
    max_streams_per_caller_ = static_cast<int>(defaults.max_streams_per_principal);
    workers_ = static_cast<int>(defaults.workers);
    read_workers_ = static_cast<int>(defaults.read_workers);
    worker_share_ = static_cast<int>(defaults.worker_share);
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-connections", max_connections_,
              "AGENCY_HTTP_MAX_CONNECTIONS",
              "Open HTTP connections in all; at the bound the longest-idle one is "
              "closed, or a new one gets 503 (default 4096)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-connections-per-address",
              max_connections_per_address_, "AGENCY_HTTP_MAX_CONNECTIONS_PER_ADDRESS",
              "Open HTTP connections from one client address; more get 503 "
              "(default 256)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-head-timeout", head_timeout_s_,
              "AGENCY_HTTP_HEAD_TIMEOUT_S",
              "Seconds a client has to send a whole request head once it has begun; "
              "then 408 and the connection is closed (default 10)",
              CLI::Range(1, 3600));
    add_bound(*serve_cmd_, kHttpLimits, "--http-idle-timeout", idle_timeout_s_,
              "AGENCY_HTTP_IDLE_TIMEOUT_S",
              "Seconds a kept-alive HTTP connection may wait for its next request "
              "(default 5)",
              CLI::Range(1, 3600));
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-streams", max_streams_,
              "AGENCY_HTTP_MAX_STREAMS",
              "Streamed (SSE) answers open at once; more get 503 (default 512)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-streams-per-session", max_streams_per_session_,
              "AGENCY_HTTP_MAX_STREAMS_PER_SESSION",
              "Streamed answers open at once on one legacy session (default 16)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-sessions", max_sessions_,
              "AGENCY_HTTP_MAX_SESSIONS",
              "Legacy sessions open at once; initialize gets 503 beyond (default 4096)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-sessions-per-caller", max_sessions_per_caller_,
              "AGENCY_HTTP_MAX_SESSIONS_PER_CALLER",
              "Legacy sessions one caller (key or OAuth subject) holds; its initialize "
              "beyond closes its least recently used one. When all are open, the caller "
              "holding the most gives one up (default 512)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-max-streams-per-caller", max_streams_per_caller_,
              "AGENCY_HTTP_MAX_STREAMS_PER_CALLER",
              "Streamed answers one caller holds open at once; more get 503 (default 64)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-workers", workers_, "AGENCY_HTTP_WORKERS",
              "Threads running calls that may wait long on the gateway or a person "
              "(actions, tasks/result): they mostly wait, so the lane is wide; more wait "
              "their turn (default 256)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-read-workers", read_workers_,
              "AGENCY_HTTP_READ_WORKERS",
              "Threads running the other calls (reads): a lane of their own, so reads "
              "never queue behind slow actions (default 64)");
    add_bound(*serve_cmd_, kHttpLimits, "--http-worker-share", worker_share_,
              "AGENCY_HTTP_WORKER_SHARE",
              "Calls one caller may run at once in each lane, with as many more waiting "
              "for a worker; beyond that its call is refused at once (429, Retry-After: "
              "1), so one caller's burst leaves the other workers to the others (default "
              "0: a quarter of each lane)",
              CLI::NonNegativeNumber);
}

// The calls waiting on a client and the MCP tasks: the HTTP limits' group, bounds of the core.
void CommandLine::add_call_limits() {
    const mcp::ServerOptions server_defaults;
    serve.max_waiting_on_clients = static_cast<int>(server_defaults.max_waiting_on_clients);
    serve.max_waiting_per_caller = static_cast<int>(server_defaults.max_waiting_per_caller);
    serve.max_tasks = static_cast<int>(server_defaults.max_live_tasks);
    serve.max_tasks_per_caller = static_cast<int>(server_defaults.max_live_tasks_per_caller);
    add_bound(*serve_cmd_, kHttpLimits, "--max-waiting-on-clients", serve.max_waiting_on_clients,
              "AGENCY_MAX_WAITING_ON_CLIENTS",
              "Calls that may wait at once for a client's answer (elicitation, "
              "sampling, roots); one more gets an error at once (default 64)");
    add_bound(*serve_cmd_, kHttpLimits, "--max-waiting-on-clients-per-caller",
              serve.max_waiting_per_caller, "AGENCY_MAX_WAITING_ON_CLIENTS_PER_CALLER",
              "Of them, one caller's at once (default 16)");
    add_bound(*serve_cmd_, kHttpLimits, "--max-tasks", serve.max_tasks, "AGENCY_MAX_TASKS",
              "MCP tasks running at once; each holds a thread, so it is lowered to fit "
              "the thread limit (ulimit -u). Near it, the caller holding the most is "
              "refused first (default 256)");
    add_bound(*serve_cmd_, kHttpLimits, "--max-tasks-per-caller", serve.max_tasks_per_caller,
              "AGENCY_MAX_TASKS_PER_CALLER",
              "MCP tasks one caller (key or OAuth subject, all its sessions) runs at "
              "once (default 32)");
}

}  // namespace agency::app
