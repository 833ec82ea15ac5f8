#include "tools/kit/toolsets.hpp"

#include <algorithm>

namespace agency::tools {

const std::vector<Toolset>& toolsets() {
    static const std::vector<Toolset> all = {
        {"clients", "Find clients and their ids (always enabled with any toolset)"},
        {"rankings", "Tracked keywords, ranking history and changes, keyword ideas"},
        {"audits", "Site audits (run, poll, reports, issues), page optimisation, indexing"},
        {"backlinks", "Backlinks and their refresh"},
        {"content", "Articles (list, generate, deploy), topical maps, press releases"},
        {"local", "Citations, business-profile posts, local grid scans"},
        {"calls", "Tracked calls"},
        {"outreach", "Outreach emails (draft, send)"},
        {"reports", "Visibility reports and answer-engine (LLM) visibility"},
        {"datasets", "Any other dataset the gateway lists (reviews, competitors, ...)"},
        {"insights",
         "Answers computed over every page: quick wins, cannibalization, declining "
         "pages, lost backlinks, a client's overview, which clients need attention"},
        {"views",
         "The MCP Apps views' own tools (app-only: only clients that render views "
         "get them; always enabled with any toolset; --no-ui turns views off)"},
    };
    return all;
}

mcp::ToolGroups tool_groups() {
    mcp::ToolGroups groups;
    std::vector<std::string> names;
    for (const auto& set : toolsets()) names.emplace_back(set.name);
    groups.aliases["all"] = names;
    groups.aliases["default"] = names;
    groups.always = {"clients", "views"};
    return groups;
}

std::string server_instructions(const std::vector<const mcp::ToolDef*>& enabled, bool read_only) {
    auto has = [&](std::string_view name) {
        return std::any_of(enabled.begin(), enabled.end(),
                           [&](const mcp::ToolDef* t) { return t->name == name; });
    };
    std::string sets;
    for (const auto& set : toolsets()) {
        // The views' own tools are not the model's (app-only): instructions leave them out.
        const bool on = std::any_of(enabled.begin(), enabled.end(), [&](const mcp::ToolDef* t) {
            return t->group == set.name && !t->app_only();
        });
        if (on) sets += (sets.empty() ? "" : ", ") + std::string(set.name);
    }
    std::string text = "Tools over an SEO agency's platform (toolsets: " +
                       (sets.empty() ? std::string("none") : sets) + ").";
    if (read_only) text += " Read-only: no action tools.";
    if (has("list_clients")) text += " list_clients gives the client_id every other tool takes.";
    if (has("triage_clients"))
        text +=
            " For status and trends prefer the insights (get_client_overview, "
            "triage_clients, find_*): one call each.";
    // The shared arguments tools/list leaves undescribed (tools/kit/listed_schema.hpp).
    text +=
        " Lists page by limit and cursor (= next_cursor), keep fields, filter by where, "
        "sort by order_by; max_bytes caps answers.";
    if (has("generate_article")) text += " A repeated idempotency_key returns the first result.";
    if (has("deploy_article") || has("send_prospect_email"))
        text += " Deploys and sends wait for a person's confirmation.";
    if (has("run_seo_audit")) text += " run_seo_audit queues an audit: poll get_audit_status.";
    return text;
}

}  // namespace agency::tools
