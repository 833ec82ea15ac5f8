// What each gateway action writes, and how to tell afterwards whether an attempt created its
// record. The gateway has no idempotency key (spec, Action rule 1), so after an ambiguous
// failure the client reads the newest rows of the written resource and matches them on the
// request's inputs and time before it ever re-sends. The sample gateway writes rows that carry
// exactly these fields; a real deployment whose rows differ degrades to "outcome unknown",
// never to a duplicate.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace agency::gateway {

enum class RetryPolicy {
    retry_safe,  // repeats create nothing (spec rule 2): may be re-sent after a 5xx
    verify,      // read `resource` to find the record before deciding to re-send
    unknown,     // no way to check: report outcome_unknown rather than re-send
};

struct FieldMatch {
    std::string_view body_field;  // field of the POST body; "" when `constant` is used
    std::string_view row_field;   // field of the written row
    std::string_view constant;    // fixed value the row must have ("" when body_field is used)
};

struct ActionSpec {
    std::string_view action;
    RetryPolicy policy;
    std::string_view resource;      // resource the action writes
    std::string_view order;         // order field for the newest-first verification read
    std::string_view time_field;    // row field (ISO-8601 UTC) set when the action ran
    std::string_view filter_body_field;  // when set: filter_field=id, filter_value=body[this]
    std::array<FieldMatch, 3> match;     // unused entries have empty row_field
};

// Row times are ISO-8601 UTC with seconds ("2026-11-22T10:15:30Z"); a row matches when its time
// is at or after the moment the first attempt was sent, less a small clock-skew tolerance.
inline constexpr std::array<ActionSpec, 17> kActionSpecs{{
    {"seo_audit", RetryPolicy::retry_safe, "seo_reports", "created_at", "created_at", "",
     {{{"url", "url", ""}}}},
    {"fetch_backlinks", RetryPolicy::retry_safe, "backlinks", "", "", "", {}},
    {"generate_blog", RetryPolicy::verify, "blogs", "created_at", "created_at", "",
     {{{"keyword", "keyword", ""}}}},
    {"generate_geo_article", RetryPolicy::verify, "geo_articles", "created_at", "created_at", "",
     {{{"keyword", "keyword", ""}, {"city", "city", ""}, {"state", "state", ""}}}},
    {"generate_topical_map", RetryPolicy::verify, "topical_maps", "created_at", "created_at", "",
     {{{"topic", "topic", ""}}}},
    {"generate_press_release", RetryPolicy::verify, "press_releases", "created_at", "created_at",
     "", {{{"headline", "headline", ""}}}},
    {"generate_gbp_post", RetryPolicy::verify, "gbp_posts", "created_at", "created_at", "",
     {{{"topic", "topic", ""}}}},
    {"generate_outreach_email", RetryPolicy::verify, "backlink_outreach", "created_at",
     "created_at", "", {{{"prospectUrl", "prospect_url", ""}}}},
    {"send_prospect_email", RetryPolicy::verify, "backlink_outreach", "updated_at", "sent_at", "",
     {{{"to", "email_to", ""}, {"subject", "subject", ""}, {"", "status", "sent"}}}},
    {"optimize_page", RetryPolicy::verify, "seo_tasks", "created_at", "created_at", "",
     {{{"url", "url", ""}, {"", "task_type", "optimize_page"}}}},
    {"index_url", RetryPolicy::verify, "seo_tasks", "created_at", "created_at", "",
     {{{"url", "url", ""}, {"", "task_type", "index_url"}}}},
    {"run_grid_search", RetryPolicy::verify, "grid_searches", "tracked_at", "tracked_at", "",
     {{{"keyword", "keyword", ""}}}},
    {"run_llm_visibility", RetryPolicy::verify, "llm_reports", "scored_at", "scored_at", "",
     {{{"brand_name", "brand_name", ""}, {"prompt", "prompt", ""}}}},
    // Only checkable when the caller names the call (call_id); without it: unknown.
    {"score_call", RetryPolicy::verify, "call_scores", "created_at", "created_at", "",
     {{{"call_id", "call_id", ""}}}},
    // Only checkable with post_id (one blog, its deployed_at); the bare widget deploy: unknown.
    {"deploy_blog", RetryPolicy::verify, "blogs", "updated_at", "deployed_at", "post_id", {}},
    {"generate_keywords", RetryPolicy::unknown, "keywords", "", "", "", {}},
    {"generate_blog_image", RetryPolicy::unknown, "blogs", "", "", "", {}},
}};

inline const ActionSpec* find_action_spec(std::string_view action) {
    for (const auto& spec : kActionSpecs) {
        if (spec.action == action) return &spec;
    }
    return nullptr;
}

}  // namespace agency::gateway
