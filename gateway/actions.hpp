// What each gateway action changes, and how to tell afterwards whether an attempt ran. The
// gateway has no idempotency key (spec, Action rule 1), so after an ambiguous failure (a 5xx, a
// timeout, a dropped connection) the client looks at what the action writes before it ever
// re-sends, and the check looks at what that action actually changes:
//
// - an action that creates a record (generate_blog, ...): the newest rows of the resource it
//   writes, matched on the request's inputs and time (`verify`);
// - an action that changes an existing record (deploy_blog with a post_id publishes that
//   article; send_prospect_email with an email_id sends that draft): that one row, read before
//   the first POST and again after the failure, compared on the effect (status published, sent)
//   and on the fields the change moves (`verify_state`);
// - an action that may leave a record but is not promised to (index_url: the spec says only that
//   it submits a URL) can be confirmed by finding one, never disproved by its absence
//   (`confirm_only`);
// - an action nothing readable records (generate_keywords, the bare widget deploy): `unknown`.
//
// Only a conclusive "it did not run" (the gateway answered, and what was read carries every
// field the check needs and covers the time since the first attempt) leads to a re-send; every
// other case answers outcome_unknown, never a second POST. The sample gateway writes rows that
// carry these fields; with Options::bare_records it writes only what the spec names, the shape
// a real deployment may have, and every action still goes out at most once.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agency::gateway {

// Whether an action may be sent again after an ambiguous failure, and what must be checked
// first. How often and how long a permitted repeat waits is retry.hpp's RetrySchedule.
enum class ResendRule {
    retry_safe,    // repeats create nothing (spec rule 2): may be re-sent after a 5xx
    verify,        // creates a record: find it in the newest rows of `resource`
    verify_state,  // changes the row `filter_body_field` names: compare it before and after
    confirm_only,  // a found record proves it ran; none found proves nothing: never re-sent
    unknown,       // no way to check: report outcome_unknown rather than re-send
};

struct FieldMatch {
    std::string_view body_field;  // field of the POST body; "" when `constant` is used
    std::string_view row_field;   // field of the written row
    std::string_view constant;    // fixed value the row must have ("" when body_field is used)
};

struct ActionSpec {
    std::string_view action;
    ResendRule resend;  // whether, and after what check, the action may be sent again
    std::string_view resource;      // resource the action writes
    std::string_view order;         // order field for the newest-first verification read
    std::string_view time_field;    // row field (ISO-8601 UTC) set when the action ran
    // When set: the body field holding the id of the one row the action acts on (read with
    // filter_field=id); a spec whose body lacks it does not apply (the next one for the
    // action does).
    std::string_view filter_body_field;
    // verify / confirm_only: all must match. verify_state: the effect, any one of which the row
    // shows once the action ran (e.g. status "published" or published true).
    std::array<FieldMatch, 3> match;
    // verify_state: fields the action moves when it runs (deployed_at, updated_at); a change
    // since the read before the POST, with the effect shown, proves it ran.
    std::array<std::string_view, 3> markers{};
    // For outcome_unknown: how a person checks whether it ran.
    std::string_view check_hint{};
};

