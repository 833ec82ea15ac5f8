#include "server/telemetry.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "base/metrics.hpp"
#include "server/method_table.hpp"
#include "server/protocol.hpp"

namespace agency::mcp {

namespace {

namespace metrics = base::metrics;

thread_local RequestObserver* t_observer = nullptr;

metrics::HistogramFamily& operation_duration() {
    static auto* family = new metrics::HistogramFamily(
        "mcp_server_operation_duration_seconds",
        "MCP request duration as observed on the server, from receipt to answer "
        "(OpenTelemetry mcp.server.operation.duration)",
        {"mcp_method_name", "gen_ai_tool_name", "error_type"}, metrics::duration_buckets());
    return *family;
}

metrics::CounterFamily& tool_calls() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_tool_calls_total",
        "tools/call requests by tool, outcome (ok, tool_error, rpc_error, rate_limited, "
        "input_required, task) and protocol era (legacy: initialize and sessions; modern: "
        "2026-07-28)",
        {"gen_ai_tool_name", "outcome", "era"});
    return *family;
}

metrics::CounterFamily& tasks() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_tasks_total", "MCP tasks that reached each status on this process", {"status"},
        {"working", "input_required", "completed", "failed", "cancelled"});
    return *family;
}

metrics::GaugeFamily& gauges() {
    static auto* family = new metrics::GaugeFamily(
        "agency_mcp_open",
        "What is open now: tasks running on this process, streamed (SSE) HTTP answers, legacy "
        "sessions",
        {"what"}, {"tasks", "streams", "sessions"});
    return *family;
}

metrics::CounterFamily& rate_limit_refusals() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_rate_limit_refusals_total",
        "Requests the per-caller rate limit refused (JSON-RPC -32029, HTTP 429), by method and "
        "target: the tool (tools/call), prompt (prompts/get), resource URI or URI template "
        "(resources/read); empty for other methods and names the server does not have",
        {"mcp_method_name", "target"});
    return *family;
}

metrics::CounterFamily& http_answers() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_http_responses_total",
        "HTTP answers sent, by request method, route (a path served; other: any other path) "
        "and status code",
        {"http_request_method", "http_route", "http_response_status_code"});
    return *family;
}

// The compiler that built this binary, as a label value.
std::string compiler() {
#if defined(__clang__)
    return "clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) +
           "." + std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
    return "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
           std::to_string(__GNUC_PATCHLEVEL__);
#else
    return "other";
#endif
}

// 1, labelled with what was built: which version a fleet runs shows in one query.
void register_build_info() {
    static auto* family = new metrics::GaugeFamily(
        "agency_build_info",
        "agency-mcp's build: its version, the newest MCP protocol version it speaks and the "
        "compiler; always 1",
        {"version", "mcp_protocol_version", "compiler"});
    family->set({AGENCY_VERSION, kModernVersion, compiler()}, 1);
}

// Every family shows from the start, not from its first use.
[[maybe_unused]] const bool g_registered =
    (operation_duration(), tool_calls(), tasks(), gauges(), rate_limit_refusals(), http_answers(),
     register_build_info(), true);

// Error codes this server sends; a client's own (an answer to our request) may be any number,
// and a label must come from a bounded set.
std::string error_label(int code) {
    static constexpr std::array<int, 9> kKnown{error_code::parse_error,
                                               error_code::invalid_request,
                                               error_code::method_not_found,
                                               error_code::invalid_params,
                                               error_code::internal_error,
                                               error_code::header_mismatch,
                                               error_code::missing_client_capability,
                                               error_code::unsupported_protocol_version,
                                               error_code::resource_not_found_legacy};
    if (std::find(kKnown.begin(), kKnown.end(), code) == kKnown.end()) return "other";
    return std::to_string(code);
}

// A tool name as a log line may carry it before the tool is looked up: what names are made
// of, else nothing (a caller's text must not forge log lines).
std::string plain_name(const json& params) {
    auto it = params.find("name");
    if (it == params.end() || !it->is_string()) return {};
    const auto& name = it->get_ref<const std::string&>();
    if (name.empty() || name.size() > 128) return {};
    for (const char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
            return {};
    return name;
}

std::optional<base::TraceParent> incoming_trace(const json* meta, const Inbound& in) {
    if (meta) {
        auto it = meta->find("traceparent");
        if (it != meta->end() && it->is_string())
            if (auto parsed = base::parse_traceparent(it->get_ref<const std::string&>()))
                return parsed;
    }
    if (!in.traceparent.empty()) return base::parse_traceparent(in.traceparent);
    return std::nullopt;
}

}  // namespace

