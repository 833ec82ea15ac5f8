// An outreach e-mail's parts, found by meaning in whatever a gateway answers, and the one answer
// to "what does a send post" that the preview, the send and the lost-call check all read: what a
// person approves is what is sent (issue 31). Private to tools/.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "state/store.hpp"
#include "tools/actions/action_tools.hpp"

namespace agency::tools {

using json = nlohmann::json;

// A text found in a gateway's answer and the member it came from ("body_html", "email.body").
struct FoundText {
    std::string text;
    std::string from;
};

// The names gateways give an e-mail's body, subject and recipient, most specific first. The
// body's HTML names come before its plain-text ones (a send posts HTML).
std::span<const std::string_view> body_names();
std::span<const std::string_view> subject_names();
std::span<const std::string_view> recipient_names();

// The first of `names` holding a non-empty string in `data`, else in an object `data` nests one
// level down (its first 64 members, in order), with where it was found.
std::optional<FoundText> find_by_meaning(const json& data, std::span<const std::string_view> names);

// A body as the HTML a send posts: HTML as it is; plain text (no tag in it) escaped, with a
// paragraph per blank-line-separated block and <br> for single line breaks.
std::string as_html(std::string_view body);

// What send_prospect_email posts, and where each part came from ("argument" or "draft").
struct OutgoingEmail {
    std::string to;
    std::string subject;
    std::string html;
    std::string to_from;
    std::string subject_from;
    std::string body_from;
};
// The arguments' recipient, subject and body where given, else the draft's.
OutgoingEmail outgoing_email(const json& args, const state::Draft& draft);

// The characters of a body a person and a model are shown (the whole text is sent).
inline constexpr std::size_t kEmailBodyChars = 1500;

// generate_outreach_email's finish: the draft's recipient, subject and body found by meaning in
// the gateway's answer, else in the draft's backlink_outreach row read once by the answer's id
// (a part found there is named "record:<member>"), stored under a new email_id, and told (with
// where each came from and what is missing) in `result`.
void finish_outreach_draft(ActionRuntime& runtime, Toolbox& box, const json& args, const json& data,
                           json& result, const mcp::RequestContext& ctx);

}  // namespace agency::tools
