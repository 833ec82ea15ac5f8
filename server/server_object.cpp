// The server object: what is registered on it (tools, resources, prompts, filters), its
// sessions, the capabilities it declares, and what a request's handler may send back while it
// runs (RequestContext). How a message is dispatched is in dispatch.cpp.
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

bool Principal::reaches_client(std::string_view client_id) const {
    return clients.empty() || std::find(clients.begin(), clients.end(), client_id) != clients.end();
}

bool ToolDef::app_only() const {
    if (!ui.is_object()) return false;
    const auto visibility = ui.find("visibility");
    return visibility != ui.end() && visibility->is_array() &&
           std::none_of(visibility->begin(), visibility->end(),
                        [](const json& v) { return v == "model"; });
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
    impl_->clock = &base::Clock::or_system(impl_->options.clock);
    impl_->server_info_meta = {{"name", impl_->options.info.name},
                               {"version", impl_->options.info.version}};
    // One secret for both sealers: a random one (tokens then end with the process) when unset.
    const std::string secret = impl_->options.state_secret.empty() ? crypto::random_bytes(32)
                                                                   : impl_->options.state_secret;
    impl_->state_sealer.emplace(secret, "request-state", *impl_->clock);
    impl_->tasks_cursor_sealer.emplace(secret, "tasks-cursor", *impl_->clock);
    impl_->rate_limiter.emplace(impl_->options.rate_limit, *impl_->clock);
    impl_->refusals.emplace(*impl_->clock);
    impl_->tasks.store =
        impl_->options.task_store ? impl_->options.task_store : std::make_shared<MemoryTaskStore>();
    impl_->tasks.instance_id = impl_->options.instance_id.empty() ? "i_" + crypto::random_hex(8)
                                                                  : impl_->options.instance_id;
}

Server::~Server() {
    for (auto& stop : impl_->shutdown_hooks) stop();
    // Nothing from other instances reaches the tasks from here on; this instance's leases
    // run out and another instance takes its unfinished tasks over.
    if (impl_->tasks.keeper.running()) {
        impl_->tasks.store->watch_task_cancellations({});
        impl_->tasks.keeper.stop();
    }
    // Running tasks stop with the server; a durable store keeps them for resume_tasks().
    std::vector<std::pair<std::shared_ptr<LiveTask>, std::jthread>> threads;
    {
        std::lock_guard lock(impl_->tasks.mutex);
        threads.swap(impl_->tasks.threads);
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
    impl_->completion = [h = std::move(h)](const json& ref, const json& argument,
                                           const json& context, const Principal&) {
        return h(ref, argument, context);
    };
    impl_->completion_cost = std::move(cost);
}
void Server::set_caller_completion(CallerCompletion h, CompletionCost cost) {
    impl_->completion = std::move(h);
    impl_->completion_cost = std::move(cost);
}
void Server::set_tool_filter(std::function<bool(const ToolDef&)> visible) {
    impl_->tool_filter = std::move(visible);
}

void Server::set_task_reach(TaskReach reaches) { impl_->task_reach = std::move(reaches); }

void Server::set_tool_list_filter(std::function<bool(const ToolDef&)> listed) {
    impl_->tool_list_filter = std::move(listed);
}

void Server::cancel_calls() { impl_->calls.cancel_all(); }

CallsInFlight& Server::calls_in_flight() { return impl_->calls; }

void Server::on_shutdown(std::function<void()> stop) {
    impl_->shutdown_hooks.push_back(std::move(stop));
}

void Server::notify_tools_changed() {
    std::string message = R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})";
    std::vector<std::shared_ptr<Session>> targets;
    {
        std::lock_guard lock(impl_->sessions.mutex);
        for (auto& [id, s] : impl_->sessions.by_id) targets.push_back(s);
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
        std::lock_guard lock(impl_->sessions.mutex);
        for (auto& [id, s] : impl_->sessions.by_id) targets.push_back(s);
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
    s->last_used_seq = ++impl_->sessions.uses;
    return s;
}

void Server::register_session(const std::shared_ptr<Session>& session) {
    std::lock_guard lock(impl_->sessions.mutex);
    impl_->sessions.by_id[session->id] = session;
}

void Server::forget_session(const std::string& id) {
    std::lock_guard lock(impl_->sessions.mutex);
    impl_->sessions.by_id.erase(id);
}

const std::vector<std::pair<std::string, std::string>>& Server::header_params(
    const std::string& tool) const {
    static const std::vector<std::pair<std::string, std::string>> none;
    auto it = impl_->header_params.find(tool);
    return it == impl_->header_params.end() ? none : it->second;
}

std::shared_ptr<Session> Server::find_session(const std::string& id) const {
    std::lock_guard lock(impl_->sessions.mutex);
    auto it = impl_->sessions.by_id.find(id);
    return it == impl_->sessions.by_id.end() ? nullptr : it->second;
}

std::size_t Server::session_count() const {
    std::lock_guard lock(impl_->sessions.mutex);
    return impl_->sessions.by_id.size();
}

std::size_t Server::expire_sessions(std::chrono::milliseconds idle) {
    std::lock_guard lock(impl_->sessions.mutex);
    std::int64_t cutoff = impl_->now_ms() - idle.count();
    return std::erase_if(impl_->sessions.by_id, [&](const auto& entry) {
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

bool Server::may_stream(const Incoming& message, const Session* session) const {
    const MethodEntry* entry = message.kind == MessageKind::request ? message.entry : nullptr;
    if (!entry || entry->talks_back == TalksBack::never) return false;
    if (entry->talks_back == TalksBack::always) return true;
    const json& params = message.params();
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

}  // namespace agency::mcp
