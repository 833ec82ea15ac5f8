// completion/complete for the prompts' and resource templates' arguments (the only contexts
// any era defines: ref/prompt and ref/resource), and the docs of the whole surface.
#include <algorithm>

#include "base/text.hpp"
#include "tools/surface/surface.hpp"

namespace agency::tools {

namespace {

constexpr std::size_t kMaxValues = 100;  // the protocol's bound on one answer

// The kind of value an argument takes, from the prompt's spec or the template's variable.
std::optional<PromptArgumentSpec::Type> argument_type(const json& ref, const std::string& name) {
    using Type = PromptArgumentSpec::Type;
    const std::string kind = ref.value("type", "");
    if (kind == "ref/prompt") {
        const std::string prompt = ref.value("name", "");
        for (const PromptSpec& spec : prompt_specs()) {
            if (spec.name != prompt) continue;
            for (const auto& a : spec.arguments)
                if (a.name == name) return a.type;
        }
        return std::nullopt;
    }
    if (kind != "ref/resource") return std::nullopt;
    const std::string uri = ref.value("uri", "");
    const auto templates = template_specs();
    const bool known = std::any_of(templates.begin(), templates.end(),
                                   [&](const TemplateSpec& t) { return t.uri_template == uri; });
    if (!known || uri.find("{" + name + "}") == std::string::npos) return std::nullopt;
    if (name == "client_id") return Type::client_id;
    if (name == "report_id") return Type::report_id;
    if (name == "article_id") return Type::text;  // listed below by name
    return std::nullopt;
}

// Values starting with `prefix` (case-insensitive), at most kMaxValues, with total/hasMore.
json matching(const std::vector<std::string>& values, const std::string& prefix) {
    json out = json::array();
    std::size_t total = 0;
    for (const std::string& v : values) {
        if (v.size() < prefix.size() || !base::iequals(v.substr(0, prefix.size()), prefix))
            continue;
        if (++total <= kMaxValues) out.push_back(v);
    }
    return {{"values", std::move(out)}, {"total", total}, {"hasMore", total > kMaxValues}};
}

std::string context_client(const json& context) {
    auto args = context.find("arguments");
    if (args == context.end() || !args->is_object()) return "";
    auto id = args->find("client_id");
    return id != args->end() && id->is_string() ? id->get<std::string>() : "";
}

}  // namespace

json complete_argument(SurfaceLists& lists, const json& ref, const json& argument,
                       const json& context, const mcp::Principal& caller) {
    using Type = PromptArgumentSpec::Type;
    const json none = {{"values", json::array()}, {"total", 0}, {"hasMore", false}};
    const std::string name = argument.value("name", "");
    const json& raw = argument.contains("value") ? argument["value"] : json("");
    const std::string value = raw.is_string() ? raw.get<std::string>() : "";
    const auto type = argument_type(ref, name);
    if (!type) return none;
    const std::string client = context_client(context);
    try {
        if (*type == Type::client_id) {
            std::vector<std::string> ids;
            for (const auto& c : lists.clients())
                if (caller.reaches_client(c.id)) ids.push_back(c.id);
            return matching(ids, value);
        }
        // The rest are a chosen client's: nothing (and no gateway read) for one out of reach.
        if (client.empty() || !caller.reaches_client(client)) return none;
        if (*type == Type::keyword) return matching(lists.keywords(client), value);
        if (*type == Type::report_id) return matching(lists.report_ids(client), value);
        if (name == "article_id") return matching(lists.article_ids(client), value);
    } catch (const gateway::Error&) {
        return none;  // completion is a hint: a failed read offers nothing rather than an error
    }
    return none;
}

int completion_cost(const SurfaceLists& lists, const json& ref, const json& argument,
                    const json& context) {
    using Type = PromptArgumentSpec::Type;
    const auto type = argument_type(ref, argument.value("name", ""));
    if (!type) return 1;
    if (*type == Type::client_id) return lists.clients_cached() ? 1 : SurfaceLists::kClientPages;
    const std::string client = context_client(context);
    if (client.empty()) return 1;
    if (*type == Type::keyword) return 1;  // one read, cached or not
    if (*type == Type::report_id) return 1;
    if (argument.value("name", "") == "article_id")
        return lists.cached_now("articles", client) ? 1 : 2;  // blogs, geo articles
    return 1;
}

// --- docs ------------------------------------------------------------------------------------

std::string surface_markdown() {
    std::string out = "## Resources\n\n";
    out += "| URI | name | type | what |\n|---|---|---|---|\n";
    out +=
        "| `agency://server/usage` | usage | text/markdown | What the tools are for; cursors, "
        "budgets, confirmation and audit jobs. |\n";
    out +=
        "| `agency://clients/{client_id}/overview` (one per client, listed) | "
        "overview-{client_id} | application/json | The client overview below. |\n\n";
    out +=
        "### Resource templates\n\n| URI template | name | title | units | what |\n"
        "|---|---|---|---|---|\n";
    for (const TemplateSpec& t : template_specs())
        out += "| `" + t.uri_template + "` | " + t.name + " | " + t.title + " | " +
               std::to_string(t.cost) + " | " + t.description + " |\n";
    out +=
        "\n**units**: what one read is charged against the caller's rate limit (`serve "
        "--rate-limit`): the gateway reads it makes, at least 1. A tool call, a prompt and a "
        "completion cost 1 unit (a completion that must first read a list from the gateway: "
        "those reads, up to 5); `resources/list` costs 5 when it reads the client list "
        "(kept 60 s), else nothing.\n";
    out +=
        "\nAn unknown URI is error -32002 (2025-11-25 and older) or -32602 (2026-07-28). "
        "`agency://audit-jobs/{audit_id}` can be subscribed to (legacy sessions with a "
        "notification path, i.e. stdio): `notifications/resources/updated` follows each "
        "change of the job. Completion (`completion/complete`) offers client ids, a chosen "
        "client's report and article ids, and its keywords for prompt arguments.\n\n";
    out += "## Prompts\n\n";
    for (const PromptSpec& p : prompt_specs()) {
        out += "### " + p.name + "\n\n**" + p.title + "**: " + p.description + "\n\n";
        out += "| argument | required | what |\n|---|---|---|\n";
        for (const auto& a : p.arguments)
            out += "| `" + a.name + "` | " + (a.required ? "yes" : "no") + " | " + a.description +
                   " |\n";
        out += "\n";
    }
    return out;
}

}  // namespace agency::tools
