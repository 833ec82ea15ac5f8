// An outreach e-mail's parts by meaning, and what a send posts
// (tools/actions/outreach_internal.hpp).
#include <array>

#include "tools/actions/action_internal.hpp"
#include "tools/actions/outreach_internal.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

namespace {

// "message" is left out on purpose: gateways use it for a status line ("Draft created").
constexpr std::array<std::string_view, 12> kBodyNames = {
    "html",       "body_html", "html_body", "email_html", "content_html", "body",
    "email_body", "content",   "body_text", "text_body",  "text",         "plain_text"};
constexpr std::array<std::string_view, 4> kSubjectNames = {"subject", "subject_line",
                                                           "email_subject", "title"};
constexpr std::array<std::string_view, 7> kRecipientNames = {
    "email_to", "to", "recipient", "recipient_email", "to_email", "email", "contact_email"};

constexpr std::size_t kNestedMembersLooked = 64;

std::optional<FoundText> find_in(const json& object, std::span<const std::string_view> names,
                                 const std::string& prefix) {
    for (std::string_view name : names) {
        auto it = object.find(name);
        if (it != object.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
            return FoundText{it->get<std::string>(), prefix + std::string(name)};
    }
    return std::nullopt;
}

bool has_tag(std::string_view text) {
    for (std::size_t at = text.find('<'); at != std::string_view::npos;
         at = text.find('<', at + 1)) {
        if (at + 1 >= text.size()) return false;
        const char next = text[at + 1];
        const bool starts_tag = next == '/' || next == '!' || (next >= 'a' && next <= 'z') ||
                                (next >= 'A' && next <= 'Z');
        if (starts_tag && text.find('>', at + 1) != std::string_view::npos) return true;
    }
    return false;
}

void append_escaped(std::string& out, std::string_view text) {
    for (char c : text) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
}

}  // namespace

std::span<const std::string_view> body_names() { return kBodyNames; }
std::span<const std::string_view> subject_names() { return kSubjectNames; }
std::span<const std::string_view> recipient_names() { return kRecipientNames; }

std::optional<FoundText> find_by_meaning(const json& data,
                                         std::span<const std::string_view> names) {
    if (!data.is_object()) return std::nullopt;
    if (auto top = find_in(data, names, "")) return top;
    std::size_t looked = 0;
    for (const auto& [key, value] : data.items()) {
        if (++looked > kNestedMembersLooked) break;
        if (!value.is_object()) continue;
        if (auto nested = find_in(value, names, key + ".")) return nested;
    }
    return std::nullopt;
}

std::string as_html(std::string_view body) {
    if (has_tag(body)) return std::string(body);
    std::string out;
    out.reserve(body.size() + 32);
    std::string paragraph;
    auto close = [&] {
        // Trim the paragraph's blank ends; an empty one writes nothing.
        const auto first = paragraph.find_first_not_of(" \t\r\n");
        if (first != std::string::npos) {
            const auto last = paragraph.find_last_not_of(" \t\r\n");
            std::string_view text(paragraph.data() + first, last - first + 1);
            out += "<p>";
            for (std::size_t start = 0;;) {
                const std::size_t nl = text.find('\n', start);
                std::string_view line = text.substr(
                    start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
                if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                append_escaped(out, line);
                if (nl == std::string_view::npos) break;
                out += "<br>";
                start = nl + 1;
            }
            out += "</p>";
        }
        paragraph.clear();
    };
    std::size_t start = 0;
    while (start <= body.size()) {
        const std::size_t nl = body.find('\n', start);
        std::string_view line =
            body.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
            close();  // a blank line ends a paragraph
        } else {
            if (!paragraph.empty()) paragraph += '\n';
            paragraph += line;
        }
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    close();
    return out;
}

OutgoingEmail outgoing_email(const json& args, const state::Draft& draft) {
    OutgoingEmail out;
    out.to = string_arg(args, "recipient");
    out.to_from = out.to.empty() ? "draft" : "argument";
    if (out.to.empty()) out.to = draft.recipient;
    out.subject = string_arg(args, "subject");
    out.subject_from = out.subject.empty() ? "draft" : "argument";
    if (out.subject.empty()) out.subject = draft.subject;
    const std::string body = string_arg(args, "body");
    out.body_from = body.empty() ? "draft" : "argument";
    out.html = body.empty() ? draft.html : as_html(body);
    return out;
}

namespace {

// The data shown beside the draft: without the body (kept in the store; `body` shows its text).
json shown_draft_data(const json& data, const std::optional<FoundText>& body) {
    json shown = data;
    for (std::string_view name : kBodyNames) shown.erase(std::string(name));
    if (body) {
        const std::size_t dot = body->from.find('.');
        if (dot != std::string::npos) {
            auto nested = shown.find(body->from.substr(0, dot));
            if (nested != shown.end() && nested->is_object())
                nested->erase(body->from.substr(dot + 1));
        }
    }
    return shown;
}

// The draft's row at the gateway, read once by id when the answer lacks a part (issue 45,
// finding 9): a gateway may answer {id, prospect_url, subject, status} and keep the body and
// the recipient in its backlink_outreach row. Parts found there are named "record:<member>".
class DraftRecord {
public:
    DraftRecord(Toolbox& box, std::string client_id, std::string id, std::stop_token stop)
        : box_(box), client_id_(std::move(client_id)), id_(std::move(id)), stop_(stop) {}

    std::optional<FoundText> find(std::span<const std::string_view> names) {
        if (!read_) read();
        if (!record_.is_object()) return std::nullopt;
        auto found = find_by_meaning(record_, names);
        if (found) found->from = "record:" + found->from;
        return found;
    }
    // Why the row could not be read ("" when it was, or was never needed).
    const std::string& failure() const { return failure_; }
    bool was_read() const { return record_.is_object(); }

private:
    void read() {
        read_ = true;
        if (id_.empty()) {
            failure_ = "its answer carries no id to read the draft's record by";
            return;
        }
        try {
            record_ = first_row(box_,
                                {.resource = "backlink_outreach",
                                 .client_id = client_id_,
                                 .filter_field = "id",
                                 .filter_value = id_},
                                "no backlink_outreach row " + id_, stop_);
        } catch (const gateway::Error& e) {
            failure_ = std::string("reading its record (resource=backlink_outreach, id ") + id_ +
                       ") failed: " + e.what();
        }
    }

    Toolbox& box_;
    std::string client_id_;
    std::string id_;
    std::stop_token stop_;
    bool read_ = false;
    json record_;
    std::string failure_;
};

// The first of `names` in the answer, else in the draft's record.
std::optional<FoundText> find_part(const json& data, DraftRecord& record,
                                   std::span<const std::string_view> names) {
    if (auto found = find_by_meaning(data, names)) return found;
    return record.find(names);
}

}  // namespace

void finish_outreach_draft(ActionRuntime& runtime, Toolbox& box, const json& args, const json& data,
                           json& result, const mcp::RequestContext& ctx) {
    DraftRecord record(box, args.at("client_id").get<std::string>(), id_text(data), ctx.stop);
    std::vector<std::string> warnings;
    std::vector<std::string> missing;
    // The caller's recipient, else the draft's address under the names gateways use; real
    // drafts may have none, or a name where the address should be.
    std::string recipient = string_arg(args, "recipient");
    json recipient_from = recipient.empty() ? json(nullptr) : json("argument");
    if (recipient.empty()) {
        if (auto found = find_part(data, record, kRecipientNames)) {
            if (plausible_address(found->text)) {
                recipient = found->text;
                recipient_from = found->from;
            } else {
                warnings.push_back("the gateway's recipient \"" + found->text.substr(0, 120) +
                                   "\" (" + found->from + ") is not an e-mail address");
            }
        }
        if (recipient.empty() && warnings.empty())
            warnings.emplace_back("the gateway drafted this e-mail without a recipient address");
        if (recipient.empty()) missing.emplace_back("recipient (the prospect's e-mail address)");
    }
    const auto subject = find_part(data, record, kSubjectNames);
    if (!subject) {
        warnings.emplace_back("the gateway's draft carries no subject");
        missing.emplace_back("subject");
    }
    const auto body = find_part(data, record, kBodyNames);
    const std::string html = body ? as_html(body->text) : std::string();
    bool cut = false;
    const std::string text = plain_text(html, kEmailBodyChars, &cut);
    if (!body) {
        warnings.emplace_back(
            "the gateway's draft carries no body (looked for html, body_html, body, content, "
            "text and similar names, in its answer and one object down, and in its "
            "backlink_outreach record)");
    } else if (text.empty()) {
        warnings.push_back("the gateway's draft body (" + body->from + ") holds no text");
    }
    if (text.empty()) missing.emplace_back("body (the e-mail's text or HTML)");
    state::Draft draft{.client_id = args.at("client_id").get<std::string>(),
                       .recipient = recipient,
                       .subject = subject ? subject->text : std::string(),
                       .html = html,
                       .gateway_id = id_text(data),
                       .prospect_url = args.at("prospect").get<std::string>(),
                       .principal = principal_of(ctx)};
    draft = runtime.store().create_draft(std::move(draft));
    result["email_id"] = draft.id;
    result["status"] = "drafted";
    result["recipient"] = recipient.empty() ? json(nullptr) : json(recipient);
    result["recipient_from"] = recipient_from;
    result["title"] = subject ? shown_text(subject->text) : json(nullptr);
    result["subject_from"] = subject ? json(subject->from) : json(nullptr);
    // The text a person will approve (the preview shows it again); the model can change it by
    // passing body to send_prospect_email.
    result["body"] = text.empty() ? json(nullptr) : shown_text(text);
    result["body_from"] = body ? json(body->from) : json(nullptr);
    if (cut) result["body_truncated"] = true;
    if (record.was_read()) result["read_back"] = "resource=backlink_outreach id=" + id_text(data);
    if (!record.failure().empty() && !missing.empty())
        warnings.push_back("the answer lacked a part, and " + record.failure());
    if (!warnings.empty()) result["warnings"] = warnings;
    if (!missing.empty()) {
        std::string step = "Before sending, pass ";
        for (std::size_t i = 0; i < missing.size(); ++i)
            step += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
        result["next_step"] = step + " to send_prospect_email with this email_id.";
    }
    result["data"] = shown_draft_data(data, body);
}

}  // namespace agency::tools
