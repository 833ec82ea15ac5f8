// The 17 actions of the spec, one row each in action_catalog() (at the end: the handlers come
// first). Each writes its record into the resource actions.hpp names, with the fields a client
// later matches on, so a read after an ambiguous failure can find it.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "gateway/sample/sample_action_kit.hpp"

namespace agency::sample::detail {

namespace {

using namespace actions;

ActionOutcome seo_audit(const Ctx& ctx) {
    const std::string url = text_field(ctx.body, "url");
    // A repeated audit of one URL refreshes its report instead of adding another (rule 2);
    // with Options::stale_reports it answers with that report as it is.
    ojson row;
    if (auto index = ctx.find_by("seo_reports", "url", url)) {
        row = ctx.table("seo_reports").parsed(*index);
        if (!ctx.store.options.stale_reports) {
            stamp_report(row, ctx.now, false);
            ctx.update("seo_reports", *index, row);
        }
    } else {
        Rng r(mix_seed(hash_text(url), ctx.client.id, "seo_audit"));
        const std::string id = ctx.store.next_id("seo_reports", ctx.client.id);
        row = audit_fields(ctx.client, url, r);
        if (ctx.store.options.counts_only_reports) row.erase("issues");
        row["share_url"] = share_url("audits", id);
        stamp_report(row, ctx.now, ctx.store.options.stale_reports);
        append_with_id(ctx.store, "seo_reports", ctx.client.id, id, row);
        row["id"] = id;
        // A stale report's answer holds only what the spec names: its dates are in the row.
        if (ctx.store.options.stale_reports)
            return ok(pick(row, {"id", "url", "score", "issues_found"}));
    }
    return ok(pick(row, {"id", "url", "score", "issues_found", "issue_counts", "pages_crawled",
                         "share_url", "created_at"}));
}

ActionOutcome seo_task(const Ctx& ctx, const std::string& task_type) {
    const std::string url = text_field(ctx.body, "url");
    const std::string keyword = text_field(ctx.body, "keyword");
    const std::string target = keyword.empty() ? "the main keyword" : "'" + keyword + "'";
    ojson row{{"title", task_type == "index_url" ? "Submit " + url + " for indexing"
                                                 : "Optimize " + url + " for " + target},
              {"task_type", task_type},
              {"url", url}};
    row["keyword"] = keyword.empty() ? ojson(nullptr) : ojson(keyword);
    ojson recommendations = ojson::array();
    if (task_type == "optimize_page") {
        row["status"] = "pending";
        row["priority"] = "high";
        row["category_id"] = "seo-cat-on-page";
        recommendations =
            ojson::array({"Use " + target + " in the title tag and the H1",
                          "Write a 150-character meta description that mentions " + target,
                          "Link to this page from three related blog posts",
                          "Add FAQ structured data answering common questions about " + target});
        row["recommendations"] = recommendations;
    } else {
        row["status"] = "submitted";
        row["priority"] = "medium";
        row["category_id"] = "seo-cat-technical";
        row["submitted_at"] = ctx.now;
    }
    if (task_type == "index_url" && ctx.store.options.bare_records) {
        // Submitted to the search engine; nothing readable at the gateway records it.
        char digits[32];
        std::snprintf(digits, sizeof digits, "%06zu",
                      ++ctx.store.counters["index-" + ctx.client.id]);
        return ok({{"id", "index-" + ctx.client.short_name + "-" + digits},
                   {"url", url},
                   {"status", "submitted"},
                   {"submitted_at", ctx.now}});
    }
    row["due_date"] = ctx.today;
    row["created_at"] = ctx.now;
    row["updated_at"] = ctx.now;
    row["completed_at"] = nullptr;
    row["id"] = ctx.add("seo_tasks", row);
    return ok(pick(row, {"id", "url", "keyword", "task_type", "status", "recommendations",
                         "submitted_at", "created_at"}));
}

ActionOutcome generate_keywords(const Ctx& ctx) {
    const std::string seed = lower(text_field(ctx.body, "seed", ctx.client.services[0]));
    const std::string location = lower(text_field(ctx.body, "location", ctx.client.city));
    const std::array<std::string, 8> ideas{seed + " " + location,
                                           seed + " near me",
                                           "best " + seed + " " + location,
                                           seed + " cost",
                                           "affordable " + seed,
                                           seed + " reviews",
                                           "24 hour " + seed,
                                           seed + " services " + location};
    ojson list = ojson::array();
    for (const auto& keyword : ideas) {
        // Metrics are a function of the keyword, as a live metrics lookup would be.
        Rng r(mix_seed(hash_text(keyword), "generate_keywords", ""));
        const int volume = search_volume(r);
        const int difficulty = r.between(8, 78);
        const ojson row{{"keyword", keyword},
                        {"position", 0},  // not ranking yet
                        {"url", ctx.client.website() + "/"},
                        {"search_volume", volume},
                        {"difficulty", difficulty},
                        {"created_at", ctx.today},
                        {"tracked_at", ctx.today},
                        {"status", "suggested"}};
        const std::string id = ctx.add("keywords", row);
        list.push_back({{"id", id},
                        {"keyword", keyword},
                        {"search_volume", volume},
                        {"difficulty", difficulty}});
    }
    char digits[32];
    std::snprintf(digits, sizeof digits, "%06zu", ctx.table("keywords").size());
    return ok({{"id", "kwgen-" + ctx.client.short_name + "-" + digits},
               {"seed", seed},
               {"location", location},
               {"count", list.size()},
               {"keywords", list}});
}

ActionOutcome generate_topical_map(const Ctx& ctx) {
    int depth = 2;
    if (auto d = number_field(ctx.body, "depth")) depth = std::clamp(static_cast<int>(*d), 1, 5);
    auto r = ctx.rng("generate_topical_map");
    ojson row = topical_map_fields(text_field(ctx.body, "topic"), depth, r);
    row["created_at"] = ctx.now;
    row["updated_at"] = ctx.now;
    row["id"] = ctx.add("topical_maps", row);
    return ok(pick(row, {"id", "topic", "depth", "pillar_count", "cluster_count", "pillars",
                         "status", "created_at"}));
}

// Publishes an article row in place (auto-deploy, deploy_blog).
void publish(ojson& row, const ClientProfile& client, const std::string& now,
             const std::string& path, bool bare) {
    row["status"] = "published";
    if (row.contains("published")) row["published"] = true;
    if (row["url"].is_null()) row["url"] = client.website() + path;
    if (!bare) row["deployed_at"] = now;
    row["updated_at"] = now;
}

// An article's category_id: the one the body names, else the client's first blog category;
// null when there is neither.
ojson category_of(const Ctx& ctx) {
    const Table& categories = ctx.table("blog_categories");
    const std::string category = text_field(
        ctx.body, "category_id", categories.size() ? categories.rows().front().id() : "");
    return category.empty() ? ojson(nullptr) : ojson(category);
}

ActionOutcome generate_blog(const Ctx& ctx) {
    const std::string keyword = text_field(ctx.body, "keyword");
    auto r = ctx.rng("generate_blog");
    const std::string title = blog_title(keyword, r);
    const std::string slug = slugify(title);
    int words = 1200;
    if (auto w = number_field(ctx.body, "word_count"))
        words = std::clamp(static_cast<int>(*w), 300, 5000);
    const Table& authors = ctx.table("blog_authors");
    ojson row{{"post_title", title},
              {"slug", slug},
              {"keyword", keyword},
              {"status", "draft"},
              {"published", false},
              {"category_id", category_of(ctx)},
              {"author_id", authors.size() ? ojson(authors.rows().front().id()) : ojson(nullptr)},
              {"word_count", words},
              {"tone", text_field(ctx.body, "tone", "professional")},
              {"post_content", blog_body(ctx.client, keyword, title)},
              {"deployment_target", ctx.client.deployment_target},
              {"url", nullptr},
              {"image_url", nullptr},
              {"created_at", ctx.now},
              {"updated_at", ctx.now},
              {"deployed_at", nullptr}};
    if (ctx.client.auto_deploy && ctx.store.options.slow_deploys) {
        row["status"] = "deploying";  // goes live later, outside the sample
    } else if (ctx.client.auto_deploy) {
        publish(row, ctx.client, ctx.now, "/blog/" + slug, ctx.store.options.bare_records);
    }
    row["id"] = ctx.add("blogs", row);
    if (ctx.store.options.spec_shaped_answers) return ok(pick(row, {"id", "post_title"}));
    return ok(pick(row, {"id", "post_title", "keyword", "word_count", "status", "published", "url",
                         "deployed_at", "created_at"}));
}

ActionOutcome generate_blog_image(const Ctx& ctx) {
    const std::string title = text_field(ctx.body, "title");
    const std::string style = text_field(ctx.body, "style", "photo");
    char digits[32];
    std::snprintf(digits, sizeof digits, "%06zu", ++ctx.store.counters["img-" + ctx.client.id]);
    const std::string id = "img-" + ctx.client.short_name + "-" + digits;
    const std::string image_url =
        "https://cdn.sample-gateway.example/images/" + id + "-" + slugify(title) + ".png";
    ojson data{{"id", id},
               {"image_url", image_url},
               {"title", title},
               {"style", style},
               {"post_id", nullptr}};
    // The image becomes the featured image of the article with that title, if there is one.
    if (auto index = ctx.find_by("blogs", "post_title", title)) {
        ojson row = ctx.table("blogs").parsed(*index);
        row["image_url"] = image_url;
        row["updated_at"] = ctx.now;
        ctx.update("blogs", *index, row);
        data["post_id"] = row["id"];
    }
    data["created_at"] = ctx.now;
    return ok(data);
}

ActionOutcome generate_geo_article(const Ctx& ctx) {
    const std::string keyword = text_field(ctx.body, "keyword");
    const std::string city = text_field(ctx.body, "city");
    const std::string state = text_field(ctx.body, "state");
    const std::string title =
        title_case(keyword) + " in " + city + ", " + state + ": A Local Guide";
    const std::string slug = slugify(keyword + " " + city);
    ojson row{{"title", title},
              {"keyword", keyword},
              {"city", city},
              {"state", state},
              {"category_id", category_of(ctx)},
              {"status", "draft"},
              {"word_count", 1100},
              {"deployment_target", ctx.client.deployment_target},
              {"url", nullptr},
              {"created_at", ctx.now},
              {"updated_at", ctx.now},
              {"deployed_at", nullptr}};
    if (ctx.client.auto_deploy)
        publish(row, ctx.client, ctx.now, "/areas/" + slug, ctx.store.options.bare_records);
    row["id"] = ctx.add("geo_articles", row);
    return ok(pick(row, {"id", "title", "keyword", "city", "state", "status", "word_count", "url",
                         "created_at"}));
}

ActionOutcome generate_press_release(const Ctx& ctx) {
    const std::string headline = text_field(ctx.body, "headline");
    const auto points = list_field(ctx.body, "body_points");
    std::string summary = headline + ". " + ctx.client.name + " (" + ctx.client.city + ", " +
                          ctx.client.state + ") announced the news today.";
    for (const auto& point : points) summary += " " + point + ".";
    ojson row{{"headline", headline},   {"summary", summary},    {"body_points", points},
              {"status", "draft"},      {"created_at", ctx.now}, {"updated_at", ctx.now},
              {"published_at", nullptr}};
    row["id"] = ctx.add("press_releases", row);
    return ok(pick(row, {"id", "headline", "summary", "status", "created_at"}));
}

ActionOutcome generate_gbp_post(const Ctx& ctx) {
    const std::string topic = text_field(ctx.body, "topic");
    auto r = ctx.rng("generate_gbp_post");
    const ojson post = gbp_post_fields(ctx.client, topic, text_field(ctx.body, "cta"), r);
    ojson row{{"topic", topic},        {"summary", post["summary"]},
              {"cta", post["cta"]},    {"post_type", post["post_type"]},
              {"status", "draft"},     {"published_at", nullptr},
              {"created_at", ctx.now}, {"updated_at", ctx.now}};
    row["id"] = ctx.add("gbp_posts", row);
    return ok(pick(row, {"id", "topic", "summary", "cta", "post_type", "status", "created_at"}));
}

ActionOutcome deploy_blog(const Ctx& ctx) {
    const std::string post_id = text_field(ctx.body, "post_id");
    if (post_id.empty()) {
        // The bare deploy installs the blog widget on the client's site.
        auto& clients = ctx.store.client_rows;
        const auto index = clients.find(ctx.client.id);
        ojson row = clients.parsed(*index);
        row["widget_deployed_at"] = ctx.now;
        row["updated_at"] = ctx.now;
        clients.replace(*index, make_row(row));
        return ok({{"id", "widget-" + ctx.client.short_name},
                   {"widget", "deployed"},
                   {"deployment_target", ctx.client.deployment_target},
                   {"deployed_at", ctx.now}});
    }
    const auto index = ctx.table("blogs").find(post_id);
    if (!index) {
        return fail(404, "unknown post_id '" + post_id + "' for client_id " + ctx.client.id +
                             "; read resource=blogs for the ids of this client's posts");
    }
    ojson row = ctx.table("blogs").parsed(*index);
    if (ctx.store.options.slow_deploys) {
        row["status"] = "deploying";  // goes live later, outside the sample
        row["updated_at"] = ctx.now;
    } else {
        publish(row, ctx.client, ctx.now, "/blog/" + row.value("slug", post_id),
                ctx.store.options.bare_records);
    }
    ctx.update("blogs", *index, row);
    if (ctx.store.options.spec_shaped_answers) return ok(pick(row, {"id"}));
    return ok(pick(row, {"id", "post_title", "status", "published", "url", "deployed_at"}));
}

ActionOutcome fetch_backlinks(const Ctx& ctx) {
    // A refresh re-reads the same links: only the fetch times move, nothing is added (rule 2).
    std::set<std::string> domains;
    for (const char* resource : {"backlinks", "top_linked_pages"}) {
        Table& t = ctx.table(resource);
        for (std::size_t i = 0; i < t.size(); ++i) {
            ojson row = t.parsed(i);
            row["fetched_at"] = ctx.now;
            if (row.contains("source_domain"))
                domains.insert(row["source_domain"].get<std::string>());
            t.replace(i, make_row(row));
        }
    }
    return ok({{"id", "blprofile-" + ctx.client.short_name},
               {"backlinks", ctx.table("backlinks").size()},
               {"linking_domains", domains.size()},
               {"fetched_at", ctx.now}});
}

ActionOutcome run_grid_search(const Ctx& ctx) {
    const auto lat = number_field(ctx.body, "lat");
    const auto lng = number_field(ctx.body, "lng");
    if (!lat || *lat < -90 || *lat > 90) {
        return fail(400,
                    "lat must be a number from -90 to 90 (got " + ctx.body["lat"].dump() + ")");
    }
    if (!lng || *lng < -180 || *lng > 180) {
        return fail(400,
                    "lng must be a number from -180 to 180 (got " + ctx.body["lng"].dump() + ")");
    }
    double radius = 5;
    if (ctx.body.contains("radius") && !ctx.body["radius"].is_null()) {
        const auto r = number_field(ctx.body, "radius");
        if (!r || *r <= 0 || *r > 50) {
            return fail(400, "radius must be a number of miles above 0 and at most 50 (got " +
                                 ctx.body["radius"].dump() + ")");
        }
        radius = *r;
    }
    auto r = ctx.rng("run_grid_search");
    ojson row = grid_fields(text_field(ctx.body, "keyword"), *lat, *lng, radius, r);
    row["tracked_at"] = ctx.now;
    row["created_at"] = ctx.now;
    row["id"] = ctx.add("grid_searches", row);
    return ok(pick(row, {"id", "keyword", "average_rank", "found_count", "top3_count", "grid_size",
                         "radius", "tracked_at"}));
}

ActionOutcome run_llm_visibility(const Ctx& ctx) {
    auto r = ctx.rng("run_llm_visibility");
    ojson row = llm_fields(text_field(ctx.body, "brand_name"), text_field(ctx.body, "prompt"),
                           list_field(ctx.body, "competitors"), r);
    const std::string id = ctx.store.next_id("llm_reports", ctx.client.id);
    row["share_url"] = share_url("llm-reports", id);
    row["scored_at"] = ctx.now;
    row["created_at"] = ctx.now;
    append_with_id(ctx.store, "llm_reports", ctx.client.id, id, row);
    row["id"] = id;
    return ok(pick(row, {"id", "brand_name", "prompt", "visibility_score", "mentioned", "engines",
                         "share_url", "scored_at"}));
}

ActionOutcome score_call(const Ctx& ctx) {
    const int score = transcript_score(text_field(ctx.body, "transcript"));
    const std::string grade = lead_grade(score);
    const std::string call_id = text_field(ctx.body, "call_id");
    static const std::map<std::string, std::string> kSummaries{
        {"A", "Ready to buy: the caller asked to book."},
        {"B", "Interested: the caller asked about price or timing."},
        {"C", "Early stage: general questions only."},
        {"D", "Not a sales opportunity."}};
    ojson row{{"call_id", call_id.empty() ? ojson(nullptr) : ojson(call_id)},
              {"lead_grade", grade},
              {"score", score},
              {"qualified", score >= 60},
              {"summary", kSummaries.at(grade)},
              {"created_at", ctx.now}};
    row["id"] = ctx.add("call_scores", row);
    return ok(
        pick(row, {"id", "call_id", "lead_grade", "score", "qualified", "summary", "created_at"}));
}

}  // namespace

const std::vector<ActionInfo>& action_catalog() {
    static const std::vector<ActionInfo> catalog{
        {"seo_audit", "Runs a site audit", {"url"}, seo_audit},
        {"optimize_page", "Generates on-page optimisations for a URL", {"url"},
         [](const Ctx& ctx) { return seo_task(ctx, "optimize_page"); }},
        {"generate_keywords", "Generates keyword ideas with live metrics", {}, generate_keywords},
        {"generate_topical_map", "Builds a topical map", {"topic"}, generate_topical_map},
        {"generate_blog", "Drafts a blog article", {"keyword"}, generate_blog},
        {"generate_blog_image", "Generates a featured image", {"title"}, generate_blog_image},
        {"generate_geo_article", "Drafts a geo-targeted article", {"keyword", "city", "state"},
         generate_geo_article},
        {"generate_press_release", "Drafts a press release", {"headline"},
         generate_press_release},
        {"generate_gbp_post", "Drafts a business-profile post", {"topic"}, generate_gbp_post},
        {"deploy_blog", "Deploys the blog widget", {}, deploy_blog},
        {"index_url", "Submits a URL for indexing", {"url"},
         [](const Ctx& ctx) { return seo_task(ctx, "index_url"); }},
        {"fetch_backlinks", "Refreshes the backlink profile", {}, fetch_backlinks},
        {"generate_outreach_email", "Drafts an outreach email", {"prospectUrl"},
         generate_outreach_email},
        {"send_prospect_email", "Sends a prospect email", {"to", "subject", "html"},
         send_prospect_email},
        {"run_grid_search", "Runs a local grid search", {"keyword", "lat", "lng"},
         run_grid_search},
        {"run_llm_visibility", "Runs an answer-engine visibility check", {"prompt", "brand_name"},
         run_llm_visibility},
        {"score_call", "Scores a call transcript", {"transcript"}, score_call},
    };
    return catalog;
}

const ActionInfo* find_action(std::string_view name) {
    for (const auto& action : action_catalog()) {
        if (action.name == name) return &action;
    }
    return nullptr;
}

ActionOutcome run_action(Store& store, const ActionInfo& action, const ClientProfile& client,
                         const nlohmann::json& body) {
    const Ctx ctx{store, client, body};
    if (action.run == nullptr)
        return fail(400, "action " + std::string(action.name) + " is not implemented");
    return action.run(ctx);
}

}  // namespace agency::sample::detail
