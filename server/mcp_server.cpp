#include "server/mcp_server.hpp"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <future>
#include <limits>
#include <set>
#include <unordered_map>

#include "base/log.hpp"

#include "base/crypto.hpp"
#include "server/server_impl.hpp"
#include "server/telemetry.hpp"

namespace agency::mcp {

namespace {

const json& params_of(const json& message) {
    static const json empty = json::object();
    auto it = message.find("params");
    return it != message.end() && it->is_object() ? *it : empty;
}

std::string id_key(const std::shared_ptr<Session>& session, const json& id) {
    return (session ? session->id : std::string()) + "\x1f" + id.dump();
}

}  // namespace

int log_level_index(std::string_view level) {
    for (std::size_t i = 0; i < kLogLevels.size(); ++i)
        if (kLogLevels[i] == level) return static_cast<int>(i);
    return -1;
}

json supported_versions() {
    json out = json::array({kModernVersion});
    for (auto v : kLegacyVersions) out.push_back(v);
    return out;
}

std::string require_string(const json& params, const char* field) {
    auto it = params.find(field);
    if (it == params.end() || !it->is_string())
        throw RpcError(error_code::invalid_params,
                       std::string("params.") + field + " is required and must be a string");
    return it->get<std::string>();
}

bool is_legacy_version(std::string_view version) {
    return std::find(kLegacyVersions.begin(), kLegacyVersions.end(), version) !=
           kLegacyVersions.end();
}

bool is_supported_version(std::string_view version) {
    return version == kModernVersion || is_legacy_version(version);
}

bool Principal::has_scope(std::string_view scope) const {
    return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
}

ToolResult ToolResult::text(std::string text, bool is_error) {
    ToolResult r;
    r.content.push_back({{"type", "text"}, {"text", std::move(text)}});
    r.is_error = is_error;
    return r;
}

ToolResult ToolResult::structured(std::string json_text) {
    ToolResult r;
    r.structured_text = std::move(json_text);
    return r;
}

// ---------------------------------------------------------------------------------------------

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    if (impl_->options.clock) impl_->clock = impl_->options.clock;
    impl_->server_info_meta = {{"name", impl_->options.info.name},
                               {"version", impl_->options.info.version}};
    // One secret for both sealers: a random one (tokens then end with the process) when unset.
    const std::string secret = impl_->options.state_secret.empty() ? crypto::random_bytes(32)
                                                                   : impl_->options.state_secret;
    impl_->state_sealer.emplace(secret, "request-state", *impl_->clock);
    impl_->spent_states.emplace(*impl_->clock);
    impl_->tasks_cursor_sealer.emplace(secret, "tasks-cursor", *impl_->clock);
    impl_->rate_limiter.emplace(impl_->options.rate_limit, *impl_->clock);
    impl_->refusals.emplace(*impl_->clock);
    impl_->task_store = impl_->options.task_store ? impl_->options.task_store
                                                  : std::make_shared<MemoryTaskStore>();
    impl_->instance_id = impl_->options.instance_id.empty() ? "i_" + crypto::random_hex(8)
                                                            : impl_->options.instance_id;
}

Server::~Server() {
    for (auto& stop : impl_->shutdown_hooks) stop();
    // Nothing from other instances reaches the tasks from here on; this instance's leases
    // run out and another instance takes its unfinished tasks over.
    if (impl_->task_keeper.joinable()) {
        impl_->task_store->watch_task_cancellations({});
        impl_->task_keeper.request_stop();
        impl_->task_keeper.join();
    }
    // Running tasks stop with the server; a durable store keeps them for resume_tasks().
    std::vector<std::pair<std::shared_ptr<LiveTask>, std::jthread>> threads;
    {
        std::lock_guard lock(impl_->mutex);
        threads.swap(impl_->task_threads);
    }
    for (auto& [task, thread] : threads) {
        task->shutting_down = true;
        task->stop.request_stop();
    }
    threads.clear();  // joins
}

const ServerOptions& Server::options() const { return impl_->options; }

