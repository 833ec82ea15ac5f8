// tools/call: the checks before a tool runs (scope, client capabilities, task support), the
// run itself (inline, as a task, or a modern round), and the CallToolResult's text.
#include "base/answer_form.hpp"
#include "base/log.hpp"

#include "base/progress_notes.hpp"
#include "server/lean_answer.hpp"
#include "server/server_impl.hpp"
#include "server/telemetry.hpp"

namespace agency::mcp {

// Throws rate_limited (the transport's 429) when the caller cannot afford `units` now, naming
// the cost and what a unit is. Refusals are logged once, then summarised per interval, and
// counted by method and target (server/telemetry.hpp).
void Server::Impl::charge(const std::string& principal, const std::string& method,
                          std::string_view subject, int units) {
    if (!rate_limiter) return;
    auto wait = rate_limiter->take(principal, units);
    if (!wait) return;
    // What was refused, as a metrics label: a tool, prompt, resource URI or URI template this
    // server has (a bounded set), never the caller's own text; else "".
    const auto target = [&, name = std::string(subject)]() -> std::string {
        if (method == "tools/call") {
            const ToolDef* tool = find_tool(name);
            return tool && tool_visible(*tool) ? name : std::string();
        }
        if (method == "prompts/get")
            for (const PromptDef& p : prompts)
                if (p.name == name) return name;
        if (method == "resources/read") {
            for (const ResourceDef& r : resources)
                if (r.uri == name) return name;
            for (const ResourceTemplateDef& t : templates)
                if (t.cost && t.cost(name) > 0) return t.uri_template;
        }
        return {};
    };
    RequestObserver::rate_limited(method, target());
    const RateLimit& limit = rate_limiter->limit();
    const int burst = rate_limiter->burst();
    refusals->write(log::Level::warn, "refused over the rate limit", principal,
                    "{} of {} refused: over the rate limit ({} unit(s))", method, principal,
                    units);
    json data = {{"retryAfterSeconds", wait->count()},
                 {"limitPerMinute", limit.per_minute},
                 {"burst", burst},
                 {"costUnits", units},
                 {"unit", "one tool call, or one gateway read a resource, prompt or completion "
                          "may make"}};
    const std::string what = subject.empty() ? method
                                             : method + " of " + std::string(subject.substr(0, 200));
    throw RpcError(error_code::rate_limited,
                   "rate limit: " + what + " costs " + std::to_string(units) +
                       (units == 1 ? " unit" : " units") +
                       ", more than this caller has left: a caller may spend " +
                       std::to_string(limit.per_minute) + " units a minute (" +
                       std::to_string(burst) +
                       " at once), a unit being one tool call or one gateway read a resource, "
                       "prompt or completion may make; retry in " +
                       std::to_string(wait->count()) + " s",
                   std::move(data));
}

namespace {

// A tool left out of this caller's tools/list is unknown to its calls as well.
void refuse_unless_offered(const Server& server, const ToolDef& tool, const RequestContext& ctx) {
    if (!server.tool_selected(tool, ctx.principal))
        throw RpcError(error_code::invalid_params,
                       "unknown tool: " + tool.name + " (not among the toolsets and tools " +
                           "enabled for this server or request; tools/list shows the available "
                           "tools)");
    if (tool.app_only() && !ctx.renders_views())
        throw RpcError(error_code::invalid_params,
                       "unknown tool: " + tool.name + " (a tool of this server's MCP Apps views, "
                       "offered only to clients that declare the io.modelcontextprotocol/ui "
                       "extension; tools/list shows the available tools)");
}

using base::AnswerForm;

// The text beside structuredContent (what the frameworks read), then structuredContent in the
// form the host's model reads (lean for a host that shows it nothing else).
void shape_answer(ToolResult& result, const ServerOptions& options, Era era, AnswerForm form) {
    summarize_structured_text(result, options, era);
    if (!result.is_error && !result.structured_text.empty() && form == AnswerForm::lean)
        result.structured_text = lean_structured(result.structured_text);
}

// Runs the tool's handler with the caller's progress and answer form in scope. A failure that
// is not the protocol's (an RpcError) or a question (InputRequired) becomes a tool error.
ToolResult run_handler(const ToolDef& tool, const json& arguments, RequestContext& ctx,
                       AnswerForm form) {
    // A caller that asked for progress hears how the work below goes (the gateway's retries),
    // each note one step further.
    base::ProgressNotes::Listener listener;
    if (!ctx.progress_token.is_null()) {
        listener = [&ctx, step = 0.0](std::string_view note) mutable {
            ctx.progress(++step, std::nullopt, note);
        };
    }
    const base::ProgressNotes::Scope notes(listener);
    const base::AnswerForms::Scope form_scope(form);  // max_bytes counts in that form
    try {
        return tool.handler(arguments, ctx);
    } catch (const InputRequired&) {
        throw;
    } catch (const RpcError&) {
        throw;
    } catch (const std::exception& e) {
        log::error("tool {} failed: {}", tool.name, e.what());
        return ToolResult::text(
            "the tool " + tool.name + " failed unexpectedly; see the server log", true);
    }
}

// Why the core refuses `tool` for this caller before it runs (a scope the caller lacks, a client
// capability it did not declare), as the tool error the caller gets; nullopt when it may run.
// A modern caller lacking a capability gets the protocol's error instead (thrown).
std::optional<ToolResult> refusal_before_run(const ToolDef& tool, const json& arguments,
                                             RequestContext& ctx) {
    for (const auto& scope : tool.required_scopes) {
        if (ctx.principal.has_scope(scope)) continue;
        const json reason = {{"error",
                              {{"reason", "scope"},
                               {"message", "the tool " + tool.name + " needs the '" + scope +
                                               "' scope, which this caller lacks"}}}};
        ToolResult refusal = ToolResult::text(reason.dump(), true);
        if (tool.on_refused) tool.on_refused(arguments, ctx, refusal);
        return refusal;
    }
    if (tool.required_client_capabilities.is_null()) return std::nullopt;
    for (const auto& [cap, value] : tool.required_client_capabilities.items()) {
        if (ctx.client_supports(cap)) continue;
        std::string why = "the tool " + tool.name + " needs the client capability '" + cap + "'";
        if (ctx.era == Era::modern)
            throw RpcError(error_code::missing_client_capability, why,
                           {{"requiredCapabilities", tool.required_client_capabilities}});
        return ToolResult::text(why + ", which this client did not declare", true);
    }
    return std::nullopt;
}

// The JSON-RPC response carrying `result`. Reserved once: the answer carries the structured
// text twice (once escaped), and growing a ~50 KB string on the way copies it.
std::string tool_call_reply(const json& id, const ToolResult& result, json meta, bool modern) {
    const bool text_copy = result.content.empty() && !result.structured_text.empty();
    const std::size_t text_size = text_copy ? json_string_size(result.block_text()) : 0;
    std::string out;
    out.reserve(text_size + result.structured_text.size() + 384);
    out += R"({"jsonrpc":"2.0","id":)";
    out += dump(id);
    out += R"(,"result":{)";
    if (modern) out += R"("resultType":"complete",)";
    append_tool_result_fields(out, result, text_size);
    if (!meta.empty()) {
        out += R"(,"_meta":)";
        out += dump(meta);
    }
    out += "}}";
    return out;
}

}  // namespace

std::optional<Reply> Server::call_tool(const json& id, const json& params,
                                             RequestContext& ctx) {
    // Before anything else runs: a caller over its limit costs the server nothing more. A
    // refusal names the tool when the server has it (the message, the metrics' label). The
    // tool is looked up once.
    const auto asked = params.find("name");
    const ToolDef* found = asked != params.end() && asked->is_string()
                               ? impl_->find_tool(asked->get_ref<const std::string&>())
                               : nullptr;
    if (found && !impl_->tool_visible(*found)) found = nullptr;
    impl_->charge(ctx.principal.name, "tools/call", found ? found->name : std::string(), 1);
    const std::string name = require_string(params, "name");
    if (!found)
        throw RpcError(error_code::invalid_params,
                       "unknown tool: " + name + " (tools/list shows the available tools)");
    const ToolDef& tool = *found;
    refuse_unless_offered(*this, tool, ctx);
    RequestObserver::tool_found(name);
    json arguments = params.value("arguments", json::object());
    if (arguments.is_null()) arguments = json::object();
    if (!arguments.is_object())
        throw RpcError(error_code::invalid_params, "params.arguments must be an object");
    const bool modern = ctx.era == Era::modern;
    const auto form = lean_answer_for(impl_->options, ctx) ? AnswerForm::lean : AnswerForm::full;

    std::optional<ToolResult> refused = refusal_before_run(tool, arguments, ctx);
    ToolResult result;
    if (refused) {
        result = std::move(*refused);
    } else {
        require_task_support_fits(tool, params, ctx);
        if (modern) restore_round("tool:" + name, arguments, params, ctx);
        try {
            // A task the caller would not reach (a client outside its scope) is never created:
            // the call runs plainly and the tool refuses it, as a missing scope is refused.
            const bool reached =
                !impl_->task_reach || impl_->task_reach(name, arguments, ctx.principal);
            if (reached && wants_task(tool, params, ctx)) {
                if (tool.before_task) tool.before_task(arguments, ctx);
                auto started = start_task(tool, id, arguments, params, ctx);
                RequestObserver::tool_outcome("task");
                return started;
            }
            result = run_handler(tool, arguments, ctx, form);
        } catch (const InputRequired& question) {
            if (!modern) throw RpcError(error_code::internal_error, "internal error");
            RequestObserver::tool_outcome("input_required");
            return input_required_text(id, "tool:" + name, arguments, ctx, question);
        }
    }
    // A legacy request cancelled by notifications/cancelled gets no answer.
    if (!modern && ctx.stop.stop_requested() && ctx.session) return std::nullopt;

    if (result.is_error) RequestObserver::tool_outcome("tool_error");
    shape_answer(result, impl_->options, ctx.era, form);
    json meta = result.meta.is_object() ? result.meta : json::object();
    add_result_meta(meta, impl_->options);
    if (modern) impl_->add_server_info(meta);
    return tool_call_reply(id, result, std::move(meta), modern);
}

bool Server::may_wait_long(const Incoming& message) const {
    if (message.kind != MessageKind::request) return false;
    if (message.method == "tasks/result") return true;
    if (message.method != "tools/call") return false;
    const auto name = message.params().find("name");
    if (name == message.params().end() || !name->is_string()) return false;
    const ToolDef* tool = impl_->find_tool(name->get_ref<const std::string&>());
    if (tool == nullptr) return false;
    const json& annotations = tool->annotations;
    return !(annotations.is_object() && annotations.value("readOnlyHint", false));
}

std::optional<std::string> Server::missing_scope(const Incoming& message,
                                                 const Principal& principal) const {
    if (message.kind != MessageKind::request || message.method != "tools/call") return std::nullopt;
    const json& params = message.params();
    const auto name = params.find("name");
    if (name == params.end() || !name->is_string()) return std::nullopt;
    auto found = impl_->tool_index.find(name->get<std::string>());
    if (found == impl_->tool_index.end()) return std::nullopt;
    const ToolDef& tool = impl_->tools[found->second];
    if (!impl_->tool_visible(tool) || !tool_selected(tool, principal)) return std::nullopt;
    for (const auto& scope : tool.required_scopes)
        if (!principal.has_scope(scope)) return scope;
    return std::nullopt;
}

void add_result_meta(json& meta, const ServerOptions& options) {
    if (!options.result_meta.is_object() || options.result_meta.empty()) return;
    if (!meta.is_object()) meta = json::object();
    for (const auto& [key, value] : options.result_meta.items()) meta[key] = value;
}

void append_tool_result_fields(std::string& out, const ToolResult& result,
                               std::size_t text_size) {
    out += R"("content":)";
    if (result.content.empty() && !result.structured_text.empty()) {
        const std::string& text = result.block_text();
        out += R"([{"type":"text","text":)";
        if (text_size == 0) text_size = json_string_size(text);
        append_json_string(out, text, text_size);
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

}  // namespace agency::mcp
