// add_tool: a ToolSpec becomes a registered tool: its schemas found by name, its annotations,
// its view, and its handler inside the call stages (tools/pipeline/pipeline.cpp, the one list).
#include "server/mcp_server.hpp"
#include "tools/pipeline/pipeline.hpp"

#include <memory>
#include <utility>

#include "tools/kit/listed_schema.hpp"
#include "tools/kit/schemas.hpp"
#include "tools/kit/views.hpp"

namespace agency::tools {

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
    // The call stages of tools/pipeline/pipeline.cpp, the same for a call and a task.
    def.handler = with_call_stages(validator, std::move(spec.handler), spec.on_refused);
    def.task_support = spec.task_support;
    if (spec.task_handler)
        def.task_handler =
            with_call_stages(validator, std::move(spec.task_handler), spec.on_refused);
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
