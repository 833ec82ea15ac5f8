// Generation tools: one gateway POST each (generate_*, optimize_page, index_url,
// refresh_backlinks, run_local_grid_scan, analyze_llm_visibility), with credits and
// idempotency from the pipeline. generate_article confirms first where the client auto-deploys.
#include <optional>
#include <string_view>
#include <utility>

#include "tools/actions/action_internal.hpp"
#include "tools/actions/outreach_internal.hpp"

namespace agency::tools {

// (action_internal.hpp)
// What the `recipient` argument's schema pattern (^[^@\s]+@[^@\s]+\.[^@\s]+$, at most 254
// characters) asks of an address, asked of the one a gateway's draft carries too: a gateway may
// fill it with a name or a placeholder, and a send must not go to that.
bool plausible_address(std::string_view text) {
    if (text.empty() || text.size() > 254) return false;
    for (char c : text)
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') return false;
    const std::size_t at = text.find('@');
    if (at == 0 || at == std::string_view::npos || text.find('@', at + 1) != std::string_view::npos)
        return false;
    const std::size_t dot = text.find('.', at + 2);
    return dot != std::string_view::npos && dot + 1 < text.size();
}

namespace {

ActionEntry refresh_backlinks() {
    return {.spec = {.name = "refresh_backlinks",
                     .toolset = "backlinks",
                     .title = "Refresh backlinks",
                     .description = "Refreshes a client's backlink profile from the data "
                                    "provider (profile_id); repeating it adds no duplicate. Read "
                                    "it with list_backlinks.",
                     .idempotent = true,
                     .gateway_action = "fetch_backlinks",
                     .mapping = "POST action=fetch_backlinks (no fields)"},
            .id_field = "profile_id",
            .default_status = "refreshed",
            .spends_credits = false};
}

ActionEntry generate_keyword_ideas() {
    return {.spec = {.name = "generate_keyword_ideas",
                     .toolset = "rankings",
                     .title = "Generate keyword ideas",
                     .description = "Generates keyword ideas with live volume and difficulty "
                                    "from a seed; returns batch_id. See list_keywords. Spends "
                                    "credits.",
                     .idempotent = false,
                     .gateway_action = "generate_keywords",
                     .mapping = "POST action=generate_keywords {seed}"},
            .id_field = "batch_id",
            .default_status = "generated",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                json body = json::object();
                if (args.contains("seed")) body["seed"] = args["seed"];
                return body;
            }};
}

ActionEntry generate_topical_map() {
    return {.spec = {.name = "generate_topical_map",
                     .toolset = "content",
                     .title = "Generate topical map",
                     .description = "Builds a topical authority map (pillars and clusters) for a "
                                    "topic; returns map_id. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_topical_map",
                     .mapping = "POST action=generate_topical_map {topic}"},
            .id_field = "map_id",
            .default_status = "generated",
            .fields =
                [](Toolbox&, const json& args, mcp::RequestContext&) {
                    return json{{"topic", args.at("topic")}};
                },
            .finish =
                [](ActionRuntime&, const json&, const json& data, json& result,
                   const mcp::RequestContext&) {
                    set_title(result, data, {"title", "topic"});
                }};
}

// generate_article's status, from what the gateway says: published (or deployed, live) and its
// address when it went live, drafted when it says draft. An auto-deploy client's article the
// answer says nothing of is read back (read_back_article): it may be live.
void article_outcome(Toolbox& box, const json& args, const json& data, json& result,
                     const mcp::RequestContext& ctx) {
    const json url = first_text(data, {"url", "permalink", "link"});
    if (!url.is_null()) result["url"] = url;
    if (says_live(data)) {
        result["status"] = "published";
        return;
    }
    if (first_text(data, {"status"}).is_null() && result.value("auto_deploy", false))
        article_status_from_record(box, args.at("client_id").get<std::string>(), id_text(data),
                                   "This client has auto-deploy on, so the gateway may have "
                                   "published the article, but",
                                   result, ctx.stop);
}

ActionEntry generate_article(const std::shared_ptr<Toolbox>& box) {
    return {
        .spec = {.name = "generate_article",
                 .toolset = "content",
                 .title = "Generate article",
                 .description =
                     "Drafts a blog article (post) for a target keyword; returns article_id, "
                     "title, word count. Spends credits. With auto-deploy on it goes live at "
                     "once, so a person confirms first; else see deploy_article.",
                 .idempotent = false,
                 .gateway_action = "generate_blog",
                 .mapping =
                     "POST action=generate_blog {keyword}; article_id = data.id, "
                     "title = data.post_title. Reads resource=clients first: with "
                     "auto_deploy true, the POST waits for confirmation, and an answer that does "
                     "not say whether the article went live is checked by reading "
                     "resource=blogs by id"},
        .id_field = "article_id",
        .default_status = "drafted",
        .fields =
            [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"keyword", args.at("keyword")}};
            },
        .finish =
            [box](ActionRuntime&, const json& args, const json& data, json& result,
                  const mcp::RequestContext& ctx) {
                set_title(result, data, {"post_title", "title"});
                if (auto it = data.find("word_count"); it != data.end() && it->is_number())
                    result["word_count"] = *it;
                article_outcome(*box, args, data, result, ctx);
            },
        .preview = [box](const json& args, mcp::RequestContext& ctx) -> Preview {
            const std::string client_id = args.at("client_id").get<std::string>();
            // The spec names no field; the sample gateway's is auto_deploy. Absent: off.
            const std::optional<json> found = auto_deploy_client(*box, client_id, ctx.stop);
            if (!found) return Preview{.needed = false};
            const json& client = *found;
            const std::string keyword = args.at("keyword").get<std::string>();
            json site = shown_text(first_string(client, {"website", "domain", "name"}));
            json target = shown_text(first_string(client, {"deployment_target"}));
            std::string where = site.is_null() ? "client " + client_id : site.get<std::string>();
            if (!target.is_null()) where += " via " + target.get<std::string>();
            return Preview{
                .message = "Generate an article for the keyword \"" + keyword +
                           "\" and publish it on " + where +
                           " at once: this client has auto-deploy on, so it goes live "
                           "without a further step. Its title and text are written by the "
                           "gateway's generator and cannot be shown before; deploy_article "
                           "is not asked again. It spends credits.",
                .details = {{"action", "generate_blog"},
                            {"keyword", keyword},
                            {"site", site},
                            {"deployment_target", target},
                            {"title", nullptr},
                            {"excerpt", nullptr},
                            {"auto_deploy", true}}};
        }};
}

