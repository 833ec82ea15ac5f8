// The method table and the handlers of the methods that answer from the registry (lifecycle,
// tools, resources, prompts, completion). Tool calls are in tool_calls.cpp, their rounds in
// rounds.cpp, the task methods in task_runtime.cpp; how a message reaches its entry in
// dispatch.cpp.
#include <algorithm>
#include <array>

#include "base/crypto.hpp"
#include "server/method_table.hpp"
#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

using M = Methods;

// Mcp-Name carries the field that names what a request acts on.
constexpr std::string_view kByName = "name";
constexpr std::string_view kByUri = "uri";
constexpr std::string_view kByTask = "taskId";

// Sorted by name (find_method searches it by halves).
constexpr std::array kMethods{
    MethodEntry{.name = "completion/complete", .runs = Runs::on_worker,
                .handler = &M::completion_complete},
    MethodEntry{.name = "initialize", .eras = kLegacyEra, .opens_session = true,
                .handler = &M::initialize},
    MethodEntry{.name = "logging/setLevel", .eras = kLegacyEra, .handler = &M::logging_set_level},
    MethodEntry{.name = "ping", .eras = kLegacyEra, .before_initialize = true,
                .handler = &M::ping},
    MethodEntry{.name = "prompts/get", .runs = Runs::on_worker, .name_param = kByName,
                .handler = &M::prompts_get},
    MethodEntry{.name = "prompts/list", .handler = &M::prompts_list},
    MethodEntry{.name = "resources/list", .runs = Runs::on_worker, .handler = &M::resources_list},
    MethodEntry{.name = "resources/read", .runs = Runs::on_worker, .name_param = kByUri,
                .handler = &M::resources_read},
    MethodEntry{.name = "resources/subscribe", .eras = kLegacyEra,
                .handler = &M::resources_subscribe},
    MethodEntry{.name = "resources/templates/list", .handler = &M::resources_templates_list},
    MethodEntry{.name = "resources/unsubscribe", .eras = kLegacyEra,
                .handler = &M::resources_unsubscribe},
    MethodEntry{.name = "server/discover", .eras = kModernEra, .handler = &M::server_discover},
    MethodEntry{.name = "tasks/cancel", .name_param = kByTask, .handler = &M::tasks_cancel},
    MethodEntry{.name = "tasks/get", .name_param = kByTask, .handler = &M::tasks_get},
    MethodEntry{.name = "tasks/list", .eras = kLegacyEra, .absent_note = M::kNotInTasksExtension,
                .handler = &M::tasks_list},
    MethodEntry{.name = "tasks/result", .eras = kLegacyEra, .runs = Runs::on_worker,
                .talks_back = TalksBack::always, .absent_note = M::kNotInTasksExtension,
                .handler = &M::tasks_result},
    // Exists in both eras so that a legacy call is refused only after its task is found, as
    // the other task methods are.
    MethodEntry{.name = "tasks/update", .name_param = kByTask, .handler = &M::tasks_update},
    MethodEntry{.name = "tools/call", .runs = Runs::on_worker,
                .talks_back = TalksBack::when_tool_does, .name_param = kByName,
                .handler = &M::tools_call},
    MethodEntry{.name = "tools/list", .handler = &M::tools_list},
};

constexpr bool sorted_by_name() {
    for (std::size_t i = 1; i < kMethods.size(); ++i)
        if (!(kMethods[i - 1].name < kMethods[i].name)) return false;
    return true;
}
static_assert(sorted_by_name(), "kMethods must stay sorted by name");

constexpr MethodEntry kOtherTaskMethod{.name = "tasks/", .handler = &M::tasks_other};

// Lists of the modern era carry caching advice.
json list_result(const Request& r, const ServerOptions& options, json result) {
    if (r.ctx.era == Era::modern) {
        result["ttlMs"] = options.list_ttl_ms;
        result["cacheScope"] = "private";
    }
    return result;
}

json server_info_object(const ServerInfo& info) {
    return {{"name", info.name}, {"title", info.title}, {"version", info.version}};
}

}  // namespace

const MethodEntry* find_method(std::string_view method) {
    auto it = std::lower_bound(kMethods.begin(), kMethods.end(), method,
                               [](const MethodEntry& e, std::string_view m) { return e.name < m; });
    if (it != kMethods.end() && it->name == method) return &*it;
    if (method.starts_with(kOtherTaskMethod.name)) return &kOtherTaskMethod;
    return nullptr;
}

std::optional<Reply> Methods::complete(Server& server, const Request& r, json result) {
    if (r.ctx.era == Era::modern) server.impl_->add_modern_result_fields(result);
    return dump({{"jsonrpc", "2.0"}, {"id", r.id}, {"result", std::move(result)}});
}

