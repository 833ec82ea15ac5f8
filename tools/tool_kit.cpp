// The kit every tool entry is built with: tool errors (a gateway failure as a tool error a
// model can act on), signed list cursors, and add_tool, which turns a ToolSpec into a
// registered tool (its schemas found by name, its annotations, its checked handler). The
// argument checks are in input_validation.cpp.
#include "tools/tool_kit.hpp"
#include "tools/views.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <variant>

#include "base/text.hpp"
#include "tools/client_scope.hpp"
#include "tools/listed_schema.hpp"
#include "tools/pipeline.hpp"
#include "tools/schemas.hpp"

namespace agency::tools {

// --- errors ----------------------------------------------------------------------------------

namespace {

// What to do next after an error of `reason`, for the text a model reads (some hosts drop
// everything but the text of an error): "" for a reason whose message says it all.
std::string_view next_step(std::string_view reason) {
    static constexpr std::pair<std::string_view, std::string_view> kNext[] = {
        {"validation", "correct the arguments as the message says, then call again"},
        {"not_found", "check the id: the list tools (list_clients first) give the valid "
                      "ones"},
        {"scope", "this key may not do it: use a read tool, or ask the operator for the scope"},
        {"rate_limited", "wait (retry_after_seconds when given), then call again"},
        {"unavailable", "the gateway is unreachable: try again in a minute"},
        {"upstream", "the gateway failed: try again later, and tell the operator if it persists"},
        {"gateway", "the gateway failed: try again later, and tell the operator if it persists"},
        {"outcome_unknown", "do not repeat it blindly: check whether it ran, as the message "
                            "says, first"},
        {"cancelled", "call again if it is still wanted"},
        {"auth", "the operator must fix the server's gateway key"},
    };
    for (const auto& [name, next] : kNext)
        if (name == reason) return next;
    return {};
}

}  // namespace

mcp::ToolResult tool_error(std::string_view reason, const std::string& message,
                           const json& details) {
    json error = {{"reason", reason}, {"message", message}};
    if (details.is_object())
        for (const auto& [k, v] : details.items()) error[k] = v;
    if (const std::string_view next = next_step(reason); !next.empty() && !error.contains("next"))
        error["next"] = next;
    return mcp::ToolResult::text(json{{"error", std::move(error)}}.dump(), true);
}

mcp::ToolResult tool_error(const gateway::Error& e) {
    using R = gateway::ErrorReason;
    std::string_view reason;
    switch (e.reason()) {
        case R::validation: reason = "validation"; break;
        case R::scope: reason = "scope"; break;
        case R::not_found: reason = "not_found"; break;
        case R::rate_limited: reason = "rate_limited"; break;
        case R::unavailable: reason = "unavailable"; break;
        case R::outcome_unknown: reason = "outcome_unknown"; break;
        case R::cancelled: reason = "cancelled"; break;
        case R::auth: reason = "auth"; break;
        case R::method:
        case R::upstream:
        case R::config: reason = "upstream"; break;
    }
    json details = json::object();
    // The gateway's words may quote third-party text: cleaned like its rows.
    if (!e.gateway_error().empty())
        details["gateway_error"] = base::clean_untrusted_text(e.gateway_error());
    if (e.http_status()) details["http_status"] = e.http_status();
    if (e.status_code()) details["status_code"] = *e.status_code();
    if (!e.data().is_null()) details["data"] = e.data();
    if (e.reason() == R::auth)  // the operator's to fix, mid-session as at start-up
        return tool_error(reason,
                          base::clean_untrusted_text(e.what()) +
                              " The gateway refused this server's API key: it is expired, "
                              "revoked or wrong. The operator must check AGENCY_API_KEY (a new "
                              "key comes from the agency's app settings) and restart the server.",
                          details);
    return tool_error(reason, base::clean_untrusted_text(e.what()), details);
}

// --- cursors ---------------------------------------------------------------------------------

namespace {

// Today's words for each refusal, kept as users have always read them.
std::string cursor_refusal(base::TokenRefusal refusal) {
    switch (refusal) {
        case base::TokenRefusal::other_subject: return "it belongs to another tool";
        case base::TokenRefusal::other_scope: return "it belongs to another client_id";
        case base::TokenRefusal::other_principal: return "it was issued to another caller";
        case base::TokenRefusal::other_arguments: return "it was issued for other filter arguments";
        case base::TokenRefusal::expired: return "it has expired";
        case base::TokenRefusal::altered:
        case base::TokenRefusal::spent: break;  // cursors are not single use
    }
    return "it was altered or was not issued by this server";
}

}  // namespace

Toolbox::Toolbox(std::shared_ptr<gateway::Client> gateway, Settings settings)
    : gateway_(std::move(gateway)),
      settings_(std::move(settings)),
      cursor_sealer_(settings_.secret, "cursor"),
      approval_sealer_(settings_.secret, "view-approval") {}

std::string Toolbox::issue_cursor(const CursorBinding& b, std::int64_t offset,
                                  const json& extra) const {
    const std::string filters = b.filters ? b.filters->dump() : "";
    json body = {{"o", offset}};
    if (!extra.is_null()) body["x"] = extra;
    return cursor_sealer_.seal({.subject = b.tool,
                                .scope = b.client_id,
                                .principal = b.principal,
                                .arguments = filters},
                               settings_.cursor_ttl, body);
}

CursorPosition Toolbox::open_cursor(const CursorBinding& b, const std::string& token) const {
    auto refuse = [](const std::string& why) {
        return mcp::RpcError(mcp::error_code::invalid_params,
                             "invalid cursor: " + why +
                                 "; pass back the next_cursor of the previous answer unchanged, "
                                 "with the same arguments, or omit it to start over");
    };
    const std::string filters = b.filters ? b.filters->dump() : "";
    auto opened = cursor_sealer_.open(token, {.subject = b.tool,
                                              .scope = b.client_id,
                                              .principal = b.principal,
                                              .arguments = filters});
    if (auto* refusal = std::get_if<base::TokenRefusal>(&opened))
        throw refuse(cursor_refusal(*refusal));
    const json& body = std::get<base::OpenedToken>(opened).body;
    auto offset = body.is_object() ? body.find("o") : body.end();
    if (!body.is_object() || offset == body.end() || !offset->is_number_integer() ||
        offset->get<std::int64_t>() < 0)
        throw refuse("it is malformed");
    return {offset->get<std::int64_t>(), body.value("x", json())};
}

std::string principal_of(const mcp::RequestContext& ctx) { return ctx.principal.name; }

std::string string_arg(const json& args, std::string_view name) {
    auto it = args.find(name);
    if (it == args.end() || it->is_null()) return {};
    return it->is_string() ? it->get<std::string>() : it->dump();
}

// --- registration ----------------------------------------------------------------------------

namespace {

// All four hints on every tool, each said outright: hosts that review tools (ChatGPT's app
// review among them) take a missing hint for the worst case (destructive, open world) and ask
// the user again. A read changes nothing and may be repeated (destructiveHint false,
// idempotentHint true); a write says what its spec chose. openWorldHint is true wherever the
// answer carries text from the web (rows are marked untrusted) or the action reaches outside
// the agency (a site, a search engine, a recipient); false for the server's own job table.
// The title is the tool's own `title`, not repeated here.
json annotations(const ToolSpec& spec) {
    return {{"readOnlyHint", spec.read_only},
            {"destructiveHint", !spec.read_only && spec.destructive},
            {"idempotentHint", spec.read_only || spec.idempotent},
            {"openWorldHint", spec.open_world}};
}

}  // namespace


ToolDoc add_tool(mcp::Server& server, ToolSpec spec) {
    // Registration happens once at start-up, before serving; re-registering replaces.
    // A tool's schemas are schemas/<name>.input.json and <name>.output.json unless its entry
    // names others: adding a tool is its entry and those two files.
    if (spec.input_schema.empty()) spec.input_schema = spec.name + ".input";
    if (spec.output_schema.empty() && has_schema(spec.name + ".output"))
        spec.output_schema = spec.name + ".output";
    ToolDoc doc{spec.name, spec.mapping, spec.gateway_action, spec.toolset};
    mcp::ToolDef def;
    def.name = spec.name;
    def.title = spec.title;
    def.description = spec.description;
    def.group = spec.toolset;
    // Embedded schemas live as long as the program: the definition and the validator point at
    // them instead of copying them. A patched one is the tool's own copy.
    const json& embedded_input = schema(spec.input_schema);
    if (spec.input_schema_patch.is_null()) {
        def.shared_input_schema = &embedded_input;
    } else {
        def.input_schema = embedded_input;
        def.input_schema.merge_patch(spec.input_schema_patch);
    }
    def.listed_input_schema = spec.input_schema_patch.is_null()
                                  ? listed_schema(spec.input_schema)
                                  : std::make_shared<const json>(listed_input(def.input_schema));
    if (!spec.output_schema.empty()) {
        def.shared_output_schema = &schema(spec.output_schema);
        def.listed_output_schema = listed_schema(spec.output_schema);
    }
    // An app-only tool never reaches a model: its hints say only whether it writes.
    def.annotations = spec.app_only ? json{{"readOnlyHint", spec.read_only}} : annotations(spec);
    if (spec.needs_write) def.required_scopes = {"write"};
    def.interactive = spec.interactive;
    auto validator = std::make_shared<const InputValidator>(
        spec.input_schema_patch.is_null() ? InputValidator::borrowing(embedded_input)
                                          : InputValidator(def.input_schema));
    // The client scope (tools/client_scope.hpp) right after validation, before any stage that
    // reads the state store or the gateway: a client outside it does not exist for the caller.
    def.handler = checked_handler(
        validator, within_client_scope(std::move(spec.handler), spec.on_refused), spec.on_refused);
    def.task_support = spec.task_support;
    if (spec.task_handler)
        def.task_handler = checked_handler(
            validator, within_client_scope(std::move(spec.task_handler), spec.on_refused),
            spec.on_refused);
    def.on_refused = std::move(spec.on_refused);
    if (spec.resume_task) def.resume_task = checked_resume(std::move(spec.resume_task));
    def.on_cancel = std::move(spec.on_cancel);
    if (!spec.view.empty() && view_embedded(spec.view)) {
        def.ui = {{"resourceUri", spec.view}};
        if (spec.app_only) def.ui["visibility"] = json::array({"app"});
    }
    if (spec.billable) def.meta = {{"billable", true}};
    // A read whose answer can be large (it takes limit or max_bytes) declares the answer cap,
    // so Claude Code shows a page whole instead of swapping it for a file and a preview.
    const json& input = spec.input_schema_patch.is_null() ? embedded_input : def.input_schema;
    if (spec.read_only && !spec.app_only && input.contains("properties")) {
        const json& props = input["properties"];
        if (props.contains("limit") || props.contains("max_bytes"))
            def.meta["anthropic/maxResultSizeChars"] = Settings{}.page_budget_bytes;
    }
    if (spec.app_only && def.ui.is_null()) return doc;  // no view in this build: no tool
    server.add_tool(std::move(def));
    return doc;
}

}  // namespace agency::tools