ActionEntry optimize_page() {
    return {.spec = {.name = "optimize_page",
                     .toolset = "audits",
                     .title = "Optimize page",
                     .description = "Generates on-page optimisation recommendations for a URL "
                                    "(optionally one keyword) as an SEO task; returns task_id. "
                                    "See find_declining_pages. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "optimize_page",
                     .mapping = "POST action=optimize_page {url, keyword?}; task_id = the "
                                "seo_tasks record"},
            .id_field = "task_id",
            .default_status = "pending",
            .fields =
                [](Toolbox&, const json& args, mcp::RequestContext&) {
                    json body{{"url", args.at("url")}};
                    if (args.contains("keyword")) body["keyword"] = args["keyword"];
                    return body;
                },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result,
                         const mcp::RequestContext&) { set_title(result, data, {"title"}); }};
}

ActionEntry index_url() {
    return {.spec = {.name = "index_url",
                     .toolset = "audits",
                     .title = "Submit URL for indexing",
                     .description = "Submits a URL to search engines for indexing (as an SEO "
                                    "task); returns task_id.",
                     .idempotent = false,
                     .gateway_action = "index_url",
                     .mapping = "POST action=index_url {url}; task_id = the seo_tasks record"},
            .id_field = "task_id",
            .default_status = "submitted",
            .fields = [](Toolbox&, const json& args, mcp::RequestContext&) {
                return json{{"url", args.at("url")}};
            }};
}

ActionEntry generate_press_release() {
    return {.spec = {.name = "generate_press_release",
                     .toolset = "content",
                     .title = "Generate press release",
                     .description = "Drafts a press release with the topic as headline; returns "
                                    "press_release_id. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_press_release",
                     .mapping = "POST action=generate_press_release {headline: topic}"},
            .id_field = "press_release_id",
            .default_status = "drafted",
            .fields =
                [](Toolbox&, const json& args, mcp::RequestContext&) {
                    return json{{"headline", args.at("topic")}};
                },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result,
                         const mcp::RequestContext&) { set_title(result, data, {"headline"}); }};
}

ActionEntry generate_gbp_post() {
    return {.spec = {.name = "generate_gbp_post",
                     .toolset = "local",
                     .title = "Generate business-profile post",
                     .description = "Drafts a Google Business Profile post about a topic; "
                                    "returns post_id. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_gbp_post",
                     .mapping = "POST action=generate_gbp_post {topic}"},
            .id_field = "post_id",
            .default_status = "drafted",
            .fields =
                [](Toolbox&, const json& args, mcp::RequestContext&) {
                    return json{{"topic", args.at("topic")}};
                },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result,
                         const mcp::RequestContext&) { set_title(result, data, {"topic"}); }};
}

