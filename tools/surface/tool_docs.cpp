#include "tools/surface/tool_docs.hpp"
#include "server/mcp_server.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include "base/text.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/kit/toolsets.hpp"
#include "tools/surface/surface.hpp"

namespace agency::tools {

namespace {

using base::join;

// Prose from the definitions: a bare < outside code spans would start an HTML tag and vanish
// when rendered (e.g. "resource=<resource>").
std::string prose(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool in_code = false;
    for (char c : text) {
        if (c == '`') in_code = !in_code;
        if (c == '<' && !in_code) out += '\\';
        out += c;
    }
    return out;
}

// Table cells are one line, and a bare | would split the cell (even inside a code span, in GFM).
std::string cell(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '|') {
            out += "\\|";
        } else if (c == '\n' || c == '\r') {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

std::string code(std::string_view text) {
    // A backtick inside needs a longer fence (CommonMark code spans).
    std::string_view fence = text.find('`') == std::string_view::npos ? "`" : "`` ";
    std::string_view close = fence.size() == 1 ? "`" : " ``";
    return std::string(fence) + std::string(text) + std::string(close);
}

// A JSON value as written in the docs: strings bare, everything else as JSON.
std::string literal(const json& value) {
    return code(value.is_string() ? value.get<std::string>() : value.dump());
}

std::string type_name(const json& prop);

std::string alternatives(const json& list) {
    std::vector<std::string> names;
    for (const auto& alternative : list) names.push_back(type_name(alternative));
    return join(names, " or ");
}

// The base type of a property schema: "string", "array of integer", "string or null".
std::string type_name(const json& prop) {
    if (!prop.is_object()) return "any";
    if (auto c = prop.find("const"); c != prop.end()) return "constant " + literal(*c);
    for (const char* key : {"anyOf", "oneOf"})
        if (auto a = prop.find(key); a != prop.end() && a->is_array()) return alternatives(*a);
    std::string name;
    if (auto t = prop.find("type"); t != prop.end()) {
        if (t->is_array()) {
            std::vector<std::string> types;
            for (const auto& one : *t) types.push_back(one.get<std::string>());
            name = join(types, " or ");
        } else if (t->is_string()) {
            name = t->get<std::string>();
        }
    }
    if (name == "array") {
        if (auto items = prop.find("items"); items != prop.end() && items->is_object())
            name += " of " + type_name(*items);
    }
    return name.empty() ? "any" : name;
}

// Type plus every constraint a caller must respect: "integer, 1 to 1000, default 100".
std::string type_text(const json& prop) {
    std::vector<std::string> parts{type_name(prop)};
    if (!prop.is_object()) return parts.front();
    if (auto e = prop.find("enum"); e != prop.end() && e->is_array()) {
        std::vector<std::string> values;
        for (const auto& v : *e) values.push_back(literal(v));
        parts.push_back("one of " + join(values, ", "));
    }
    if (auto f = prop.find("format"); f != prop.end()) parts.push_back("format " + literal(*f));
    auto bound = [&](const char* low_key, const char* high_key, std::string_view unit) {
        auto low = prop.find(low_key);
        auto high = prop.find(high_key);
        std::string suffix = unit.empty() ? "" : " " + std::string(unit);
        if (low != prop.end() && high != prop.end())
            parts.push_back(low->dump() + " to " + high->dump() + suffix);
        else if (low != prop.end())
            parts.push_back("at least " + low->dump() + suffix);
        else if (high != prop.end())
            parts.push_back("at most " + high->dump() + suffix);
    };
    bound("minimum", "maximum", "");
    if (auto x = prop.find("exclusiveMinimum"); x != prop.end()) parts.push_back("> " + x->dump());
    if (auto x = prop.find("exclusiveMaximum"); x != prop.end()) parts.push_back("< " + x->dump());
    bound("minLength", "maxLength", "characters");
    bound("minItems", "maxItems", "items");
    if (prop.value("uniqueItems", false)) parts.push_back("unique items");
    if (auto p = prop.find("pattern"); p != prop.end()) parts.push_back("pattern " + literal(*p));
    if (auto d = prop.find("default"); d != prop.end()) parts.push_back("default " + literal(*d));
    return join(parts, ", ");
}

bool is_required(const json& schema, const std::string& name) {
    auto r = schema.find("required");
    return r != schema.end() && r->is_array() && std::find(r->begin(), r->end(), name) != r->end();
}

const json* properties_of(const json& schema) {
    if (!schema.is_object()) return nullptr;
    auto p = schema.find("properties");
    return p != schema.end() && p->is_object() ? &*p : nullptr;
}

// One table row per output field; the fields of objects and of arrays of objects follow their
// parent as `parent.field` / `parent[].field`, since rows are what callers mostly read.
void output_rows(const json& schema, const std::string& prefix, int depth, std::string& out) {
    const json* props = properties_of(schema);
    if (!props) return;
    for (const auto& [name, prop] : props->items()) {
        const std::string path = prefix + name;
        out += "| " + code(path) + " | " + cell(type_text(prop)) + " | " +
               (is_required(schema, name) ? "yes" : "no") + " | " +
               cell(prose(prop.value("description", ""))) + " |\n";
        if (depth >= 3 || !prop.is_object()) continue;
        if (properties_of(prop)) output_rows(prop, path + ".", depth + 1, out);
        if (auto items = prop.find("items"); items != prop.end() && properties_of(*items))
            output_rows(*items, path + "[].", depth + 1, out);
    }
}

std::string kind_of(const mcp::ToolDef& tool) {
    const json& a = tool.annotations;
    if (a.is_object() && a.value("readOnlyHint", false)) return "read-only";
    if (a.is_object() && a.value("destructiveHint", true)) return "write, destructive";
    return "write";
}

const ToolDoc* doc_of(const ToolCatalog& catalog, const std::string& name) {
    for (const auto& doc : catalog)
        if (doc.name == name) return &doc;
    return nullptr;
}

void tool_section(const mcp::ToolDef& tool, const ToolDoc* doc, std::string& out) {
    out += "## " + tool.name + "\n\n";
    if (!tool.title.empty()) out += "**" + prose(tool.title) + "**\n\n";
    out += prose(tool.description) + "\n\n";

    if (tool.annotations.is_object() && !tool.annotations.empty()) {
        std::vector<std::string> hints;
        for (const auto& [key, value] : tool.annotations.items())
            if (key != "title") hints.push_back(code(key + ": " + value.dump()));
        out += "- Annotations: " + join(hints, ", ") + "\n";
    }
    if (!tool.required_scopes.empty()) {
        std::vector<std::string> scopes;
        for (const auto& s : tool.required_scopes) scopes.push_back(code(s));
        out += "- Needs scope: " + join(scopes, ", ") +
               " (hidden from and refused to callers without it, e.g. under `--read-only`)\n";
    }
    if (tool.required_client_capabilities.is_object() &&
        !tool.required_client_capabilities.empty()) {
        std::vector<std::string> caps;
        for (const auto& [cap, value] : tool.required_client_capabilities.items())
            caps.push_back(code(cap));
        out += "- Needs client capability: " + join(caps, ", ") + "\n";
    }
    if (tool.interactive)
        out += "- Interactive: may ask the user or report progress during the call\n";
    if (doc && !doc->toolset.empty()) out += "- Toolset: " + code(doc->toolset) + "\n";
    if (doc && !doc->mapping.empty()) out += "- Gateway: " + prose(doc->mapping) + "\n";
    if (doc && !doc->gateway_action.empty())
        out += "- Gateway action: " + code(doc->gateway_action) +
               " (the tool is hidden when the gateway's discovery does not list it)\n";
    out += "\n";

    out += "### Arguments\n\n";
    const json* args = properties_of(tool.input());
    if (!args || args->empty()) {
        out += "None.\n\n";
    } else {
        out += "| argument | type | required | description |\n|---|---|---|---|\n";
        for (const auto& [name, prop] : args->items())
            out += "| " + code(name) + " | " + cell(type_text(prop)) + " | " +
                   (is_required(tool.input(), name) ? "yes" : "no") + " | " +
                   cell(prose(prop.value("description", ""))) + " |\n";
        out += "\n";
        if (tool.input().value("additionalProperties", json(true)) == json(false))
            out += "Any other argument is refused.\n\n";
    }
    // The schema's examples: valid arguments on the sample gateway (its clients and records),
    // which tests, fuzz seeds and benches call with. tools/list leaves them out (a model on
    // another gateway would copy the sample's ids).
    if (const auto examples = tool.input().find("examples");
        examples != tool.input().end() && examples->is_array() && !examples->empty()) {
        out += "Example (on the sample gateway): `" + examples->front().dump() + "`\n\n";
    }

    out += "### Output\n\n";
    if (!properties_of(tool.output())) {
        out += "Text content only (no `structuredContent` schema).\n\n";
    } else {
        out += "`structuredContent` fields (nested rows: required within their element):\n\n";
        out += "| field | type | required | description |\n|---|---|---|---|\n";
        output_rows(tool.output(), "", 0, out);
        out += "\n";
    }
}

}  // namespace

std::string toolsets_markdown(const ToolCatalog& catalog) {
    std::string out =
        "`serve --toolsets a,b` (or `AGENCY_TOOLSETS`) enables toolsets, `--tools` single tools "
        "(alone: only those), `--exclude-tools` drops tools (it wins); `all` and `default` "
        "(what `serve` enables without `--toolsets`) are every toolset, and `clients` comes with "
        "any toolset. Over HTTP a request may narrow further with the headers `X-MCP-Toolsets`, "
        "`X-MCP-Tools`, `X-MCP-Exclude-Tools` and `X-MCP-Readonly: true`.\n\n";
    out += "| toolset | tools | what for |\n|---|---|---|\n";
    for (const auto& set : toolsets()) {
        std::vector<std::string> names;
        for (const auto& doc : catalog)
            if (doc.toolset == set.name) names.push_back(code(doc.name));
        out += "| " + code(std::string(set.name)) + " | " + join(names, ", ") + " | " +
               cell(std::string(set.description)) + " |\n";
    }
    return out;
}

std::string readme_markdown(const ToolCatalog& catalog) {
    std::string out = "### Toolsets\n\n" + toolsets_markdown(catalog);
    out += "\n### Resources\n\n| URI | what |\n|---|---|\n";
    out += "| `agency://server/usage` | " +
           cell(
               "What the tools are for; cursors, budgets, "
               "confirmation and audit jobs") +
           " |\n";
    for (const TemplateSpec& t : template_specs())
        out += "| `" + t.uri_template + "` | " + cell(prose(t.description)) + " |\n";
    out += "\n### Prompts\n\n| prompt | what | arguments |\n|---|---|---|\n";
    for (const PromptSpec& p : prompt_specs()) {
        std::vector<std::string> args;
        for (const auto& a : p.arguments) args.push_back(code(a.name) + (a.required ? "" : "?"));
        out += "| " + code(p.name) + " | " + cell(prose(p.description)) + " | " + join(args, ", ") +
               " |\n";
    }
    return out;
}

std::string tools_markdown(const mcp::Server& server, const mcp::Principal& principal,
                           const ToolCatalog& catalog) {
    const auto tools = server.visible_tools(principal);
    std::string out;
    out += "# Tool reference\n\n";
    out +=
        "<!-- Generated from the tool definitions by `agency-mcp tools-doc`; do not edit by "
        "hand.\n     Regenerate: build/agency-mcp tools-doc > docs/tools.md -->\n\n";
    const std::string& instructions = server.options().info.instructions;
    if (!instructions.empty()) out += prose(instructions) + "\n\n";
    out += "agency-mcp offers " + std::to_string(tools.size()) +
           " tools. Arguments are checked against each tool's input schema before any gateway "
           "request: a wrong or unknown argument comes back as a tool error (`isError`) naming "
           "it. A list answer that stops early carries `next_cursor`: pass it back unchanged as "
           "`cursor`, with the same other arguments, for the next page. Gateway failures come "
           "back as tool errors whose text is `{\"error\": {\"reason\", \"message\", ...}}`.\n\n";

    out += "## Toolsets\n\n" + toolsets_markdown(catalog) + "\n";
    out += "## Tools\n\n";
    out += "| tool | title | toolset | kind | gateway |\n|---|---|---|---|---|\n";
    for (const auto* tool : tools) {
        const ToolDoc* doc = doc_of(catalog, tool->name);
        out += "| [" + code(tool->name) + "](#" + tool->name + ") | " + cell(prose(tool->title)) +
               " | " + (doc ? doc->toolset : "") + " | " + kind_of(*tool) + " | " +
               cell(doc ? prose(doc->mapping) : "") + " |\n";
    }
    out += "\n";
    // What tools/list leaves to this page (tools/kit/listed_schema.hpp).
    out +=
        "tools/list is in every model's context on connect, so it publishes less than the "
        "tables below (within 32 KiB with every toolset; docs/tool-budget.md). An input "
        "schema leaves out the bounds that only guard the server (`maxLength`, `minLength`, "
        "`maxItems`, `maxProperties`, `pattern`, the range of `max_bytes`: a value past one "
        "is refused naming it), the long per-resource hints of `read_resource`, and the "
        "descriptions of the arguments below, which mean the same on every tool. An output "
        "schema names the members every answer has (`required`); their types and the members "
        "only some answers have (`next_cursor`, `note`, `preview`, ...) are in the tables. "
        "Gateway rows pass every member the gateway sends through, so their types are the "
        "gateway's: the tables give the spec's.\n\n";
    out +=
        "## Arguments many tools share\n\n| argument | meaning |\n|---|---|\n"
        "| `limit` | Rows a page (a list tool), or rows in the answer (a ranking or insight "
        "tool: the top of its order). |\n"
        "| `cursor` | The `next_cursor` of the answer before, passed back unchanged with the "
        "same other arguments, for the next page. |\n"
        "| `fields` | Row members to keep; the others are left out of every row. |\n"
        "| `max_bytes` | The answer's size cap in bytes (2,000 to 2,000,000); rows past it wait "
        "for the next page and `truncated` says so. |\n"
        "| `where` | `{member: value}` or `{member: {op: value}}` with `gt`, `gte`, `lt`, "
        "`lte`, `ne`, `in`, `contains`: every test must hold. |\n"
        "| `order_by`, `direction` | A member to sort by, `asc` or `desc`. |\n"
        "| `idempotency_key` | An action repeated with the same key returns the first result "
        "instead of running again. |\n\n";
    for (const auto* tool : tools) tool_section(*tool, doc_of(catalog, tool->name), out);
    out += surface_markdown();  // resources, templates and prompts (tools/surface/completion.cpp)
    // One trailing newline, as editors save files.
    while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
        out.pop_back();
    return out;
}

}  // namespace agency::tools
