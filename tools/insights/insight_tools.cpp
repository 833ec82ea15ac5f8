// The insight tools' entries (toolset `insights`): read scope, read-only, an output schema each,
// and the compact text the core writes from their structured answers.
#include "tools/insights/insights.hpp"

#include "tools/kit/untrusted_results.hpp"
#include "tools/pipeline/pipeline.hpp"
#include "tools/surface/surface.hpp"

namespace agency::tools::insights {

namespace {

mcp::ToolResult client_overview_tool(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = client_of(args);
    json out = client_overview(box, client_id, ctx);
    if (out.is_null())
        return tool_error("not_found", "no client with id \"" + client_id +
                                           "\" is reachable with this key; list_clients "
                                           "lists the ids");
    mcp::ToolResult result = mcp::ToolResult::structured(out.dump());
    mark_untrusted(result);
    return result;
}

using Compute = mcp::ToolResult (*)(Toolbox&, const json&, mcp::RequestContext&);

ToolSpec insight(const std::shared_ptr<Toolbox>& box, std::string name, std::string title,
                 std::string description, std::string mapping, Compute compute) {
    return {.name = std::move(name),
            .toolset = "insights",
            .title = std::move(title),
            .description = std::move(description),
            .mapping = std::move(mapping),
            .handler = [box, compute](const json& args, mcp::RequestContext& ctx) {
                return compute(*box, args, ctx);
            }};
}

}  // namespace

ToolCatalog register_insight_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box) {
    std::vector<ToolSpec> specs;
    specs.push_back(insight(
        box, "get_client_overview", "A client's overview",
        "Summarises one client at a glance: profile, keyword coverage and dates, latest audit, "
        "articles by status. See get_client.",
        "GET clients (filter id), keywords (newest page and oldest row), seo_reports (newest), "
        "blogs and geo_articles (counts, published): 7 reads at once",
        client_overview_tool));
    specs.push_back(insight(
        box, "find_quick_wins", "Quick wins",
        "Finds quick wins (low-hanging fruit): keywords ranked 4-20 (min_position, max_position; "
        "page 2: 11-20) on the newest tracking date, most estimated clicks gained at position 3 "
        "first; position_change vs 4 tracking dates earlier (+ = improved).",
        "GET keywords, order=tracked_at desc, pages of 1000 until 5 tracking dates are read",
        find_quick_wins));
    specs.push_back(insight(
        box, "find_cannibalization", "Cannibalization",
        "Finds keyword cannibalization: keywords two or more of the client's pages (urls) ranked "
        "for; per url its dates, best and last position; switches: how often the top url "
        "changed.",
        "GET keywords, order=tracked_at desc, pages of 1000 back to `from`",
        find_cannibalization));
    specs.push_back(insight(
        box, "find_declining_pages", "Declining pages",
        "Finds pages losing rankings: volume-weighted position over the newest `weeks` weeks vs "
        "the weeks before, estimated monthly clicks lost, keywords that fell most. See "
        "optimize_page.",
        "GET keywords, order=tracked_at desc, pages of 1000 back 2 x weeks weeks",
        find_declining_pages));
    specs.push_back(insight(
        box, "find_lost_backlinks", "Lost backlinks",
        "Finds backlinks the gateway marks lost, highest authority first, with total_lost and "
        "total_backlinks. See list_backlinks.",
        "GET backlinks, pages of 1000 through every row; the top `limit` lost rows held",
        find_lost_backlinks));
    specs.push_back(insight(
        box, "triage_clients", "Client triage",
        "Ranks every client this caller reaches, most urgent first, with reasons and facts: "
        "keywords down 3+ over `weeks`, clicks change, audit score and change, inaccurate "
        "citations, negative reviews, lost backlinks. See get_client_overview.",
        "GET clients, then per client (8 at once, one call budget): keywords (newest dates), "
        "seo_reports (2 newest), citations, reviews (the window), backlinks",
        triage_clients));
    ToolCatalog docs;
    for (ToolSpec& spec : specs) docs.push_back(add_tool(server, std::move(spec)));
    return docs;
}

}  // namespace agency::tools::insights
