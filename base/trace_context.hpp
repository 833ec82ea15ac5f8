// W3C trace context (https://www.w3.org/TR/trace-context/) and the call a thread works for.
// A request's `traceparent` (params._meta or the HTTP header) names the trace its call belongs
// to; the core installs a CallTrace for the thread running the call, the gateway client sends a
// child `traceparent` on each request it makes, and the log formatter writes the trace id, tool
// and principal on every line. Work that hops to another thread (a task, an audit job, a read
// ahead) carries the shared CallTrace there explicitly (CallTraceScope).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace agency::base {

struct TraceParent {
    std::array<char, 32> trace_id{};  // lowercase hex, not all zeros
    std::array<char, 16> span_id{};   // lowercase hex, not all zeros (the parent-id field)
    std::uint8_t flags = 0;           // bit 0: sampled

    std::string_view trace_id_hex() const { return {trace_id.data(), trace_id.size()}; }
    std::string_view span_id_hex() const { return {span_id.data(), span_id.size()}; }
    // "00-<trace-id>-<span-id>-<flags>": always version 00, what this server speaks.
    std::string header() const;
};

// The header's value when it is a valid traceparent, else nullopt (never throws). Strict: the
// exact version-00 form (55 characters, lowercase hex, dashes where they belong, no all-zero
// id), version ff refused; a later version is read by its first four fields when what follows
// them starts with '-', as the recommendation asks.
std::optional<TraceParent> parse_traceparent(std::string_view text);

// A new trace: random trace and span ids, flags 00 (this server records no spans; a caller
// that wants sampling sends its own traceparent).
TraceParent start_trace();
// The same trace and flags with a new random span id: what an outgoing request carries.
TraceParent child_span(const TraceParent& parent);

// What the log lines and outgoing requests of one call carry. Immutable once made, shared by
// the threads that work for the call.
struct CallTrace {
    TraceParent trace;      // the span of this server's work on the call
    std::string method;     // the MCP method (tools/call, resources/read, ...)
    std::string tool;       // tools/call: the tool's name; else ""
    std::string principal;  // who called (an HTTP key's name, or "local"); never a key
};

// The call the current thread works for, or null.
const CallTrace* current_call_trace();
std::shared_ptr<const CallTrace> shared_call_trace();

// Installs `trace` for this thread for the scope's lifetime (null: none), restoring the one
// before after.
class CallTraceScope {
public:
    explicit CallTraceScope(std::shared_ptr<const CallTrace> trace);
    ~CallTraceScope();
    CallTraceScope(const CallTraceScope&) = delete;
    CallTraceScope& operator=(const CallTraceScope&) = delete;

private:
    std::shared_ptr<const CallTrace> previous_;
};

}  // namespace agency::base
