// The read tools' entries: one ToolSpec each, with the page kind that answers it (list_page,
// merged_page, scan_page) or its own handler, and the registration loop.
#include "base/text.hpp"
#include "tools/pipeline/pipeline.hpp"
#include "tools/reads/range_tools.hpp"
#include "tools/kit/views.hpp"
#include "tools/reads/read_tools.hpp"
#include "tools/kit/untrusted_results.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace agency::tools {

namespace {

// A curated read tool and the gateway resources it reads (read_resource offers the others).
struct ReadEntry {
    ToolSpec tool;
    std::vector<std::string> resources;
};

ReadEntry list_entry(const std::shared_ptr<Toolbox>& box, ToolSpec tool, ListSpec spec) {
    spec.tool = tool.name;
    std::vector<std::string> resources{spec.resource};
    tool.handler = [box, spec](const json& args, mcp::RequestContext& ctx) {
        return list_page(*box, spec, args, ctx);
    };
    return {std::move(tool), std::move(resources)};
}

ReadEntry merged_entry(const std::shared_ptr<Toolbox>& box, ToolSpec tool, MergedSpec spec) {
    spec.tool = tool.name;
    std::vector<std::string> resources;
    for (const Source& source : spec.sources) resources.push_back(source.resource);
    tool.handler = [box, spec = std::move(spec)](const json& args, mcp::RequestContext& ctx) {
        return merged_page(*box, spec, args, ctx);
    };
    return {std::move(tool), std::move(resources)};
}

ReadEntry scan_entry(const std::shared_ptr<Toolbox>& box, ToolSpec tool, ScanSpec spec) {
    spec.tool = tool.name;
    std::vector<std::string> resources{spec.resource};
    tool.handler = [box, spec](const json& args, mcp::RequestContext& ctx) {
        return scan_page(*box, spec, args, ctx);
    };
    return {std::move(tool), std::move(resources)};
}

// An audit report without its issue list (get_audit_issues pages through that).
RowShape without_issues() { return {.drop = {"issues"}}; }

// An article without its body (the names deployments use for it), titled alike whichever
// resource it comes from.
RowShape article_shape() {
    return {.drop = {"content", "html", "body", "content_html", "post_content", "markdown"},
            .rename = {{"post_title", "title"}}};
}

// Clients, keywords, rankings and audits.
std::vector<ReadEntry> client_and_audit_tools(const std::shared_ptr<Toolbox>& box) {
    std::vector<ReadEntry> tools;
    tools.push_back(list_entry(box, {.name = "list_clients", .toolset = "clients",
               .title = "List clients",
               .description = "Lists the clients this agency can reach (id, name); every other "
                              "tool takes a client_id. See triage_clients.",
               .mapping = "GET resource=clients (limit, offset from the cursor)"},
              {.resource = "clients", .per_client = false}));

    tools.push_back({ToolSpec{.name = "get_client", .toolset = "clients",
                      .title = "Get client",
                      .description = "Gets one client's record: name, website, location, "
                                     "industry, auto-deploy, deployment target. See "
                                     "get_client_overview.",
                      .mapping = "GET resource=clients, filter_field=id (not_found when absent)",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return get_client(*box, args, ctx);
                      },
                      .view = kClientOverviewView},
                     {"clients"}});

    tools.push_back(list_entry(box, {.name = "list_keywords", .toolset = "rankings",
               .title = "List tracked keywords",
               .description = "Lists a client's tracked keyword rows (every tracking date), "
                              "newest first: keyword, position, url, search volume, difficulty, "
                              "tracking date. See latest_rankings, generate_keyword_ideas.",
               .mapping = "GET resource=keywords, order=tracked_at desc"},
              {.resource = "keywords", .order = "tracked_at", .direction = "desc"}));

    tools.push_back(scan_entry(box, {.name = "list_rankings", .toolset = "rankings",
               .title = "Keyword ranking history",
               .description = "Lists a client's ranking history: every row between two dates, "
                              "newest first: keyword, position, url, date. See latest_rankings.",
               .mapping = "GET resource=keywords, order=tracked_at desc, limit=1000 pages; "
                          "keyword and date range filtered by the tool, stops past `from`",
               .view = kRankingsView},
              {.resource = "keywords",
               .order_field = "tracked_at",
               .fallback_field = "created_at",
               .match_field = "keyword"}));