ActionEntry run_local_grid_scan() {
    return {.spec = {.name = "run_local_grid_scan",
                     .toolset = "local",
                     .title = "Run local grid scan",
                     .description = "Runs a local grid scan: a keyword's local (map) rank at "
                                    "points around the client's location; returns scan_id. "
                                    "Spends credits.",
                     .idempotent = false,
                     .gateway_action = "run_grid_search",
                     .mapping = "POST action=run_grid_search {keyword, lat, lng}; lat/lng from "
                                "lat+lng arguments, else resource=locations by location_id, "
                                "else resource=clients by id"},
            .id_field = "scan_id",
            .default_status = "completed",
            .fields =
                [](Toolbox& tb, const json& args, mcp::RequestContext& ctx) {
                    json body{{"keyword", args.at("keyword")}};
                    const bool has_lat = args.contains("lat");
                    if (has_lat != args.contains("lng"))
                        throw gateway::Error(gateway::ErrorReason::validation,
                                             "pass both lat and lng, or neither (then the client's "
                                             "location is used)");
                    if (has_lat) {
                        body["lat"] = args["lat"];
                        body["lng"] = args["lng"];
                        return body;
                    }
                    const std::string client_id = args.at("client_id").get<std::string>();
                    const std::string location_id = string_arg(args, "location_id");
                    const json row =
                        location_id.empty()
                            ? client_record(tb, client_id, ctx.stop)
                            : first_row(tb,
                                        {.resource = "locations",
                                         .client_id = client_id,
                                         .filter_field = "id",
                                         .filter_value = location_id},
                                        "unknown location_id " + location_id + " for client_id " +
                                            client_id + "; read_resource locations lists them",
                                        ctx.stop);
                    const auto lat = number(row, "lat");
                    const auto lng = number(row, "lng");
                    if (!lat || !lng)
                        throw gateway::Error(gateway::ErrorReason::validation,
                                             "no coordinates are on record for " +
                                                 (location_id.empty() ? "client " + client_id
                                                                      : "location " + location_id) +
                                                 "; pass lat and lng, or a location_id");
                    body["lat"] = *lat;
                    body["lng"] = *lng;
                    return body;
                },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result,
                         const mcp::RequestContext&) { set_title(result, data, {"keyword"}); }};
}

ActionEntry analyze_llm_visibility() {
    return {.spec = {.name = "analyze_llm_visibility",
                     .toolset = "reports",
                     .title = "Analyze AI answer visibility",
                     .description = "Checks LLM visibility: whether AI answer engines (ChatGPT, "
                                    "Gemini, ...) mention the client (brand_name from its "
                                    "record; the default prompt asks for the best providers of "
                                    "its industry in its city); returns report_id. Spends "
                                    "credits.",
                     .idempotent = false,
                     .gateway_action = "run_llm_visibility",
                     .mapping = "POST action=run_llm_visibility {prompt, brand_name}; brand_name "
                                "from resource=clients (brand_name, else name); prompt given or "
                                "\"Who are the best <industry> providers in <city>, <state>?\""},
            .id_field = "report_id",
            .default_status = "completed",
            .fields =
                [](Toolbox& tb, const json& args, mcp::RequestContext& ctx) {
                    const json client =
                        client_record(tb, args.at("client_id").get<std::string>(), ctx.stop);
                    json brand = first_string(client, {"brand_name", "name"});
                    if (brand.is_null())
                        throw gateway::Error(gateway::ErrorReason::upstream,
                                             "the client record carries no brand_name or name");
                    std::string prompt = string_arg(args, "prompt");
                    if (prompt.empty()) {
                        const std::string industry = client.value("industry", "");
                        const std::string city = client.value("city", "");
                        const std::string state = client.value("state", "");
                        prompt =
                            "Who are the best " + (industry.empty() ? "local" : industry) +
                            " providers" +
                            (city.empty() ? std::string()
                                          : " in " + city + (state.empty() ? "" : ", " + state)) +
                            "?";
                    }
                    return json{{"prompt", prompt}, {"brand_name", brand}};
                },
            .finish = [](ActionRuntime&, const json&, const json& data, json& result,
                         const mcp::RequestContext&) { set_title(result, data, {"prompt"}); }};
}

ActionEntry generate_outreach_email(const std::shared_ptr<Toolbox>& box) {
    return {.spec = {.name = "generate_outreach_email",
                     .toolset = "outreach",
                     .title = "Draft outreach email",
                     .description = "Drafts and stores a link-building outreach email (pitch) to "
                                    "a prospect site; returns email_id, recipient, subject, body "
                                    "(null if the draft lacks them). Never sends: see "
                                    "send_prospect_email. Spends credits.",
                     .idempotent = false,
                     .gateway_action = "generate_outreach_email",
                     .mapping = "POST action=generate_outreach_email {prospectUrl: prospect}; "
                                "the draft is kept in the server's store under email_id: its "
                                "recipient (the argument, else email_to, to, recipient, email, "
                                "...), subject (subject, subject_line, ...) and body (html, "
                                "body_html, body, content, text, ...), each looked for in the "
                                "answer and one object down, else in its backlink_outreach row "
                                "read by the answer's id; *_from names the member used "
                                "(record:<member> when read from the row)"},
            .id_field = "email_id",
            .default_status = "drafted",
            .fields =
                [](Toolbox&, const json& args, mcp::RequestContext&) {
                    return json{{"prospectUrl", args.at("prospect")}};
                },
            .finish =
                [box](ActionRuntime& runtime, const json& args, const json& data, json& result,
                      const mcp::RequestContext& ctx) {
                    finish_outreach_draft(runtime, *box, args, data, result, ctx);
                }};
}

}  // namespace

std::vector<ActionEntry> generation_tools(const std::shared_ptr<Toolbox>& box) {
    return {refresh_backlinks(),
            generate_keyword_ideas(),
            generate_topical_map(),
            generate_article(box),
            optimize_page(),
            index_url(),
            generate_press_release(),
            generate_gbp_post(),
            run_local_grid_scan(),
            analyze_llm_visibility(),
            generate_outreach_email(box)};
}

}  // namespace agency::tools
