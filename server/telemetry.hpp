// What the MCP core tells operators about the requests it answers: each request's trace
// context (installed for the thread that runs it, so log lines and gateway requests carry it)
// and its metrics (duration by method, tool and outcome; tool calls by tool, outcome and era;
// tasks, streams, sessions). Names follow the OpenTelemetry MCP conventions where they have one
// (mcp.server.operation.duration with mcp.method.name, gen_ai.tool.name, error.type), in
// Prometheus form. Also: rate-limit refusals, HTTP answers by route and status, and
// agency_build_info.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/trace_context.hpp"
#include "server/mcp_server.hpp"

namespace agency::mcp {

// One request, from the core's guarded dispatch to its answer. The trace: params._meta's
// `traceparent` when valid, else the HTTP header's, else a new trace; this server's work is a
// new span of it. Metrics are recorded for requests (not notifications or responses) when it
// is destroyed.
class RequestObserver {
public:
    RequestObserver(const Incoming& message, const Inbound& in);
    ~RequestObserver();
    RequestObserver(const RequestObserver&) = delete;
    RequestObserver& operator=(const RequestObserver&) = delete;

    // The request was answered with a JSON-RPC error.
    void rpc_error(int code);

    // tools/call, on the thread running it: the tool was found (so its name is one the server
    // knows: a label) and how it ended ("ok", "tool_error", "input_required", "task").
    static void tool_found(std::string_view tool);
    static void tool_outcome(std::string_view outcome);
    // The per-caller rate limit refused the request on this thread (Server::Impl::charge):
    // counted by method and `target` (the tool, prompt, resource URI or URI template it asked
    // for, when the server has it: a bounded set; else ""). A tools/call's own metrics carry
    // the tool; rpc_error(rate_limited) then labels the request `rate_limited`.
    static void rate_limited(std::string_view method, std::string_view target);

private:
    bool request_ = false;
    std::string method_;  // a known method's name, else "other"
    std::string tool_;    // tools/call of a known tool
    std::string outcome_ = "ok";
    std::string error_type_;
    Era era_ = Era::legacy;
    std::chrono::steady_clock::time_point started_;
    RequestObserver* previous_;
    std::optional<base::CallTraceScope> scope_;
};

// The trace of work that runs on after its request (a task): the calling thread's, or a new
// one for work that no request started (a task resumed at start).
std::shared_ptr<const base::CallTrace> trace_for_work(std::string_view tool,
                                                      const std::string& principal);

// Tasks: one reached `status` (counted once per status it enters); one started or ended
// running on this process.
void count_task_status(TaskStatus status);
void count_task_running(int delta);
// Streamed (SSE) answers opened (+1) or closed (-1).
void count_stream(int delta);

// HTTP answers a listener sent, by method, route and status (its logger calls it once per
// answer). Labels stay bounded whatever callers send: a path not among `routes` (those the
// listener serves) counts as route "other", a method HTTP does not define as "other", a
// status as base::metrics::http_status_label says.
class HttpAnswerCounter {
public:
    explicit HttpAnswerCounter(std::vector<std::string> routes);
    void operator()(std::string_view method, std::string_view path, int status) const;

private:
    std::vector<std::string> routes_;
};

// Sets the open-sessions gauge to `server`'s count at each render, until the returned
// guard goes.
class SessionGauge {
public:
    explicit SessionGauge(const Server& server);
    ~SessionGauge();
    SessionGauge(const SessionGauge&) = delete;
    SessionGauge& operator=(const SessionGauge&) = delete;

private:
    int hook_;
};

}  // namespace agency::mcp