void Server::add_tool(ToolDef tool) {
    auto& headers = impl_->header_params[tool.name];
    headers.clear();
    if (auto props = tool.input().find("properties");
        props != tool.input().end() && props->is_object())
        for (const auto& [prop, schema] : props->items())
            if (schema.is_object() && schema.contains("x-mcp-header") &&
                schema["x-mcp-header"].is_string())
                headers.emplace_back(prop, schema["x-mcp-header"].get<std::string>());
    auto it = impl_->tool_index.find(tool.name);
    if (it != impl_->tool_index.end()) {
        impl_->tools[it->second] = std::move(tool);
        return;
    }
    impl_->tool_index.emplace(tool.name, impl_->tools.size());
    impl_->tools.push_back(std::move(tool));
}
void Server::add_resource(ResourceDef r) { impl_->resources.push_back(std::move(r)); }
void Server::add_resource_template(ResourceTemplateDef t) {
    impl_->templates.push_back(std::move(t));
}
void Server::add_prompt(PromptDef p) { impl_->prompts.push_back(std::move(p)); }
void Server::set_resource_lister(std::function<json(RequestContext&)> lister,
                                 std::function<int()> cost) {
    impl_->resource_lister = std::move(lister);
    impl_->resource_lister_cost = std::move(cost);
}
void Server::set_completion(std::function<json(const json&, const json&, const json&)> h,
                            CompletionCost cost) {
    impl_->completion = std::move(h);
    impl_->completion_cost = std::move(cost);
}
void Server::set_tool_filter(std::function<bool(const ToolDef&)> visible) {
    impl_->tool_filter = std::move(visible);
}

void Server::set_tool_list_filter(std::function<bool(const ToolDef&)> listed) {
    impl_->tool_list_filter = std::move(listed);
}

void Server::cancel_calls() {
    std::lock_guard lock(impl_->mutex);
    for (auto& [key, stop] : impl_->in_flight) stop->request_stop();
}

void Server::on_shutdown(std::function<void()> stop) {
    impl_->shutdown_hooks.push_back(std::move(stop));
}

void Server::notify_tools_changed() {
    std::string message = R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})";
    std::vector<std::shared_ptr<Session>> targets;
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& [id, s] : impl_->sessions) targets.push_back(s);
    }
    for (auto& s : targets)
        if (s->notify && s->initialized) s->notify(message);
}

void Server::notify_resource_updated(const std::string& uri, std::string_view principal) {
    const std::string message = dump({{"jsonrpc", "2.0"},
                                      {"method", "notifications/resources/updated"},
                                      {"params", {{"uri", uri}}}});
    std::vector<std::shared_ptr<Session>> targets;
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& [id, s] : impl_->sessions) targets.push_back(s);
    }
    for (auto& s : targets) {
        if (!s->notify || !s->initialized) continue;
        if (!principal.empty() && s->principal.name != principal) continue;
        bool subscribed = false;
        {
            std::lock_guard lock(s->mutex);
            subscribed = std::find(s->subscriptions.begin(), s->subscriptions.end(), uri) !=
                         s->subscriptions.end();
        }
        if (subscribed) s->notify(message);
    }
}

std::shared_ptr<Session> Server::create_session(std::string id) {
    auto s = std::make_shared<Session>();
    s->id = std::move(id);
    s->last_used_ms = impl_->now_ms();
    s->last_used_seq = ++impl_->session_uses;
    return s;
}

void Server::register_session(const std::shared_ptr<Session>& session) {
    std::lock_guard lock(impl_->mutex);
    impl_->sessions[session->id] = session;
}

void Server::forget_session(const std::string& id) {
    std::lock_guard lock(impl_->mutex);
    impl_->sessions.erase(id);
}

const std::vector<std::pair<std::string, std::string>>& Server::header_params(
    const std::string& tool) const {
    static const std::vector<std::pair<std::string, std::string>> none;
    auto it = impl_->header_params.find(tool);
    return it == impl_->header_params.end() ? none : it->second;
}

std::shared_ptr<Session> Server::find_session(const std::string& id) const {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->sessions.find(id);
    return it == impl_->sessions.end() ? nullptr : it->second;
}

std::size_t Server::session_count() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->sessions.size();
}

std::size_t Server::expire_sessions(std::chrono::milliseconds idle) {
    std::lock_guard lock(impl_->mutex);
    std::int64_t cutoff = impl_->now_ms() - idle.count();
    return std::erase_if(impl_->sessions, [&](const auto& entry) {
        return !entry.first.empty() && entry.second->last_used_ms < cutoff;
    });
}

std::vector<const ToolDef*> Server::visible_tools(const Principal& principal) const {
    std::vector<const ToolDef*> out;
    out.reserve(impl_->tools.size());
    for (const auto& tool : impl_->tools) {
        if (!impl_->tool_visible(tool) || !tool_selected(tool, principal)) continue;
        if (impl_->tool_list_filter && !impl_->tool_list_filter(tool)) continue;
        bool allowed = std::all_of(tool.required_scopes.begin(), tool.required_scopes.end(),
                                   [&](const std::string& s) { return principal.has_scope(s); });
        if (allowed || principal.may_step_up) out.push_back(&tool);
    }
    return out;
}