std::optional<Reply> Methods::initialize(Server& server, const Request& r) {
    const Inbound& in = r.in;
    if (!in.session) throw RpcError(error_code::internal_error, "no session");
    if (!in.session->protocol_version.empty())
        throw RpcError(error_code::invalid_request, "this session is already initialized");
    std::string requested = require_string(r.params, "protocolVersion");
    in.session->protocol_version =
        is_legacy_version(requested) ? requested : std::string(kLatestLegacyVersion);
    if (auto caps = r.params.find("capabilities"); caps != r.params.end() && caps->is_object())
        in.session->client_capabilities = *caps;
    if (auto ci = r.params.find("clientInfo"); ci != r.params.end() && ci->is_object())
        in.session->client_info = *ci;
    in.session->principal = in.principal;
    in.session->last_used_ms = server.impl_->now_ms();
    in.session->last_used_seq = ++server.impl_->sessions.uses;
    const ServerInfo& info = server.impl_->options.info;
    json caps = server.capabilities(Era::legacy);
    // Resource updates reach a session only through its notification path (stdio has one; a
    // legacy HTTP session would need the GET stream, which is not offered).
    if (!in.session->notify) caps["resources"].erase("subscribe");
    json result = {{"protocolVersion", in.session->protocol_version},
                   {"capabilities", std::move(caps)},
                   {"serverInfo", server_info_object(info)}};
    if (!info.instructions.empty()) result["instructions"] = info.instructions;
    return complete(server, r, std::move(result));
}

std::optional<Reply> Methods::ping(Server& server, const Request& r) {
    return complete(server, r, json::object());
}

std::optional<Reply> Methods::server_discover(Server& server, const Request& r) {
    const ServerInfo& info = server.impl_->options.info;
    json result = {{"supportedVersions", supported_versions()},
                   {"capabilities", server.capabilities(Era::modern)},
                   {"serverInfo", server_info_object(info)}};
    if (!info.instructions.empty()) result["instructions"] = info.instructions;
    return complete(server, r, list_result(r, server.impl_->options, std::move(result)));
}

std::optional<Reply> Methods::logging_set_level(Server& server, const Request& r) {
    std::string level = require_string(r.params, "level");
    int index = log_level_index(level);
    if (index < 0)
        throw RpcError(error_code::invalid_params,
                       "invalid log level \"" + level +
                           "\"; use one of debug, info, notice, warning, error, "
                           "critical, alert, emergency");
    if (r.ctx.session) r.ctx.session->log_level = index;
    return complete(server, r, json::object());
}

namespace {

// The offset a list cursor (tools/list, resources/list: `kind`) stands for; throws when it is
// not one this server issued for a list of `count` entries.
std::size_t list_cursor_offset(const json& params, std::size_t count, std::string_view kind) {
    const std::string prefix = std::string(kind) + ":";
    auto c = params.find("cursor");
    if (c == params.end() || c->is_null()) return 0;
    auto decoded =
        c->is_string() ? crypto::base64url_decode(c->get<std::string>()) : std::nullopt;
    std::size_t offset = 0;
    bool ok = decoded && decoded->rfind(prefix, 0) == 0;
    if (ok) {
        try {
            offset = std::stoul(decoded->substr(prefix.size()));
        } catch (const std::exception&) {
            ok = false;
        }
    }
    if (!ok || offset > count)
        throw RpcError(error_code::invalid_params,
                       "invalid cursor: pass back the nextCursor of a previous " +
                           std::string(kind) + "/list, or omit it");
    return offset;
}

json tool_entry(const ToolDef& t, bool legacy, bool views) {
    json entry = {{"name", t.name}};
    if (!t.title.empty()) entry["title"] = t.title;
    entry["description"] = t.description;
    entry["inputSchema"] = t.listed_input();
    if (!t.listed_output().is_null()) entry["outputSchema"] = t.listed_output();
    if (!t.annotations.is_null()) entry["annotations"] = t.annotations;
    if (legacy && t.task_support != TaskSupport::forbidden)
        entry["execution"] = {
            {"taskSupport", t.task_support == TaskSupport::required ? "required" : "optional"}};
    if (!t.icons.is_null()) entry["icons"] = t.icons;
    if (!t.meta.is_null()) entry["_meta"] = t.meta;
    if (views && !t.ui.is_null()) entry["_meta"]["ui"] = t.ui;
    return entry;
}

}  // namespace