    tools.push_back({ToolSpec{.name = "ranking_changes", .toolset = "rankings",
                      .title = "Ranking changes over a date range",
                      .description =
                          "Compares keyword positions on two dates: which rose or fell most, "
                          "biggest first; from_position, to_position, change (negative: "
                          "dropped), search_volume, from_url if another page ranked. See "
                          "list_rankings.",
                      .mapping = "GET resource=keywords, order=tracked_at desc, limit=1000 pages "
                                 "from the newest; stops past the tracking date on or before "
                                 "`from`; one entry per keyword held. The note names the "
                                 "tracking dates when they lie over 7 days from those asked",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return ranking_changes(*box, args, ctx);
                      },
                      .view = kRankingsView},
                     {"keywords"}});

    tools.push_back({ToolSpec{.name = "latest_rankings", .toolset = "rankings",
                      .title = "Latest position of each keyword",
                      .description =
                          "Gets each tracked keyword's current position: one row per keyword "
                          "(newest, or as of a date), best first. See list_rankings.",
                      .mapping = "GET resource=keywords, order=tracked_at desc, limit=1000 pages "
                                 "through the history; the first row of each keyword kept. "
                                 "The note says how old the positions are against as_of, and "
                                 "against today when over 7 days",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return latest_rankings(*box, args, ctx);
                      },
                      .view = kRankingsView},
                     {"keywords"}});

    tools.push_back({ToolSpec{.name = "view_ranking_history", .toolset = "views",
                      .description = "Rankings view: one keyword's positions, oldest first.",
                      .mapping = "GET resource=keywords, order=tracked_at desc, limit=1000 "
                                 "pages; the keyword's rows kept, stops past `from`",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return ranking_history(*box, args, ctx);
                      },
                      .view = kRankingsView,
                      .app_only = true},
                     {"keywords"}});

    tools.push_back(merged_entry(box, {.name = "list_audits", .toolset = "audits",
                 .title = "List SEO audits",
                 .description = "Lists a client's SEO audit reports, newest first: url, score, "
                                "issue counts, date, share link. See get_audit_issues.",
                 .mapping = "GET resource=seo_reports, order=created_at desc (every member "
                            "passed through but the issue list)"},
                {.label = "seo_reports",
                 .sources = {{"seo_reports", "created_at", without_issues()}}}));

    tools.push_back({ToolSpec{.name = "get_audit_issues", .toolset = "audits",
                      .title = "Get audit issues",
                      .description = "Gets the issues one SEO audit report found: severity, "
                                     "page, recommendation. If the gateway gives counts only, "
                                     "note says so. See list_audits.",
                      .mapping = "GET resource=seo_reports, filter_field=id (the row's issues, "
                                 "paged by the tool); a report with counts only points to "
                                 "resource=seo_tasks through read_resource when discovery lists "
                                 "it",
                      .handler = [box](const json& args, mcp::RequestContext& ctx) {
                          return get_audit_issues(*box, args, ctx);
                      },
                      .view = kAuditView},
                     {"seo_reports"}});
    return tools;
}