RequestObserver::RequestObserver(const Incoming& message, const Inbound& in)
    : started_(std::chrono::steady_clock::now()), previous_(t_observer) {
    t_observer = this;
    auto method = message.message.find("method");  // find() is safe on any JSON value
    if (method == message.message.end() || !method->is_string()) return;
    const std::string& name = message.method;
    request_ = !message.id.is_null();
    method_ = message.entry ? name : "other";
    const json* params = nullptr;
    const json* meta = nullptr;
    if (auto p = message.message.find("params"); p != message.message.end() && p->is_object()) {
        params = &*p;
        if (auto m = p->find("_meta"); m != p->end() && m->is_object()) meta = &*m;
    }
    // As Server::resolve_era decides it, without its checks (a refused request counts too).
    era_ = in.era ? *in.era
                  : (name != "initialize" && meta && meta->contains(kMetaVersion) ? Era::modern
                                                                                  : Era::legacy);
    auto trace = std::make_shared<base::CallTrace>();
    const auto incoming = incoming_trace(meta, in);
    trace->trace = incoming ? base::child_span(*incoming) : base::start_trace();
    trace->method = method_;
    if (name == "tools/call" && params) trace->tool = plain_name(*params);
    trace->principal = in.principal.name;
    scope_.emplace(std::move(trace));
}

RequestObserver::~RequestObserver() {
    t_observer = previous_;
    if (!request_) return;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    operation_duration().observe({method_, tool_, error_type_}, seconds);
    if (method_ == "tools/call")
        tool_calls().add({tool_, outcome_, era_ == Era::modern ? "modern" : "legacy"});
}

void RequestObserver::rpc_error(int code) {
    // A refusal by the rate limit is the caller's pace, not a failure: named as such.
    const bool limited = code == error_code::rate_limited;
    outcome_ = limited ? "rate_limited" : "rpc_error";
    error_type_ = limited ? "rate_limited" : error_label(code);
}

void RequestObserver::rate_limited(std::string_view method, std::string_view target) {
    rate_limit_refusals().add({method, target});
    if (t_observer && method == "tools/call") t_observer->tool_.assign(target);
}

void RequestObserver::tool_found(std::string_view tool) {
    if (t_observer) t_observer->tool_.assign(tool);
}

void RequestObserver::tool_outcome(std::string_view outcome) {
    if (!t_observer) return;
    t_observer->outcome_.assign(outcome);
    // The conventions' error.type for a result with isError.
    if (outcome == "tool_error") t_observer->error_type_ = "tool_error";
}

std::shared_ptr<const base::CallTrace> trace_for_work(std::string_view tool,
                                                      const std::string& principal) {
    if (auto current = base::shared_call_trace()) return current;
    auto trace = std::make_shared<base::CallTrace>();
    trace->trace = base::start_trace();
    trace->method = "tools/call";
    trace->tool = std::string(tool);
    trace->principal = principal;
    return trace;
}

void count_task_status(TaskStatus status) { tasks().add({to_string(status)}); }

void count_task_running(int delta) { gauges().add({"tasks"}, delta); }

void count_stream(int delta) { gauges().add({"streams"}, delta); }

HttpAnswerCounter::HttpAnswerCounter(std::vector<std::string> routes)
    : routes_(std::move(routes)) {}

void HttpAnswerCounter::operator()(std::string_view method, std::string_view path,
                                   int status) const {
    static constexpr std::array<std::string_view, 9> kMethods{
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    const bool known_method = std::find(kMethods.begin(), kMethods.end(), method) != kMethods.end();
    const bool known_route = std::find(routes_.begin(), routes_.end(), path) != routes_.end();
    http_answers().add({known_method ? method : "other", known_route ? path : "other",
                        metrics::http_status_label(status)});
}

SessionGauge::SessionGauge(const Server& server)
    : hook_(metrics::add_render_hook([&server] {
          gauges().set({"sessions"}, static_cast<double>(server.session_count()));
      })) {}

SessionGauge::~SessionGauge() { metrics::remove_render_hook(hook_); }

}  // namespace agency::mcp