std::optional<Reply> Methods::tools_list(Server& server, const Request& r) {
    auto visible = server.visible_tools(r.ctx.principal);
    const bool views = r.ctx.renders_views();
    if (!views) std::erase_if(visible, [](const ToolDef* t) { return t->app_only(); });
    const std::size_t offset = list_cursor_offset(r.params, visible.size(), "tools");
    const ServerOptions& options = server.impl_->options;
    std::size_t page = std::max<std::size_t>(1, options.tools_page_size);
    json tools = json::array();
    for (std::size_t i = offset; i < visible.size() && i < offset + page; ++i)
        tools.push_back(tool_entry(*visible[i], r.ctx.era == Era::legacy, views));
    json result = {{"tools", std::move(tools)}};
    if (offset + page < visible.size())
        result["nextCursor"] = crypto::base64url_encode("tools:" + std::to_string(offset + page));
    return complete(server, r, list_result(r, options, std::move(result)));
}

std::optional<Reply> Methods::tools_call(Server& server, const Request& r) {
    return server.call_tool(r.id, r.params, r.ctx);
}

namespace {

// A list result: {field: [entry(item)...]}, with the modern era's caching advice.
template <class Item, class Entry>
json list_of(const Request& r, const ServerOptions& options, const char* field,
             const std::vector<Item>& items, Entry entry) {
    json list = json::array();
    for (const Item& item : items) list.push_back(entry(item));
    return list_result(r, options, {{field, std::move(list)}});
}

// A resource's or a template's entry: `entry` (its URI or URI template, and name) with the
// title, description and MIME type it has.
template <class Def>
json described_entry(json entry, const Def& def) {
    if (!def.title.empty()) entry["title"] = def.title;
    if (!def.description.empty()) entry["description"] = def.description;
    if (!def.mime_type.empty()) entry["mimeType"] = def.mime_type;
    return entry;
}

json resource_entry(const ResourceDef& res) {
    return described_entry({{"uri", res.uri}, {"name", res.name}}, res);
}

json template_entry(const ResourceTemplateDef& t) {
    return described_entry({{"uriTemplate", t.uri_template}, {"name", t.name}}, t);
}

// What reading `uri` is charged: the resource's cost, or the first template's that claims the
// URI; 1 for a URI none claims (a request all the same).
int read_cost(const std::vector<ResourceDef>& resources,
              const std::vector<ResourceTemplateDef>& templates, const std::string& uri) {
    for (const ResourceDef& res : resources)
        if (res.uri == uri) return std::max(1, res.cost);
    for (const ResourceTemplateDef& t : templates)
        if (t.cost)
            if (const int units = t.cost(uri); units > 0) return units;
    return 1;
}

json prompt_entry(const PromptDef& p) {
    json entry = {{"name", p.name}, {"description", p.description}};
    if (!p.title.empty()) entry["title"] = p.title;
    if (!p.arguments.empty()) entry["arguments"] = p.arguments;
    return entry;
}

}  // namespace

std::optional<Reply> Methods::resources_list(Server& server, const Request& r) {
    Server::Impl& impl = *server.impl_;
    // Charged only when the listed entries cost the gateway (not cached): a list is free.
    if (impl.resource_lister && impl.resource_lister_cost)
        if (const int units = impl.resource_lister_cost(); units > 0)
            impl.charge(r.ctx.principal.name, "resources/list", "", units);
    json all = json::array();
    const bool views = r.ctx.renders_views();
    for (const ResourceDef& res : impl.resources)
        if (views || !res.view) all.push_back(resource_entry(res));
    if (impl.resource_lister)
        for (json& entry : impl.resource_lister(r.ctx)) all.push_back(std::move(entry));
    const std::size_t offset = list_cursor_offset(r.params, all.size(), "resources");
    const std::size_t page = std::max<std::size_t>(1, impl.options.resources_page_size);
    json resources = json::array();
    for (std::size_t i = offset; i < all.size() && i < offset + page; ++i)
        resources.push_back(std::move(all[i]));
    json result = {{"resources", std::move(resources)}};
    if (offset + page < all.size())
        result["nextCursor"] =
            crypto::base64url_encode("resources:" + std::to_string(offset + page));
    return complete(server, r, list_result(r, impl.options, std::move(result)));
}

std::optional<Reply> Methods::resources_templates_list(Server& server, const Request& r) {
    const Server::Impl& impl = *server.impl_;
    return complete(server, r,
                    list_of(r, impl.options, "resourceTemplates", impl.templates,
                            template_entry));
}