// Backlinks, citations, articles, calls and reports.
std::vector<ReadEntry> content_tools(const std::shared_ptr<Toolbox>& box) {
    std::vector<ReadEntry> tools;


    tools.push_back(list_entry(box, {.name = "list_backlinks", .toolset = "backlinks",
               .title = "List backlinks",
               .description = "Lists a client's backlinks, most linking domains first "
                              "(order_by domain_authority for the strongest): source url and "
                              "domain, anchor, target page, domain authority, first seen, "
                              "status. See find_lost_backlinks.",
               .mapping = "GET resource=backlinks, order=linking_domains desc"},
              {.resource = "backlinks", .order = "linking_domains", .direction = "desc"}));

    tools.push_back(list_entry(box, {.name = "list_citations", .toolset = "local",
               .title = "List citations",
               .description = "Lists a client's directory listings (citations), newest "
                              "first: directory, listing status, NAP accuracy and issues, "
                              "listing url.",
               .mapping = "GET resource=citations, order=created_at desc"},
              {.resource = "citations", .order = "created_at", .direction = "desc"}));

    tools.push_back(merged_entry(box, {.name = "list_articles", .toolset = "content",
                 .title = "List articles",
                 .description = "Lists a client's published and draft articles (blog, then "
                                "geo-targeted), newest first: title, keyword, status, url, "
                                "deployment target, publish date. See generate_article.",
                 .mapping = "GET resource=blogs, then resource=geo_articles; order=created_at "
                            "desc, filter_field=status when given (every member passed through but the "
                            "body; post_title named title)"},
                {.label = "blogs,geo_articles",
                 .sources = {{"blogs", "created_at", article_shape()},
                             {"geo_articles", "created_at", article_shape()}},
                 .filter_field = "status",
                 .filter_argument = "status",
                 .tag_rows = true}));

    tools.push_back(scan_entry(box, {.name = "list_calls", .toolset = "calls",
               .title = "List calls",
               .description = "Lists a client's tracked phone calls between two dates, newest "
                              "first: caller, source, duration, status, lead_grade if graded "
                              "(else call_scores via read_resource), transcript.",
               .mapping = "GET resource=call_tracking_calls, order=created_at desc, limit=1000 "
                          "pages; date range filtered by the tool, stops past `from`"},
              {.resource = "call_tracking_calls",
               .order_field = "created_at",
               .fallback_field = "created_at"}));

    tools.push_back(merged_entry(box, {.name = "list_reports", .toolset = "reports",
                 .title = "List shareable reports",
                 .description = "Lists a client's reports with share links, newest first: SEO "
                                "audits (score, issues found), then LLM visibility (score, "
                                "mention count).",
                 .mapping = "GET resource=seo_reports (order=created_at desc), then "
                            "resource=llm_reports (order=scored_at desc); seo_reports without the "
                            "issue list, llm_reports' visibility_score named score"},
                {.label = "seo_reports,llm_reports",
                 .sources = {{"seo_reports", "created_at", without_issues()},
                             {"llm_reports", "scored_at",
                              RowShape{.rename = {{"visibility_score", "score"},
                                                  {"scored_at", "created_at"}}}}},
                 .tag_rows = true}));
    return tools;
}

std::vector<ReadEntry> curated_entries(const std::shared_ptr<Toolbox>& box) {
    std::vector<ReadEntry> entries = client_and_audit_tools(box);
    for (ReadEntry& entry : content_tools(box)) entries.push_back(std::move(entry));
    return entries;
}

// The order and filter_field values the spec suggests per resource (the gateway accepts any
// value of its two global lists; these are the ones that mean something for the resource).
struct SuggestedUse {
    std::string_view resource, order, filter;
};
constexpr SuggestedUse kSuggested[] = {
    {"seo_tasks", "created_at", "status, category_id"},
    {"blog_categories", "", "id"},
    {"blog_authors", "", "id"},
    {"topical_maps", "created_at", ""},
    {"press_releases", "", "status"},
    {"anchor_texts", "", "source_id"},
    {"top_linked_pages", "linking_domains", ""},
    {"domain_metrics", "fetched_at", ""},
    {"backlink_outreach", "", "status"},
    {"backlink_summaries", "", "status"},
    {"gbp_profiles", "", "status"},
    {"gbp_posts", "", "status"},
    {"reviews", "created_at", "sentiment"},
    {"locations", "", "id"},
    {"grid_searches", "tracked_at", ""},
    {"competitors", "appearances", ""},
    {"ai_summaries", "", "source_id"},
    {"ai_training", "", "source_id"},
    {"call_scores", "", "lead_grade, quality_grade"},
    {"call_transcriptions", "", "lead_grade, quality_grade"},
    {"integrations", "", "status"},
};

