#include "server/mcp_server.hpp"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <future>
#include <limits>
#include <set>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "server/crypto.hpp"
#include "server/server_impl.hpp"
#include "server/work_queue.hpp"

namespace agency::mcp {

namespace {

constexpr std::array<std::string_view, 3> kLegacyVersions{"2025-11-25", "2025-06-18",
                                                          "2025-03-26"};
constexpr std::array<std::string_view, 8> kLogLevels{"debug", "info",     "notice", "warning",
                                                     "error", "critical", "alert",  "emergency"};
constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

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

const json& params_of(const json& message) {
    static const json empty = json::object();
    auto it = message.find("params");
    return it != message.end() && it->is_object() ? *it : empty;
}

std::string id_key(const std::shared_ptr<Session>& session, const json& id) {
    return (session ? session->id : std::string()) + "\x1f" + id.dump();
}

}  // namespace

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
    impl_->secret = impl_->options.state_secret.empty() ? crypto::random_bytes(32)
                                                        : impl_->options.state_secret;
    impl_->task_store = impl_->options.task_store ? impl_->options.task_store
                                                  : std::make_shared<MemoryTaskStore>();
}

Server::~Server() {
    for (auto& stop : impl_->shutdown_hooks) stop();
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
void Server::set_completion(std::function<json(const json&, const json&, const json&)> h) {
    impl_->completion = std::move(h);
}
void Server::set_tool_filter(std::function<bool(const ToolDef&)> visible) {
    impl_->tool_filter = std::move(visible);
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

std::shared_ptr<Session> Server::create_session(std::string id) {
    auto s = std::make_shared<Session>();
    s->id = std::move(id);
    s->last_used_ms = now_ms();
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
    std::int64_t cutoff = now_ms() - idle.count();
    return std::erase_if(impl_->sessions, [&](const auto& entry) {
        return !entry.first.empty() && entry.second->last_used_ms < cutoff;
    });
}

std::vector<const ToolDef*> Server::visible_tools(const Principal& principal) const {
    std::vector<const ToolDef*> out;
    out.reserve(impl_->tools.size());
    for (const auto& tool : impl_->tools) {
        if (!impl_->tool_visible(tool)) continue;
        bool allowed = std::all_of(tool.required_scopes.begin(), tool.required_scopes.end(),
                                   [&](const std::string& s) { return principal.has_scope(s); });
        if (allowed) out.push_back(&tool);
    }
    return out;
}

json Server::capabilities(Era era) const {
    // Modern clients get change notices only through subscriptions/listen, which this server
    // does not offer yet, so the modern era advertises no listChanged/subscribe.
    const bool legacy = era == Era::legacy;
    json caps = json::object();
    caps["tools"] = legacy ? json{{"listChanged", true}} : json::object();
    caps["resources"] = legacy ? json{{"subscribe", true}, {"listChanged", true}} : json::object();
    caps["prompts"] = legacy ? json{{"listChanged", true}} : json::object();
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
    if (*method == "tasks/result") return true;  // relays the task's requests and progress
    if (*method != "tools/call") return false;
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

bool RequestContext::client_supports(std::string_view capability) const {
    return client_capabilities.is_object() &&
           client_capabilities.contains(std::string(capability));
}

namespace {

// Whether `answer` has the shape of a result of `method`; malformed answers count as missing.
bool answer_fits(const std::string& method, const json& answer) {
    if (!answer.is_object()) return false;
    if (method == "elicitation/create")
        return answer.contains("action") && answer["action"].is_string();
    if (method == "sampling/createMessage") return answer.contains("content");
    if (method == "roots/list") return answer.contains("roots") && answer["roots"].is_array();
    return true;
}

}  // namespace

json RequestContext::ask(const std::string& key, const std::string& method, const json& params,
                         bool sealed_only) const {
    json questions = json::object();
    questions[key] = {{"method", method}, {"params", params}};
    return ask_all(questions, sealed_only)[key];
}

json RequestContext::ask_all(const json& questions, bool sealed_only) const {
    json answers = json::object();
    if (task_) {
        // A task asks while it runs. Answers gathered before the task was created (modern
        // rounds of before_task) still count.
        json missing = json::object();
        for (const auto& [key, q] : questions.items()) {
            auto it = input_responses_.find(key);
            if (it != input_responses_.end() && answer_fits(q.value("method", ""), *it))
                answers[key] = *it;
            else
                missing[key] = q;
        }
        if (missing.empty()) return answers;
        if (era == Era::modern) {
            json got = task_wait_for_answers(*task_, missing, server_->options().ask_timeout,
                                             answer_fits);
            for (const auto& [key, a] : got.items()) answers[key] = a;
            return answers;
        }
        task_set_status(*task_, TaskStatus::input_required, "waiting for the client's answer",
                        nullptr);
        for (const auto& [key, q] : missing.items()) {
            json params = q.value("params", json::object());
            params["_meta"][std::string(kRelatedTaskMeta)] = {{"taskId", task_id()}};
            answers[key] = server_->send_request_and_wait(*this, q.value("method", ""), params);
        }
        task_set_status(*task_, TaskStatus::working, "", nullptr);
        return answers;
    }
    if (era == Era::modern) {
        json missing = json::object();
        for (const auto& [key, q] : questions.items()) {
            auto it = input_responses_.find(key);
            bool asked = std::find(asked_.begin(), asked_.end(), key) != asked_.end();
            if (it != input_responses_.end() && (asked || !sealed_only) &&
                answer_fits(q.value("method", ""), *it))
                answers[key] = *it;
            else
                missing[key] = q;
        }
        if (!missing.empty()) throw InputRequired{std::move(missing)};
        return answers;
    }
    if (!server_) throw std::runtime_error("no server for this request");
    for (const auto& [key, q] : questions.items()) {
        const std::string method = q.value("method", "");
        json answer = server_->send_request_and_wait(*this, method, q.value("params", json::object()));
        // Checked as a modern inputResponses entry is: the tool reads only well-formed answers.
        if (!answer_fits(method, answer))
            throw RpcError(error_code::invalid_params,
                           "the client's answer to " + method + " is malformed (" +
                               (method == "elicitation/create"
                                    ? std::string("expected an object with a string \"action\"")
                                    : std::string("not the result this method returns")) +
                               "); nothing was done");
        answers[key] = std::move(answer);
    }
    return answers;
}

json Server::send_request_and_wait(const RequestContext& ctx, const std::string& method,
                                   const json& params) {
    if (!ctx.channel_ || !ctx.channel_->can_send_requests())
        throw RpcError(error_code::internal_error,
                       "this transport cannot carry a request to the client");
    struct Waiting {
        std::atomic<std::size_t>& count;
        ~Waiting() { --count; }
    } waiting{impl_->waiting_on_clients};
    if (++waiting.count > impl_->options.max_waiting_on_clients)
        throw RpcError(error_code::internal_error,
                       "too many calls are waiting for clients' answers; try again later");
    auto pending = std::make_shared<PendingRequest>();
    pending->session_id = ctx.session ? ctx.session->id : std::string();
    std::string id = "agency-" + std::to_string(impl_->next_request_id++);
    auto future = pending->promise.get_future();
    {
        std::lock_guard lock(impl_->mutex);
        impl_->pending[id] = pending;
    }
    struct Cleanup {
        Impl* impl;
        std::string id;
        ~Cleanup() {
            std::lock_guard lock(impl->mutex);
            impl->pending.erase(id);
        }
    } cleanup{impl_.get(), id};
    ctx.channel_->send(
        dump({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}));
    auto deadline = std::chrono::steady_clock::now() + impl_->options.ask_timeout;
    // The wait may be long: meanwhile the worker's queue runs another call in its place.
    WorkQueue::Waiting outside;
    while (future.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
        if (ctx.stop.stop_requested()) throw RpcError(error_code::internal_error, "cancelled");
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the client did not answer " + method + " in time");
    }
    return future.get();
}

// --- dispatch -------------------------------------------------------------------------------

namespace {

void add_modern_result_fields(json& result, const ServerInfo& info) {
    result["resultType"] = "complete";
    result["_meta"][std::string(kMetaServerInfo)] = {{"name", info.name},
                                                     {"version", info.version}};
}

std::string require_string(const json& params, const char* field) {
    auto it = params.find(field);
    if (it == params.end() || !it->is_string())
        throw RpcError(error_code::invalid_params,
                       std::string("params.") + field + " is required and must be a string");
    return it->get<std::string>();
}

}  // namespace

std::optional<std::string> Server::handle(std::string_view text, const Inbound& in) {
    ParsedMessage parsed = parse_message(text, impl_->options.json_limits);
    if (!parsed.error.empty()) return std::move(parsed.error);
    return handle_message(parsed.message, in);
}

// Whatever a message holds, it is answered (or dropped, for a notification or a response) and
// the server keeps serving: nothing thrown here may reach a transport's thread.
std::optional<std::string> Server::handle_message(const json& message, const Inbound& in) {
    try {
        return dispatch_message(message, in);
    } catch (const std::exception& e) {
        spdlog::error("internal error handling a message: {}", e.what());
    } catch (...) {
        spdlog::error("internal error handling a message");
    }
    json id = nullptr;
    if (message.is_object()) {
        if (auto it = message.find("id"); it != message.end()) id = *it;
        // A notification or a response gets no answer, even when handling it failed.
        if (id.is_null() || !message.contains("method")) return std::nullopt;
    }
    return make_error_text(id, error_code::internal_error, "internal error");
}

namespace {

// The error a client sent in answer to one of the server's requests, whatever its shape.
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

}  // namespace

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
        std::shared_ptr<PendingRequest> pending;
        if (id.is_string()) {
            std::lock_guard lock(impl_->mutex);
            auto it = impl_->pending.find(id.get<std::string>());
            std::string sid = in.session ? in.session->id : std::string();
            if (it != impl_->pending.end() && it->second->session_id == sid) {
                pending = it->second;
                impl_->pending.erase(it);
            }
        }
        if (pending) {
            if (auto err = message.find("error"); err != message.end()) {
                pending->promise.set_exception(std::make_exception_ptr(client_error(*err)));
            } else {
                pending->promise.set_value(message["result"]);
            }
        }
        return std::nullopt;
    }
    const std::string& method = message["method"].get_ref<const std::string&>();
    const json& params = params_of(message);
    if (kind == MessageKind::notification) {
        try {
            if (method == "notifications/initialized") {
                if (in.session) in.session->initialized = true;
            } else if (method == "notifications/cancelled") {
                auto rid = params.find("requestId");
                if (rid != params.end()) {
                    std::lock_guard lock(impl_->mutex);
                    auto it = impl_->in_flight.find(id_key(in.session, *rid));
                    if (it != impl_->in_flight.end()) it->second->request_stop();
                }
            }
        } catch (const std::exception& e) {
            spdlog::debug("ignored notification {}: {}", method, e.what());
        }
        return std::nullopt;  // notifications are never answered
    }

    RequestContext ctx;
    ctx.server_ = this;
    ctx.channel_ = in.channel;
    ctx.request_id = id;
    ctx.principal = in.principal;
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

    try {
        // Era: initialize or an initialized session is legacy; per-request _meta is modern.
        const json* meta = nullptr;
        if (auto it = params.find("_meta"); it != params.end() && it->is_object()) {
            meta = &*it;
            ctx.meta = *it;
            if (auto pt = it->find("progressToken"); pt != it->end()) ctx.progress_token = *pt;
        }
        bool modern = in.era ? *in.era == Era::modern
                             : method != "initialize" && meta && meta->contains(kMetaVersion);
        if (modern) {
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
                               "unsupported protocol version; supported: " +
                                   std::string(kModernVersion) +
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
            ctx.era = Era::modern;
            ctx.protocol_version = std::string(kModernVersion);
            ctx.client_capabilities = *caps;
        } else if (method == "initialize") {
            ctx.era = Era::legacy;
        } else if (in.session && !in.session->protocol_version.empty()) {
            ctx.era = Era::legacy;
            ctx.session = in.session;
            ctx.protocol_version = in.session->protocol_version;
            ctx.client_capabilities = in.session->client_capabilities;
            in.session->last_used_ms = now_ms();
        } else if (method == "ping") {
            ctx.era = Era::legacy;  // ping is allowed before initialization
        } else {
            throw RpcError(error_code::invalid_params,
                           "no protocol version for this request: call initialize first "
                           "(protocol 2025-11-25 and earlier), or send "
                           "params._meta[\"io.modelcontextprotocol/protocolVersion\"] and "
                           "[\"io.modelcontextprotocol/clientCapabilities\"] (2026-07-28)",
                           {{"supported", supported_versions()}});
        }

        json result;
        const bool legacy = ctx.era == Era::legacy;
        const auto& info = impl_->options.info;

        auto list_result = [&](json r) {
            if (!legacy) {
                r["ttlMs"] = impl_->options.list_ttl_ms;
                r["cacheScope"] = "private";
            }
            return r;
        };

        if (method == "initialize" && legacy) {
            if (!in.session) throw RpcError(error_code::internal_error, "no session");
            if (!in.session->protocol_version.empty())
                throw RpcError(error_code::invalid_request, "this session is already initialized");
            std::string requested = require_string(params, "protocolVersion");
            in.session->protocol_version =
                is_legacy_version(requested) ? requested : std::string(kLatestLegacyVersion);
            if (auto caps = params.find("capabilities"); caps != params.end() && caps->is_object())
                in.session->client_capabilities = *caps;
            if (auto ci = params.find("clientInfo"); ci != params.end() && ci->is_object())
                in.session->client_info = *ci;
            in.session->principal = in.principal;
            in.session->last_used_ms = now_ms();
            result = {{"protocolVersion", in.session->protocol_version},
                      {"capabilities", capabilities(Era::legacy)},
                      {"serverInfo",
                       {{"name", info.name}, {"title", info.title}, {"version", info.version}}}};
            if (!info.instructions.empty()) result["instructions"] = info.instructions;
        } else if (method == "ping" && legacy) {
            result = json::object();
        } else if (method == "server/discover" && !legacy) {
            result = {{"supportedVersions", supported_versions()},
                      {"capabilities", capabilities(Era::modern)},
                      {"serverInfo",
                       {{"name", info.name}, {"title", info.title}, {"version", info.version}}}};
            if (!info.instructions.empty()) result["instructions"] = info.instructions;
            result = list_result(std::move(result));
        } else if (method == "logging/setLevel" && legacy) {
            std::string level = require_string(params, "level");
            int index = log_level_index(level);
            if (index < 0)
                throw RpcError(error_code::invalid_params,
                               "invalid log level \"" + level +
                                   "\"; use one of debug, info, notice, warning, error, "
                                   "critical, alert, emergency");
            if (ctx.session) ctx.session->log_level = index;
            result = json::object();
        } else if (method == "tools/list") {
            auto visible = visible_tools(ctx.principal);
            std::size_t offset = 0;
            if (auto c = params.find("cursor"); c != params.end() && !c->is_null()) {
                auto decoded = c->is_string() ? crypto::base64url_decode(c->get<std::string>())
                                              : std::nullopt;
                bool ok = decoded && decoded->rfind("tools:", 0) == 0;
                if (ok) {
                    try {
                        offset = std::stoul(decoded->substr(6));
                    } catch (const std::exception&) {
                        ok = false;
                    }
                }
                if (!ok || offset > visible.size())
                    throw RpcError(error_code::invalid_params,
                                   "invalid cursor: pass back the nextCursor of a previous "
                                   "tools/list, or omit it");
            }
            std::size_t page = std::max<std::size_t>(1, impl_->options.tools_page_size);
            json tools = json::array();
            for (std::size_t i = offset; i < visible.size() && i < offset + page; ++i) {
                const ToolDef& t = *visible[i];
                json entry = {{"name", t.name}};
                if (!t.title.empty()) entry["title"] = t.title;
                entry["description"] = t.description;
                entry["inputSchema"] = t.input();
                if (!t.output().is_null()) entry["outputSchema"] = t.output();
                if (!t.annotations.is_null()) entry["annotations"] = t.annotations;
                if (legacy && t.task_support != TaskSupport::forbidden)
                    entry["execution"] = {
                        {"taskSupport",
                         t.task_support == TaskSupport::required ? "required" : "optional"}};
                if (!t.icons.is_null()) entry["icons"] = t.icons;
                if (!t.meta.is_null()) entry["_meta"] = t.meta;
                tools.push_back(std::move(entry));
            }
            result = {{"tools", std::move(tools)}};
            if (offset + page < visible.size())
                result["nextCursor"] =
                    crypto::base64url_encode("tools:" + std::to_string(offset + page));
            result = list_result(std::move(result));
        } else if (method == "tools/call") {
            return call_tool(id, params, ctx);
        } else if (method.rfind("tasks/", 0) == 0) {
            return handle_task_method(method, id, params, ctx);
        } else if (method == "resources/list") {
            json list = json::array();
            for (const auto& r : impl_->resources) {
                json entry = {{"uri", r.uri}, {"name", r.name}};
                if (!r.title.empty()) entry["title"] = r.title;
                if (!r.description.empty()) entry["description"] = r.description;
                if (!r.mime_type.empty()) entry["mimeType"] = r.mime_type;
                list.push_back(std::move(entry));
            }
            result = list_result({{"resources", std::move(list)}});
        } else if (method == "resources/templates/list") {
            json list = json::array();
            for (const auto& t : impl_->templates) {
                json entry = {{"uriTemplate", t.uri_template}, {"name", t.name}};
                if (!t.description.empty()) entry["description"] = t.description;
                if (!t.mime_type.empty()) entry["mimeType"] = t.mime_type;
                list.push_back(std::move(entry));
            }
            result = list_result({{"resourceTemplates", std::move(list)}});
        } else if (method == "resources/read") {
            std::string uri = require_string(params, "uri");
            std::optional<json> contents;
            for (const auto& r : impl_->resources)
                if (r.uri == uri) contents = r.read(ctx);
            for (std::size_t i = 0; !contents && i < impl_->templates.size(); ++i)
                contents = impl_->templates[i].read(uri, ctx);
            if (!contents)
                throw RpcError(legacy ? error_code::resource_not_found_legacy
                                      : error_code::invalid_params,
                               "resource not found: " + uri, {{"uri", uri}});
            result = {{"contents", std::move(*contents)}};
            if (!legacy) {
                result["ttlMs"] = 0;  // tool data changes; don't let clients cache reads
                result["cacheScope"] = "private";
            }
        } else if ((method == "resources/subscribe" || method == "resources/unsubscribe") &&
                   legacy) {
            std::string uri = require_string(params, "uri");
            if (ctx.session) {
                std::lock_guard lock(ctx.session->mutex);
                auto& subs = ctx.session->subscriptions;
                subs.erase(std::remove(subs.begin(), subs.end(), uri), subs.end());
                if (method == "resources/subscribe") subs.push_back(uri);
            }
            result = json::object();
        } else if (method == "prompts/list") {
            json list = json::array();
            for (const auto& p : impl_->prompts) {
                json entry = {{"name", p.name}, {"description", p.description}};
                if (!p.title.empty()) entry["title"] = p.title;
                if (!p.arguments.empty()) entry["arguments"] = p.arguments;
                list.push_back(std::move(entry));
            }
            result = list_result({{"prompts", std::move(list)}});
        } else if (method == "prompts/get") {
            std::string name = require_string(params, "name");
            auto it = std::find_if(impl_->prompts.begin(), impl_->prompts.end(),
                                   [&](const PromptDef& p) { return p.name == name; });
            if (it == impl_->prompts.end())
                throw RpcError(error_code::invalid_params, "unknown prompt: " + name);
            json args = params.value("arguments", json::object());
            if (!args.is_object())
                throw RpcError(error_code::invalid_params, "params.arguments must be an object");
            for (const auto& a : it->arguments) {
                if (a.value("required", false) && !args.contains(a.value("name", "")))
                    throw RpcError(error_code::invalid_params,
                                   "missing required argument \"" + a.value("name", "") +
                                       "\" for prompt " + name);
            }
            std::string target = "prompt:" + name;
            if (!legacy) restore_round(target, args, params, ctx);
            try {
                result = it->get(args, ctx);
            } catch (const InputRequired& question) {
                if (legacy) throw RpcError(error_code::internal_error, "internal error");
                return input_required_text(id, target, args, ctx, question);
            }
        } else if (method == "completion/complete") {
            auto ref = params.find("ref");
            auto argument = params.find("argument");
            if (ref == params.end() || !ref->is_object() || argument == params.end() ||
                !argument->is_object())
                throw RpcError(error_code::invalid_params,
                               "params.ref and params.argument are required objects");
            json completion = {{"values", json::array()}};
            if (impl_->completion)
                completion = impl_->completion(*ref, *argument,
                                               params.value("context", json::object()));
            result = {{"completion", std::move(completion)}};
        } else {
            throw RpcError(error_code::method_not_found,
                           "method not found: " + method +
                               (legacy ? "" : " (not part of protocol 2026-07-28)"));
        }
        if (!legacy) add_modern_result_fields(result, info);
        json response = {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
        return dump(response);
    } catch (const RpcError& e) {
        return make_error_text(id, e.code(), e.what(), e.data());
    } catch (const json::type_error& e) {
        // A value of the wrong type in the params that a handler read without checking.
        spdlog::info("{}: params of the wrong type: {}", method, e.what());
        std::string what = e.what();
        if (auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
        return make_error_text(id, error_code::invalid_params,
                               "invalid params: a value has the wrong type (" + what + ")");
    } catch (const std::exception& e) {
        // Internals stay in the server's log; the caller gets a generic message.
        spdlog::error("internal error handling {}: {}", method, e.what());
        return make_error_text(id, error_code::internal_error, "internal error");
    }
}

std::optional<std::string> Server::call_tool(const json& id, const json& params,
                                             RequestContext& ctx) {
    std::string name = require_string(params, "name");
    auto found = impl_->tool_index.find(name);
    if (found == impl_->tool_index.end() || !impl_->tool_visible(impl_->tools[found->second]))
        throw RpcError(error_code::invalid_params,
                       "unknown tool: " + name + " (tools/list shows the available tools)");
    const ToolDef& tool = impl_->tools[found->second];
    json arguments = params.value("arguments", json::object());
    if (arguments.is_null()) arguments = json::object();
    if (!arguments.is_object())
        throw RpcError(error_code::invalid_params, "params.arguments must be an object");
    const bool modern = ctx.era == Era::modern;

    ToolResult result;
    bool done = false;
    for (const auto& scope : tool.required_scopes) {
        if (!ctx.principal.has_scope(scope)) {
            json reason = {{"error", {{"reason", "scope"},
                                      {"message", "the tool " + name + " needs the '" + scope +
                                                      "' scope, which this caller lacks"}}}};
            result = ToolResult::text(reason.dump(), true);
            done = true;
            break;
        }
    }

    if (!done && !tool.required_client_capabilities.is_null()) {
        for (const auto& [cap, value] : tool.required_client_capabilities.items()) {
            if (ctx.client_supports(cap)) continue;
            std::string why = "the tool " + name + " needs the client capability '" + cap + "'";
            if (modern)
                throw RpcError(error_code::missing_client_capability, why,
                               {{"requiredCapabilities", tool.required_client_capabilities}});
            result = ToolResult::text(why + ", which this client did not declare", true);
            done = true;
            break;
        }
    }
    if (!done) require_task_support_fits(tool, params, ctx);
    if (!done && modern) restore_round("tool:" + name, arguments, params, ctx);

    if (!done && wants_task(tool, params, ctx)) {
        try {
            if (tool.before_task) tool.before_task(arguments, ctx);
        } catch (const InputRequired& question) {
            if (!modern) throw RpcError(error_code::internal_error, "internal error");
            return input_required_text(id, "tool:" + name, arguments, ctx, question);
        }
        return start_task(tool, id, arguments, params, ctx);
    }

    if (!done) {
        try {
            result = tool.handler(arguments, ctx);
        } catch (const InputRequired& question) {
            if (!modern) throw RpcError(error_code::internal_error, "internal error");
            return input_required_text(id, "tool:" + name, arguments, ctx, question);
        } catch (const RpcError&) {
            throw;
        } catch (const std::exception& e) {
            spdlog::error("tool {} failed: {}", name, e.what());
            result = ToolResult::text("the tool " + name + " failed unexpectedly; see the server log",
                                      true);
        }
    }
    // A legacy request cancelled by notifications/cancelled gets no answer.
    if (!modern && ctx.stop.stop_requested() && ctx.session) return std::nullopt;

    // Reserved once: the answer carries the structured text twice (once escaped), and growing
    // a ~50 KB string on the way copies it.
    const bool text_copy = result.content.empty() && !result.structured_text.empty();
    const std::size_t text_size = text_copy ? json_string_size(result.structured_text) : 0;
    std::string out;
    out.reserve(text_size + result.structured_text.size() + 384);
    out += R"({"jsonrpc":"2.0","id":)";
    out += dump(id);
    out += R"(,"result":{)";
    if (modern) out += R"("resultType":"complete",)";
    append_tool_result_fields(out, result, text_size);
    json meta = result.meta.is_object() ? result.meta : json::object();
    if (modern)
        meta[std::string(kMetaServerInfo)] = {{"name", impl_->options.info.name},
                                              {"version", impl_->options.info.version}};
    if (!meta.empty()) {
        out += R"(,"_meta":)";
        out += dump(meta);
    }
    out += "}}";
    return out;
}

void append_tool_result_fields(std::string& out, const ToolResult& result,
                               std::size_t text_size) {
    out += R"("content":)";
    if (result.content.empty() && !result.structured_text.empty()) {
        out += R"([{"type":"text","text":)";
        if (text_size == 0) text_size = json_string_size(result.structured_text);
        append_json_string(out, result.structured_text, text_size);
        out += "}]";
    } else {
        out += dump(result.content);
    }
    if (!result.structured_text.empty()) {
        out += R"(,"structuredContent":)";
        out += result.structured_text;
    }
    out += result.is_error ? R"(,"isError":true)" : R"(,"isError":false)";
}

void Server::restore_round(const std::string& target, const json& arguments, const json& params,
                           RequestContext& ctx) {
    auto state = params.find("requestState");
    if (state != params.end() && !state->is_null()) {
        std::optional<json> payload =
            state->is_string() ? crypto::unseal(impl_->secret, state->get<std::string>())
                               : std::nullopt;
        auto invalid = [](const std::string& why) {
            return RpcError(error_code::invalid_params,
                            "requestState integrity check failed: " + why);
        };
        if (!payload) throw invalid("it was altered or was not issued by this server");
        if (payload->value("t", "") != target) throw invalid("it was issued for another call");
        if (payload->value("a", "") != crypto::sha256_hex(arguments.dump()))
            throw invalid("the arguments differ from the ones it was issued for");
        if (payload->value("p", "") != crypto::sha256_hex(ctx.principal.name).substr(0, 16))
            throw invalid("it was issued to another caller");
        std::int64_t now = now_ms();
        if (payload->value("e", std::int64_t{0}) < now) throw invalid("it has expired");
        {
            std::lock_guard lock(impl_->mutex);
            for (auto it = impl_->used_states.begin(); it != impl_->used_states.end();)
                it = it->second < now ? impl_->used_states.erase(it) : std::next(it);
            auto [pos, fresh] =
                impl_->used_states.emplace(payload->value("n", ""), payload->value("e", now));
            if (!fresh) throw invalid("it was already used");
        }
        ctx.input_responses_ = payload->value("r", json::object());
        ctx.asked_ = payload->value("q", json::array());
    }
    // Answers to this round's questions; anything not asked is ignored by ask().
    if (auto responses = params.find("inputResponses");
        responses != params.end() && responses->is_object())
        for (const auto& [k, v] : responses->items()) ctx.input_responses_[k] = v;
}

std::string Server::input_required_text(const json& id, const std::string& target,
                                        const json& arguments, const RequestContext& ctx,
                                        const InputRequired& question) {
    json asked = ctx.asked_;
    for (const auto& [key, q] : question.requests.items())
        if (std::find(asked.begin(), asked.end(), key) == asked.end()) asked.push_back(key);
    // Only answers to questions actually asked travel on; the rest are dropped.
    json kept = json::object();
    for (const auto& [k, v] : ctx.input_responses_.items())
        if (std::find(asked.begin(), asked.end(), k) != asked.end()) kept[k] = v;
    json payload = {
        {"t", target},
        {"a", crypto::sha256_hex(arguments.dump())},
        {"p", crypto::sha256_hex(ctx.principal.name).substr(0, 16)},
        {"e", now_ms() +
                  std::chrono::duration_cast<std::chrono::milliseconds>(impl_->options.state_ttl)
                      .count()},
        {"n", crypto::random_hex(12)},
        {"q", std::move(asked)},
        {"r", std::move(kept)}};
    json out = {{"resultType", "input_required"},
                {"inputRequests", question.requests},
                {"requestState", crypto::seal(impl_->secret, payload)}};
    out["_meta"][std::string(kMetaServerInfo)] = {{"name", impl_->options.info.name},
                                                  {"version", impl_->options.info.version}};
    return dump({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(out)}});
}

}  // namespace agency::mcp