json Server::capabilities(Era era) const {
    // Modern clients get change notices only through subscriptions/listen, which this server
    // does not offer yet, so the modern era advertises no listChanged/subscribe. The resource
    // and prompt lists do not change while the server runs (clients' overviews follow the
    // gateway's clients, which nothing announces); initialize drops `subscribe` for a session
    // without a notification path.
    const bool legacy = era == Era::legacy;
    json caps = json::object();
    caps["tools"] = legacy ? json{{"listChanged", true}} : json::object();
    caps["resources"] = legacy ? json{{"subscribe", true}} : json::object();
    caps["prompts"] = json::object();
    caps["completions"] = json::object();
    caps["logging"] = json::object();
    if (legacy)
        caps["tasks"] = {{"list", json::object()},
                         {"cancel", json::object()},
                         {"requests", {{"tools", {{"call", json::object()}}}}}};
    else
        caps["extensions"] = {{std::string(kTasksExtension), json::object()}};
    return caps;
}

bool Server::may_stream(const json& message, const Session* session) const {
    auto method = message.find("method");
    if (method == message.end() || !method->is_string()) return false;
    const MethodEntry* entry = find_method(method->get_ref<const std::string&>());
    if (!entry || entry->talks_back == TalksBack::never) return false;
    if (entry->talks_back == TalksBack::always) return true;
    const json& params = params_of(message);
    if (auto meta = params.find("_meta"); meta != params.end() && meta->is_object() &&
                                          meta->contains("progressToken"))
        return true;
    auto name = params.find("name");
    if (name == params.end() || !name->is_string()) return false;
    auto it = impl_->tool_index.find(name->get_ref<const std::string&>());
    if (it == impl_->tool_index.end() || !impl_->tools[it->second].interactive) return false;
    // A legacy client that declared none of the capabilities a tool asks through cannot be
    // asked anything mid-call (progress needs a progressToken, seen above): its calls answer
    // as plain JSON on the connection's thread, without a stream or a hand-off to a worker.
    if (session) {
        const json& caps = session->client_capabilities;
        return caps.is_object() && (caps.contains("elicitation") || caps.contains("sampling") ||
                                    caps.contains("roots"));
    }
    return true;
}

// --- RequestContext -------------------------------------------------------------------------