// Row times are ISO-8601 UTC with seconds ("2026-11-22T10:15:30Z"); a row matches when its time
// is at or after the moment the first attempt was sent, less a small clock-skew tolerance.
// An action may have several entries: the first whose body fields are present applies.
// (No count to keep by hand: the array is as long as its rows.)
inline constexpr ActionSpec kActionSpecs[] = {
    {"seo_audit", ResendRule::retry_safe, "seo_reports", "created_at", "created_at", "",
     {{{"url", "url", ""}}}},
    {"fetch_backlinks", ResendRule::retry_safe, "backlinks", "", "", "", {}},
    {"generate_blog", ResendRule::verify, "blogs", "created_at", "created_at", "",
     {{{"keyword", "keyword", ""}}}, {}, "read resource=blogs (newest first) for the article"},
    {"generate_geo_article", ResendRule::verify, "geo_articles", "created_at", "created_at", "",
     {{{"keyword", "keyword", ""}, {"city", "city", ""}, {"state", "state", ""}}}, {},
     "read resource=geo_articles (newest first) for the article"},
    {"generate_topical_map", ResendRule::verify, "topical_maps", "created_at", "created_at", "",
     {{{"topic", "topic", ""}}}, {}, "read resource=topical_maps (newest first) for the map"},
    {"generate_press_release", ResendRule::verify, "press_releases", "created_at", "created_at",
     "", {{{"headline", "headline", ""}}}, {},
     "read resource=press_releases (newest first) for the release"},
    {"generate_gbp_post", ResendRule::verify, "gbp_posts", "created_at", "created_at", "",
     {{{"topic", "topic", ""}}}, {}, "read resource=gbp_posts (newest first) for the post"},
    {"generate_outreach_email", ResendRule::verify, "backlink_outreach", "created_at",
     "created_at", "", {{{"prospectUrl", "prospect_url", ""}}}, {},
     "read resource=backlink_outreach (newest first) for the draft"},
    // With the draft's id: that row, which a send turns to status "sent".
    {"send_prospect_email", ResendRule::verify_state, "backlink_outreach", "updated_at",
     "sent_at", "email_id", {{{"", "status", "sent"}}}, {{"sent_at", "updated_at"}},
     "read resource=backlink_outreach by id to see whether the e-mail shows as sent"},
    {"send_prospect_email", ResendRule::verify, "backlink_outreach", "updated_at", "sent_at", "",
     {{{"to", "email_to", ""}, {"subject", "subject", ""}, {"", "status", "sent"}}}, {},
     "read resource=backlink_outreach (newest first) to see whether the e-mail shows as sent"},
    {"optimize_page", ResendRule::verify, "seo_tasks", "created_at", "created_at", "",
     {{{"url", "url", ""}, {"", "task_type", "optimize_page"}}}, {},
     "read resource=seo_tasks (newest first) for the optimisation task"},
    // The spec says only that it submits a URL: a submission the gateway records as an SEO
    // task proves it ran, but nothing says one is recorded, so finding none proves nothing.
    {"index_url", ResendRule::confirm_only, "seo_tasks", "created_at", "created_at", "",
     {{{"url", "url", ""}, {"", "task_type", "index_url"}}}, {},
     "the gateway keeps no promised record of a submission: check the search engine's URL "
     "inspection (or read resource=seo_tasks) before submitting the URL again"},
    {"run_grid_search", ResendRule::verify, "grid_searches", "tracked_at", "tracked_at", "",
     {{{"keyword", "keyword", ""}}}, {}, "read resource=grid_searches (newest first) for the scan"},
    {"run_llm_visibility", ResendRule::verify, "llm_reports", "scored_at", "scored_at", "",
     {{{"brand_name", "brand_name", ""}, {"prompt", "prompt", ""}}}, {},
     "read resource=llm_reports (newest first) for the report"},
    // Only checkable when the caller names the call (call_id); without it: unknown.
    {"score_call", ResendRule::verify, "call_scores", "created_at", "created_at", "",
     {{{"call_id", "call_id", ""}}}, {}, "read resource=call_scores for the call's score"},
    // With post_id: deploying publishes that article. The bare deploy installs the blog widget,
    // which no readable resource records.
    {"deploy_blog", ResendRule::verify_state, "blogs", "updated_at", "deployed_at", "post_id",
     {{{"", "status", "published"}, {"", "published", "true"}}}, {{"deployed_at", "updated_at"}},
     "read resource=blogs by id (list_articles) to see whether the article is published"},
    {"deploy_blog", ResendRule::unknown, "", "", "", "", {}, {},
     "check the client's site for the blog widget"},
    {"generate_keywords", ResendRule::unknown, "keywords", "", "", "", {}, {},
     "read resource=keywords for new suggestions"},
    {"generate_blog_image", ResendRule::unknown, "blogs", "", "", "", {}, {},
     "read resource=blogs for the article's image"},
};

// The first entry for `action` (nullptr when the action is unknown to the client).
inline const ActionSpec* find_action_spec(std::string_view action) {
    for (const auto& spec : kActionSpecs) {
        if (spec.action == action) return &spec;
    }
    return nullptr;
}

// The entry that applies to this request: the first for `action` whose id field (if any) the
// body carries as a string or number; nullptr when none applies.
inline const ActionSpec* find_action_spec(std::string_view action, const nlohmann::json& body) {
    for (const auto& spec : kActionSpecs) {
        if (spec.action != action) continue;
        if (spec.filter_body_field.empty()) return &spec;
        const auto it = body.is_object() ? body.find(std::string(spec.filter_body_field))
                                         : body.end();
        if (it != body.end() && (it->is_string() || it->is_number())) {
            if (!it->is_string() || !it->get_ref<const std::string&>().empty()) return &spec;
        }
    }
    return nullptr;
}

}  // namespace agency::gateway
