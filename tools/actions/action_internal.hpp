// What the action tool files share (private to tools/): the confirmation stage, the readers of
// one gateway record, and the shaping of an action's result.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "tools/pipeline/action_runtime.hpp"
#include "tools/pipeline/pipeline.hpp"

namespace agency::tools {

// The first row of a one-row read, or not_found naming what was looked up.
json first_row(Toolbox& box, const gateway::ReadQuery& query, const std::string& what,
               std::stop_token stop);
// The client's record, or not_found pointing at list_clients.
json client_record(Toolbox& box, const std::string& client_id, std::stop_token stop);
// The client's record when it has auto_deploy true (anything else is off), nullopt when not.
std::optional<json> auto_deploy_client(Toolbox& box, const std::string& client_id,
                                       std::stop_token stop);

// Whether an article's record (or an action's answer) says it is live: status published,
// deployed or live, published true, or a deployed_at/published_at time.
bool says_live(const json& record);
// An article's status from its record when an action's answer did not say whether it went
// live: one read of resource=blogs by id (tools/actions/article_outcome.cpp). Sets result.status
// (published, the record's own, or unconfirmed only when the read cannot tell), url,
// status_from and next_step. `unsure` begins the sentence saying why it may be live.
void article_status_from_record(Toolbox& box, const std::string& client_id,
                                const std::string& article_id, std::string_view unsure,
                                json& result, std::stop_token stop);

// A numeric field, nullopt when absent or not a number.
std::optional<double> number(const json& row, const char* field);
// The gateway's draft is the tool's "drafted" (the spec's article status); other values pass.
std::string normalize_status(const json& data, const std::string& fallback);
// A record id as text whatever its JSON type ("" when absent).
std::string id_text(const json& data);
// The first of `fields` that holds a string, else null.
json first_string(const json& data, std::initializer_list<const char*> fields);
// result.title from the first of `fields` that holds a string.
void set_title(json& result, const json& data, std::initializer_list<const char*> fields);

// HTML as the plain text a person reads (tags dropped, script and style skipped, common
// entities decoded, blanks folded), at most `max_chars` characters, a UTF-8 character never
// split; `cut` says whether there was more. Reads at most 256 KiB of `html`.
std::string plain_text(std::string_view html, std::size_t max_chars, bool* cut = nullptr);
// The first ~300 characters of an article's body as plain text (the body under any of the
// names gateways use: post_content, content, html, body, ...), null when the row has none.
json article_excerpt(const json& article);

// A gateway text as a person is shown it in a preview (base::clean_untrusted_text); anything
// but a string as it is.
json shown_text(const json& text);
// Whether `text` passes what the recipient argument's schema asks of an address: one '@', a
// dot in the domain, no blanks, at most 254 characters (tools/actions/generation_tools.cpp).
bool plausible_address(std::string_view text);
// The first of `fields` holding a non-empty string, else null.
json first_text(const json& data, std::initializer_list<const char*> fields);
// The names a gateway keeps an article's text under (the sample: post_content).
inline constexpr std::initializer_list<const char*> kArticleBodyNames = {
    "post_content", "content", "content_html", "html", "body", "body_html"};

// One action tool's entry: what tools/list shows (spec), and the facts the pipeline runs.
struct ActionEntry {
    ToolSpec spec;               // name, title, description, annotations, gateway_action, mapping
    std::string id_field;        // the result's id member, e.g. article_id
    std::string default_status;  // when the gateway's data carries none
    bool spends_credits = true;
    // The POST fields besides client_id, from the arguments and what context supplies.
    std::function<json(Toolbox& box, const json& args, mcp::RequestContext& ctx)> fields;
    // Extra result members from the gateway's data (title, word_count, ...); may store things
    // (bound to the caller, ctx.principal).
    std::function<void(ActionRuntime& rt, const json& args, const json& data, json& result,
                       const mcp::RequestContext& ctx)>
        finish;
    // Set: the confirmation stage runs with what this says acting would do
    // (Preview::needed false: these arguments need no confirmation).
    PreviewStage preview;
    // Set: the work instead of the one POST built from fields and finish.
    ExecuteStage execute;
    // Set: ActionCall::find_lost for an entry with its own execute (the one POST built from
    // fields has its own).
    FindLostStage find_lost;
};

// The note a lost call's found record carries: what was lost and how it was found.
std::string lost_call_note(const std::string& detail);

// The families of action tools, in the order tools/list shows them.
std::vector<ToolSpec> audit_tools(const std::shared_ptr<Toolbox>& box,
                                  const std::shared_ptr<ActionRuntime>& rt);
std::vector<ActionEntry> generation_tools(const std::shared_ptr<Toolbox>& box);
std::vector<ActionEntry> draft_tools(const std::shared_ptr<Toolbox>& box,
                                     const std::shared_ptr<ActionRuntime>& rt);

}  // namespace agency::tools