void RequestContext::notify(std::string_view method, json params) const {
    if (!channel_) return;
    json message = {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
    channel_->send(dump(message));
}

void RequestContext::progress(double value, std::optional<double> total,
                              std::string_view message) const {
    if (task_) {
        std::string text = message.empty() ? std::to_string(static_cast<long long>(value)) : std::string(message);
        if (total && message.empty()) text += "/" + std::to_string(static_cast<long long>(*total));
        task_progress(*task_, std::move(text));
    }
    if (progress_token.is_null()) return;
    json params = {{"progressToken", progress_token}, {"progress", value}};
    if (total) params["total"] = *total;
    if (!message.empty()) params["message"] = message;
    notify("notifications/progress", std::move(params));
}

void RequestContext::log(std::string_view level, json data, std::string_view logger) const {
    int wanted = log_level_index(level);
    int threshold = -1;
    if (era == Era::legacy) {
        threshold = session ? session->log_level.load() : 1;
    } else if (auto it = meta.find(kMetaLogLevel); it != meta.end() && it->is_string()) {
        threshold = log_level_index(it->get_ref<const std::string&>());
    }
    if (threshold < 0 || wanted < threshold) return;
    notify("notifications/message",
           {{"level", level}, {"logger", logger}, {"data", std::move(data)}});
}

// --- dispatch -------------------------------------------------------------------------------

std::optional<std::string> Server::handle(std::string_view text, const Inbound& in) {
    ParsedMessage parsed = parse_message(text, impl_->options.json_limits);
    if (!parsed.error.empty()) return std::move(parsed.error);
    return handle_message(parsed.message, in);
}

// Whatever a message holds, it is answered (or dropped, for a notification or a response) and
// the server keeps serving: nothing thrown here may reach a transport's thread. This is the one
// place where what a handler throws becomes a JSON-RPC error.
std::optional<std::string> Server::handle_message(const json& message, const Inbound& in) {
    json id = nullptr;
    std::string method;
    if (message.is_object()) {
        if (auto it = message.find("id"); it != message.end()) id = *it;
        if (auto it = message.find("method"); it != message.end() && it->is_string())
            method = it->get<std::string>();
    }
    // A notification or a response gets no answer, even when handling it failed.
    const bool answered = !message.is_object() || (!id.is_null() && message.contains("method"));
    // Its trace for the thread (log lines, gateway requests) and its metrics.
    RequestObserver observed(message, in);
    auto error = [&](int code, const std::string& text, json data) -> std::optional<std::string> {
        observed.rpc_error(code);
        if (!answered) return std::nullopt;
        return make_error_text(id, code, text, std::move(data));
    };
    try {
        return dispatch_message(message, in);
    } catch (const RpcError& e) {
        return error(e.code(), e.what(), e.data());
    } catch (const json::type_error& e) {
        // A value of the wrong type in the params that a handler read without checking.
        impl_->refusals->write(log::Level::info, "params of the wrong type", in.principal.name,
                               "{}: params of the wrong type from {}: {}", method,
                               in.principal.name, e.what());
        std::string what = e.what();
        if (auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
        return error(error_code::invalid_params,
                     "invalid params: a value has the wrong type (" + what + ")", json());
    } catch (const std::exception& e) {
        // Internals stay in the server's log; the caller gets a generic message.
        log::error("internal error handling {}: {}", method, e.what());
    } catch (...) {
        log::error("internal error handling {}", method);
    }
    return error(error_code::internal_error, "internal error", json());
}

RpcError client_error(const json& error) {
    if (!error.is_object())
        return RpcError(error_code::internal_error,
                        "the client answered with a malformed error (not an object)");
    auto code = error.find("code");
    auto message = error.find("message");
    auto data = error.find("data");
    return RpcError(code != error.end() && code->is_number_integer() &&
                            code->get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                            code->get<std::int64_t>() <= std::numeric_limits<int>::max()
                        ? static_cast<int>(code->get<std::int64_t>())
                        : error_code::internal_error,
                    "the client answered with an error: " +
                        (message != error.end() && message->is_string()
                             ? message->get<std::string>().substr(0, 512)
                             : std::string("(no message)")),
                    data != error.end() ? *data : json());
}

void Server::Impl::deliver_response(const json& message, const json& id, const Inbound& in) {
    std::shared_ptr<PendingRequest> request;
    if (id.is_string()) {
        std::lock_guard lock(mutex);
        auto it = pending.find(id.get<std::string>());
        std::string sid = in.session ? in.session->id : std::string();
        // Only the session that was asked may answer.
        if (it != pending.end() && it->second->session_id == sid) {
            request = it->second;
            pending.erase(it);
        }
    }
    if (!request) return;
    if (auto err = message.find("error"); err != message.end())
        request->promise.set_value({.result = nullptr, .error = *err});
    else
        request->promise.set_value({.result = message["result"], .error = std::nullopt});
}

void Server::Impl::handle_notification(const std::string& method, const json& params,
                                       const Inbound& in) {
    // Notifications are never answered: what fails here is only logged.
    try {
        if (method == "notifications/initialized") {
            if (in.session) in.session->initialized = true;
        } else if (method == "notifications/cancelled") {
            auto rid = params.find("requestId");
            if (rid != params.end()) {
                std::lock_guard lock(mutex);
                auto it = in_flight.find(id_key(in.session, *rid));
                if (it != in_flight.end()) it->second->request_stop();
            }
        }
    } catch (const std::exception& e) {
        log::debug("ignored notification {}: {}", method, e.what());
    }
}

std::optional<std::string> Server::dispatch_message(const json& message, const Inbound& in) {
    if (message.is_array())
        return make_error_text(nullptr, error_code::invalid_request,
                               "batch requests are not supported: send one message at a time");
    MessageKind kind = classify(message);
    json id = message.is_object() ? message.value("id", json()) : json();
    if (kind == MessageKind::invalid) {
        return make_error_text(id, error_code::invalid_request,
                               "invalid request: expected a JSON-RPC 2.0 object with \"jsonrpc\":"
                               "\"2.0\", a string \"method\", an object \"params\" and a string "
                               "or integer \"id\"");
    }
    if (kind == MessageKind::response) {
        impl_->deliver_response(message, id, in);
        return std::nullopt;
    }
    const std::string& method = message["method"].get_ref<const std::string&>();
    const json& params = params_of(message);
    if (kind == MessageKind::request) begin_work_unless_probe(*this, method);
    if (kind == MessageKind::notification) {
        impl_->handle_notification(method, params, in);
        return std::nullopt;
    }

    RequestContext ctx;
    ctx.server_ = this;
    ctx.channel_ = in.channel;
    ctx.request_id = id;
    ctx.principal = in.principal;
    // notifications/cancelled finds the request's stop source by (session, id) while it runs.
    auto stop = std::make_shared<std::stop_source>();
    ctx.stop = stop->get_token();
    std::optional<std::stop_callback<std::function<void()>>> forward;
    if (in.stop.stop_possible())
        forward.emplace(in.stop, std::function<void()>([stop] { stop->request_stop(); }));
    std::string key = id_key(in.session, id);
    {
        std::lock_guard lock(impl_->mutex);
        impl_->in_flight[key] = stop;
    }
    struct Unregister {
        Impl* impl;
        const std::string& key;
        ~Unregister() {
            std::lock_guard lock(impl->mutex);
            impl->in_flight.erase(key);
        }
    } unregister{impl_.get(), key};

    resolve_era(method, params, in, ctx);
    return dispatch_request(method, id, params, ctx, in);
}

namespace {

// Checks a modern request's _meta (version, capabilities, log level) and returns its
// client capabilities.
const json& check_modern_meta(const json* meta) {
    if (!meta || !meta->contains(kMetaVersion))
        throw RpcError(error_code::invalid_params,
                       "params._meta[\"io.modelcontextprotocol/protocolVersion\"] is "
                       "required (protocol 2026-07-28)");
    const json& version = (*meta)[std::string(kMetaVersion)];
    auto caps = meta->find(kMetaCapabilities);
    if (caps == meta->end() || !caps->is_object())
        throw RpcError(error_code::invalid_params,
                       "params._meta[\"io.modelcontextprotocol/clientCapabilities\"] is "
                       "required (use {} for none)");
    if (!version.is_string() || version != kModernVersion) {
        throw RpcError(error_code::unsupported_protocol_version,
                       "unsupported protocol version; supported: " + std::string(kModernVersion) +
                           " (per request), or 2025-11-25, 2025-06-18, 2025-03-26 via "
                           "initialize",
                       {{"supported", supported_versions()}, {"requested", version}});
    }
    if (auto lvl = meta->find(kMetaLogLevel);
        lvl != meta->end() &&
        (!lvl->is_string() || log_level_index(lvl->get_ref<const std::string&>()) < 0))
        throw RpcError(error_code::invalid_params,
                       "invalid log level; use one of debug, info, notice, warning, "
                       "error, critical, alert, emergency");
    return *caps;
}

}  // namespace

void Server::resolve_era(const std::string& method, const json& params, const Inbound& in,
                         RequestContext& ctx) {
    const json* meta = nullptr;
    if (auto it = params.find("_meta"); it != params.end() && it->is_object()) {
        meta = &*it;
        ctx.meta = *it;
        if (auto pt = it->find("progressToken"); pt != it->end()) ctx.progress_token = *pt;
    }
    const MethodEntry* entry = find_method(method);
    const bool opens_session = entry && entry->opens_session;
    // The transport's verdict wins; otherwise per-request _meta makes a request modern, except
    // the one that opens a legacy session.
    const bool modern =
        in.era ? *in.era == Era::modern : !opens_session && meta && meta->contains(kMetaVersion);
    if (modern) {
        ctx.client_capabilities = check_modern_meta(meta);
        ctx.era = Era::modern;
        ctx.protocol_version = std::string(kModernVersion);
    } else if (opens_session) {
        ctx.era = Era::legacy;
    } else if (in.session && !in.session->protocol_version.empty()) {
        ctx.era = Era::legacy;
        ctx.session = in.session;
        ctx.protocol_version = in.session->protocol_version;
        ctx.client_capabilities = in.session->client_capabilities;
        in.session->last_used_ms = impl_->now_ms();
        in.session->last_used_seq = ++impl_->session_uses;
    } else if (entry && entry->before_initialize) {
        ctx.era = Era::legacy;
    } else {
        throw RpcError(error_code::invalid_params,
                       "no protocol version for this request: call initialize first "
                       "(protocol 2025-11-25 and earlier), or send "
                       "params._meta[\"io.modelcontextprotocol/protocolVersion\"] and "
                       "[\"io.modelcontextprotocol/clientCapabilities\"] (2026-07-28)",
                       {{"supported", supported_versions()}});
    }
}

std::optional<std::string> Server::dispatch_request(const std::string& method, const json& id,
                                                    const json& params, RequestContext& ctx,
                                                    const Inbound& in) {
    const bool legacy = ctx.era == Era::legacy;
    const MethodEntry* entry = find_method(method);
    if (!entry || !(entry->eras & (legacy ? kLegacyEra : kModernEra))) {
        std::string_view note = entry && !entry->absent_note.empty() ? entry->absent_note
                                : legacy                             ? std::string_view()
                                         : " (not part of protocol 2026-07-28)";
        throw RpcError(error_code::method_not_found, "method not found: " + method +
                                                         std::string(note));
    }
    return entry->handler(*this, Request{method, id, params, ctx, in});
}

}  // namespace agency::mcp