// "value (resource, resource); ...": the useful values of one parameter for the discovered
// resources, grouped by value so the list stays short in every model's context.
std::string useful_values(const json& resources, bool order) {
    std::map<std::string, std::vector<std::string>, std::less<>> by_value;
    for (const auto& name : resources) {
        const std::string resource = name.get<std::string>();
        std::string_view values = order ? "created_at" : "id, status";
        for (const SuggestedUse& s : kSuggested)
            if (s.resource == resource) values = order ? s.order : s.filter;
        if (resource.ends_with("_calls")) values = order ? "created_at" : "";
        if (values.empty()) values = order ? "created_at" : "";
        if (!values.empty()) by_value[std::string(values)].push_back(resource);
    }
    // Every resource has an order value: the most common one is said last, for the rest.
    std::string common;
    std::size_t most = 0;
    if (order)
        for (const auto& [value, names] : by_value)
            if (names.size() > most) most = names.size(), common = value;
    std::string text;
    for (const auto& [value, names] : by_value)
        if (value != common) text += (text.empty() ? "" : "; ") + value + " (" + base::join(names) + ")";
    if (!common.empty()) text += (text.empty() ? "" : "; ") + common + " (the others)";
    return text;
}

json read_resource_patch(const json& resources) {
    // The useful values are the spec's pushdown table: `where` and `order_by` use it without
    // being told, so tools/list leaves the lists out ("x-listed") and docs/tools.md keeps them.
    return {{"properties",
             {{"resource", {{"enum", resources}}},
              {"order",
               {{"description", "Field to order by. Useful: " + useful_values(resources, true)},
                {"x-listed", "Field to order by"}}},
              {"direction",
               {{"description", "asc: oldest or smallest first; desc (default): newest or "
                                "largest first"},
                {"x-listed", ""}}},
              {"filter_field",
               {{"description", "Exact-match filter field (needs filter_value). Useful: " +
                                    useful_values(resources, false)},
                {"x-listed", "Exact-match filter field (needs filter_value)"}}}}}};
}

}  // namespace

bool covered_by_curated_tool(std::string_view resource) {
    // The entries' own resources (no Toolbox needed: the handlers are never called here).
    static const std::set<std::string, std::less<>> covered = [] {
        std::set<std::string, std::less<>> names;
        for (const ReadEntry& entry : curated_entries(nullptr))
            names.insert(entry.resources.begin(), entry.resources.end());
        return names;
    }();
    return covered.contains(resource);
}

ToolCatalog register_read_tools(mcp::Server& server, const std::shared_ptr<Toolbox>& box) {
    ToolCatalog docs;
    // Every read tool answers with gateway rows: its results are marked untrusted.
    auto add = [&](ToolSpec tool) {
        tool.handler = marking_untrusted(std::move(tool.handler));
        docs.push_back(add_tool(server, std::move(tool)));
    };
    for (ReadEntry& entry : curated_entries(box)) add(std::move(entry.tool));

    // Every discovered resource no curated tool covers, so a deployment's new resources are
    // readable without a release. A failing discovery propagates: start-up reports it.
    json resources = json::array();
    for (const auto& name : box->gateway().discovery()->resources)
        if (!covered_by_curated_tool(name)) resources.push_back(name);
    if (resources.empty()) return docs;
    add(
             {.name = "read_resource", .toolset = "datasets",
              .title = "Read any resource",
              .description = "Reads rows of another gateway resource (reviews, competitors, "
                             "call_scores, ...), optionally ordered and filtered. Prefer a "
                             "dedicated list tool where one exists.",
              .input_schema_patch = read_resource_patch(resources),
              .mapping = "GET resource=<resource> with order, direction, filter_field, "
                         "filter_value passed through",
              .handler = [box](const json& args, mcp::RequestContext& ctx) {
                  ListSpec spec{.tool = "read_resource",
                                .resource = args.at("resource").get<std::string>(),
                                .order = string_arg(args, "order"),
                                .direction = string_arg(args, "direction"),
                                .filter_field = string_arg(args, "filter_field"),
                                .filter_argument = "filter_value"};
                  return list_page(*box, spec, args, ctx);
              }});
    return docs;
}

}  // namespace agency::tools