std::optional<Reply> Methods::resources_read(Server& server, const Request& r) {
    const bool legacy = r.ctx.era == Era::legacy;
    std::string uri = require_string(r.params, "uri");
    server.impl_->charge(r.ctx.principal.name, "resources/read", uri,
                         read_cost(server.impl_->resources, server.impl_->templates, uri));
    std::optional<json> contents;
    for (const auto& res : server.impl_->resources)
        if (res.uri == uri) contents = res.read(r.ctx);
    const auto& templates = server.impl_->templates;
    for (std::size_t i = 0; !contents && i < templates.size(); ++i)
        contents = templates[i].read(uri, r.ctx);
    if (!contents)
        throw RpcError(legacy ? error_code::resource_not_found_legacy : error_code::invalid_params,
                       "resource not found: " + uri, {{"uri", uri}});
    json result = {{"contents", std::move(*contents)}};
    if (const json& extra = server.impl_->options.result_meta; extra.is_object() && !extra.empty())
        add_result_meta(result["_meta"], server.impl_->options);
    if (!legacy) {
        result["ttlMs"] = 0;  // tool data changes; don't let clients cache reads
        result["cacheScope"] = "private";
    }
    return complete(server, r, std::move(result));
}

namespace {

// Drops `uri` from the session's subscriptions, then adds it back when subscribing, so a URI
// is listed at most once.
void set_subscription(const RequestContext& ctx, const std::string& uri, bool subscribed) {
    if (!ctx.session) return;
    std::lock_guard lock(ctx.session->mutex);
    auto& subs = ctx.session->subscriptions;
    subs.erase(std::remove(subs.begin(), subs.end(), uri), subs.end());
    if (subscribed) subs.push_back(uri);
}

}  // namespace

std::optional<Reply> Methods::resources_subscribe(Server& server, const Request& r) {
    set_subscription(r.ctx, require_string(r.params, "uri"), true);
    return complete(server, r, json::object());
}

std::optional<Reply> Methods::resources_unsubscribe(Server& server, const Request& r) {
    set_subscription(r.ctx, require_string(r.params, "uri"), false);
    return complete(server, r, json::object());
}

std::optional<Reply> Methods::prompts_list(Server& server, const Request& r) {
    const Server::Impl& impl = *server.impl_;
    return complete(server, r, list_of(r, impl.options, "prompts", impl.prompts, prompt_entry));
}

std::optional<Reply> Methods::prompts_get(Server& server, const Request& r) {
    const bool legacy = r.ctx.era == Era::legacy;
    const auto& prompts = server.impl_->prompts;
    std::string name = require_string(r.params, "name");
    auto it = std::find_if(prompts.begin(), prompts.end(),
                           [&](const PromptDef& p) { return p.name == name; });
    server.impl_->charge(r.ctx.principal.name, "prompts/get", name,
                         it == prompts.end() ? 1 : std::max(1, it->cost));
    if (it == prompts.end()) throw RpcError(error_code::invalid_params, "unknown prompt: " + name);
    json args = r.params.value("arguments", json::object());
    if (!args.is_object())
        throw RpcError(error_code::invalid_params, "params.arguments must be an object");
    for (const auto& a : it->arguments) {
        if (a.value("required", false) && !args.contains(a.value("name", "")))
            throw RpcError(error_code::invalid_params, "missing required argument \"" +
                                                           a.value("name", "") +
                                                           "\" for prompt " + name);
    }
    std::string target = "prompt:" + name;
    if (!legacy) server.restore_round(target, args, r.params, r.ctx);
    json result;
    try {
        result = it->get(args, r.ctx);
    } catch (const InputRequired& question) {
        if (legacy) throw RpcError(error_code::internal_error, "internal error");
        return server.input_required_text(r.id, target, args, r.ctx, question);
    }
    return complete(server, r, std::move(result));
}

std::optional<Reply> Methods::completion_complete(Server& server, const Request& r) {
    Server::Impl& impl = *server.impl_;
    auto ref = r.params.find("ref");
    auto argument = r.params.find("argument");
    const bool well_formed = ref != r.params.end() && ref->is_object() &&
                             argument != r.params.end() && argument->is_object();
    const json context = r.params.value("context", json::object());
    impl.charge(r.ctx.principal.name, "completion/complete", "",
                well_formed && impl.completion && impl.completion_cost
                    ? std::max(1, impl.completion_cost(*ref, *argument, context))
                    : 1);
    if (!well_formed)
        throw RpcError(error_code::invalid_params,
                       "params.ref and params.argument are required objects");
    json completion = {{"values", json::array()}};
    if (impl.completion) completion = impl.completion(*ref, *argument, context, r.ctx.principal);
    return complete(server, r, {{"completion", std::move(completion)}});
}

}  // namespace agency::mcp
