// Acting on drafts: deploy_article publishes a drafted article, send_prospect_email sends an
// outreach draft. Both act on the outside world, so a person confirms first; confirmed acts
// spend no credits but honour idempotency_key like every action.
#include "base/untrusted_text.hpp"
#include "tools/actions/action_internal.hpp"
#include "tools/actions/html_inventory.hpp"
#include "tools/actions/outreach_internal.hpp"

namespace agency::tools {

namespace {

// Whether a gateway record holds text a reader would not see (HTML comments, hidden elements,
// invisible characters) in any of its string members: what is published is the record as the
// gateway keeps it, not the cleaned text a preview shows.
bool record_hides_text(const json& record) {
    if (!record.is_object()) return false;
    for (const auto& [key, value] : record.items())
        if (value.is_string() && base::holds_hidden_text(value.get_ref<const std::string&>()))
            return true;
    return false;
}

// What a person approves before an article goes live: its title, an excerpt of its text and
// where it will be published, read from the article and the client records.
Preview deploy_preview(Toolbox& box, const json& args, mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string article_id = args.at("article_id").get<std::string>();
    const json article = first_row(box,
                                   {.resource = "blogs",
                                    .client_id = client_id,
                                    .filter_field = "id",
                                    .filter_value = article_id},
                                   "no blog post " + article_id + " for client_id " + client_id +
                                       ": deploy_article publishes blog posts (list_articles "
                                       "rows whose resource is \"blogs\"); the gateway has no "
                                       "deploy action for geo articles",
                                   ctx.stop);
    const json client = client_record(box, client_id, ctx.stop);
    // Gateway text, shown to a person: cleaned of what would hide from them.
    const json title = shown_text(first_text(article, {"post_title", "title", "keyword"}));
    const json site = shown_text(first_text(client, {"website", "domain", "name"}));
    json target = shown_text(first_text(article, {"deployment_target"}));
    if (target.is_null()) target = shown_text(first_text(client, {"deployment_target"}));
    const json url = shown_text(first_text(article, {"url", "permalink", "link"}));
    const json status = shown_text(first_text(article, {"status"}));
    const json excerpt = article_excerpt(article);
    const std::string title_text = title.is_null() ? article_id : title.get<std::string>();
    std::string where = site.is_null() ? "client " + client_id : site.get<std::string>();
    if (!target.is_null()) where += " via " + target.get<std::string>();
    std::string message =
        "Publish the article \"" + title_text + "\" (" + article_id + ") on " + where + ".";
    if (!url.is_null()) message += "\nAddress: " + url.get<std::string>();
    message +=
        "\nExcerpt: " + (excerpt.is_null() ? std::string("(the gateway's record carries no article "
                                                         "text; list_articles shows the record)")
                                           : excerpt.get<std::string>());
    if (status == "published")
        message += "\nIt is already published; deploying again republishes it.";
    // What goes live is the article as the gateway keeps it: a person hears that it hides
    // something, as the send preview says of an e-mail.
    const bool hides = record_hides_text(article);
    if (hides)
        message +=
            "\n[The article also holds text a reader would not see (HTML comments, "
            "hidden elements or invisible characters): it is not shown here, and it "
            "would be published as written.]";
    // What a reader of the page meets besides its text: forms, frames, links, remote images.
    const json body_html = first_text(article, kArticleBodyNames);
    const HtmlInventory inventory =
        html_inventory(body_html.is_string() ? body_html.get_ref<const std::string&>() : "");
    message += inventory_note(inventory, "article");
    Preview preview{message,
                    {{"action", "deploy_blog"},
                     {"article_id", article_id},
                     {"title", title},
                     {"excerpt", excerpt},
                     {"site", site},
                     {"deployment_target", target},
                     {"url", url},
                     {"current_status", status},
                     {"hidden_text", hides}},
                    true,
                    // The approval view shows the article in full (sanitised there).
                    {{"body_html", body_html}}};
    add_inventory(preview.details, inventory);
    return preview;
}

// A part a send needs and has not got: refused before anyone is asked to approve it.
[[noreturn]] void refuse_missing(const std::string& email_id, const std::string& what,
                                 const std::string& why, const std::string& argument) {
    throw Refused{"validation", "the draft " + email_id + " has no " + what + " (" + why +
                                    "): pass " + argument +
                                    " to send_prospect_email. Nothing "
                                    "was sent, and no one was asked to approve it."};
}

// What a person approves before an e-mail goes out: recipient, subject and the body's text,
// exactly as the send posts them (outgoing_email). A draft is the caller's own: another
// caller's email_id answers exactly as an unknown one.
Preview send_preview(ActionRuntime& rt, const json& args, const mcp::RequestContext& ctx) {
    const std::string client_id = args.at("client_id").get<std::string>();
    const std::string email_id = args.at("email_id").get<std::string>();
    auto draft = rt.store().draft(email_id, principal_of(ctx));
    if (!draft || draft->client_id != client_id)
        throw Refused{"not_found", "unknown email_id " + email_id + " for client_id " + client_id +
                                       "; generate_outreach_email returns it"};
    if (draft->status != "draft")
        throw Refused{"already_sent",
                      "email " + email_id +
                          (draft->recipient.empty() ? std::string() : " to " + draft->recipient) +
                          " was already sent; nothing was sent again"};
    const OutgoingEmail email = outgoing_email(args, *draft);
    if (email.to.empty())
        refuse_missing(email_id, "recipient address", "the gateway drafted it without one",
                       "recipient, the prospect's e-mail address,");
    if (email.subject.empty())
        refuse_missing(email_id, "subject", "the gateway drafted it without one", "subject");
    bool cut = false;
    const std::string body = plain_text(email.html, kEmailBodyChars, &cut);
    if (body.empty())
        refuse_missing(email_id, "body",
                       email.body_from == "argument" ? "the body given holds no text"
                                                     : "the gateway's draft carried no body text",
                       "body, the e-mail's text or HTML,");
    const std::string subject = shown_text(email.subject).get<std::string>();
    std::string message = "Send this e-mail to " + email.to + " (draft " + email_id +
                          ").\nSubject: " + subject + "\n\n" + body;
    if (cut) message += "\n[Shown up to 1,500 characters; the whole text is sent.]";
    if (email.body_from == "argument" || email.subject_from == "argument")
        message += "\n[The " +
                   std::string(
                       email.body_from == "argument"
                           ? (email.subject_from == "argument" ? "subject and text are" : "text is")
                           : "subject is") +
                   " the caller's, not the gateway's draft.]";
    // What is sent is the e-mail as written: a person hears that it hides something.
    const bool hides =
        base::holds_hidden_text(email.html) || base::holds_hidden_text(email.subject);
    if (hides)
        message +=
            "\n[The e-mail also holds text a reader would not see (HTML comments, hidden "
            "elements or invisible characters): it is not shown here, and it would be "
            "sent as written.]";
    // What its reader meets besides the text: forms, frames, links, remote images.
    const HtmlInventory inventory = html_inventory(email.html);
    message += inventory_note(inventory, "e-mail");
    Preview preview{message,
                    {{"action", "send_prospect_email"},
                     {"email_id", email_id},
                     {"to", email.to},
                     {"recipient_from", email.to_from},
                     {"subject", subject},
                     {"subject_from", email.subject_from},
                     {"body", body},
                     {"body_from", email.body_from},
                     {"body_truncated", cut},
                     {"hidden_text", hides},
                     {"prospect_url", draft->prospect_url}},
                    true,
                    // The approval view shows the e-mail as it is sent (sanitised there).
                    {{"recipient", email.to}, {"body_html", email.html}}};
    add_inventory(preview.details, inventory);
    return preview;
}

ActionEntry deploy_article(const std::shared_ptr<Toolbox>& box) {
    return {.spec = {.name = "deploy_article",
                     .toolset = "content",
                     .title = "Deploy article",
                     .description =
                         "Publishes a draft article (generate_article) live on the client's site "
                         "once a person confirms, shown its title, an excerpt and where: by "
                         "elicitation, else a preview and a confirmation_id to pass back with the "
                         "same arguments.",
                     .destructive = true,
                     .idempotent = false,
                     .gateway_action = "deploy_blog",
                     .mapping = "POST action=deploy_blog {post_id: article_id} after confirmation; "
                                "the preview reads resource=blogs by id and resource=clients, and "
                                "an answer that does not say the article is live is checked by "
                                "reading it again"},
            .id_field = "article_id",  // the write log's record id
            .spends_credits = false,
            .preview = [box](const json& args,
                             mcp::RequestContext& ctx) { return deploy_preview(*box, args, ctx); },
            .execute =
                [box](const json& args, const Preview& preview, mcp::RequestContext& ctx) {
                    const std::string client_id = args.at("client_id").get<std::string>();
                    const std::string article_id = args.at("article_id").get<std::string>();
                    const gateway::ActionResult r = box->gateway().act(
                        "deploy_blog", client_id, {{"post_id", article_id}}, ctx.stop);
                    const json data = r.data.is_object() ? r.data : json::object();
                    json result = {{"ok", true},
                                   {"client_id", client_id},
                                   {"article_id", article_id},
                                   {"status", normalize_status(data, "published")}};
                    json title = first_string(data, {"post_title", "title"});
                    if (title.is_null()) title = preview.details.value("title", json());
                    if (title.is_string()) result["title"] = title;
                    if (auto it = data.find("url"); it != data.end() && it->is_string())
                        result["url"] = *it;
                    // An answer that does not say the article is live: its record tells.
                    if (!says_live(data) && first_text(data, {"status"}).is_null())
                        article_status_from_record(*box, client_id, article_id,
                                                   "The gateway accepted the deploy, but", result,
                                                   ctx.stop);
                    result["data"] = data;
                    // Published after all: the answer says how that is known (sent once).
                    if (r.recovered) result["note"] = r.note;
                    return result;
                },
            .find_lost =
                [box](const json& args, std::chrono::system_clock::time_point since,
                      mcp::RequestContext& ctx) {
                    const std::string client_id = args.at("client_id").get<std::string>();
                    const std::string article_id = args.at("article_id").get<std::string>();
                    gateway::LostAction found = box->gateway().find_lost_action(
                        "deploy_blog", client_id, {{"post_id", article_id}}, since, ctx.stop);
                    LostCall lost{.detail = found.detail, .hint = found.hint};
                    if (!found.ran) return lost;
                    json data = found.row.is_object() ? std::move(found.row) : json::object();
                    lost.result = json{{"ok", true},
                                       {"client_id", client_id},
                                       {"article_id", article_id},
                                       {"status", normalize_status(data, "published")},
                                       {"note", lost_call_note(found.detail)}};
                    if (json title = first_string(data, {"post_title", "title"}); title.is_string())
                        (*lost.result)["title"] = title;
                    (*lost.result)["data"] = std::move(data);
                    return lost;
                }};
}

ActionEntry send_prospect_email(const std::shared_ptr<Toolbox>& box,
                                const std::shared_ptr<ActionRuntime>& rt) {
    return {
        .spec = {.name = "send_prospect_email",
                 .toolset = "outreach",
                 .title = "Send outreach email",
                 .description =
                     "Sends a generate_outreach_email draft once. A person confirms first, "
                     "shown what is sent: by elicitation, else a preview and a confirmation_id "
                     "to pass back with the same arguments.",
                 .destructive = true,
                 .idempotent = false,
                 .gateway_action = "send_prospect_email",
                 .mapping = "POST action=send_prospect_email {to, subject, html, email_id}: "
                            "recipient, subject and body (plain text becomes HTML paragraphs) "
                            "where given, else the stored draft's, after confirmation; the "
                            "draft is then marked sent"},
        .id_field = "email_id",  // the write log's record id
        .spends_credits = false,
        .preview = [rt](const json& args,
                        mcp::RequestContext& ctx) { return send_preview(*rt, args, ctx); },
        .execute =
            [box, rt](const json& args, const Preview&, mcp::RequestContext& ctx) {
                const std::string client_id = args.at("client_id").get<std::string>();
                const std::string email_id = args.at("email_id").get<std::string>();
                // Re-read: another call may have sent it since the preview.
                auto draft = rt->store().draft(email_id, principal_of(ctx));
                if (!draft || draft->client_id != client_id)  // the preview's answer, re-checked
                    throw Refused{"not_found", "unknown email_id " + email_id + " for client_id " +
                                                   client_id +
                                                   "; generate_outreach_email returns it"};
                if (draft->status != "draft")
                    throw Refused{"already_sent", "email " + email_id + " was already sent"};
                const OutgoingEmail email = outgoing_email(args, *draft);
                const std::string& to = email.to;
                json body = {{"to", email.to}, {"subject", email.subject}, {"html", email.html}};
                if (!draft->gateway_id.empty()) body["email_id"] = draft->gateway_id;
                gateway::ActionResult r;
                try {
                    r = box->gateway().act("send_prospect_email", client_id, body, ctx.stop);
                } catch (const gateway::Error& e) {
                    if (e.reason() != gateway::ErrorReason::outcome_unknown) throw;
                    // It may have gone out: an email sent twice cannot be taken back, so the draft
                    // is not offered for sending again.
                    rt->store().mark_draft_sent(email_id);
                    throw gateway::Error(e.reason(),
                                         std::string(e.what()) + " The draft " + email_id +
                                             " is marked sent so that it cannot go out twice; "
                                             "read_resource backlink_outreach shows whether it "
                                             "was sent.",
                                         e.http_status(), e.gateway_error(), e.status_code(),
                                         e.data());
                }
                rt->store().mark_draft_sent(email_id);
                json data = r.data.is_object() ? r.data : json::object();
                data.erase("html");
                json result{{"ok", true},           {"client_id", client_id},
                            {"email_id", email_id}, {"status", normalize_status(data, "sent")},
                            {"recipient", to},      {"title", email.subject},
                            {"data", data}};
                if (r.recovered) result["note"] = r.note;
                return result;
            },
        .find_lost =
            [box, rt](const json& args, std::chrono::system_clock::time_point since,
                      mcp::RequestContext& ctx) {
                const std::string client_id = args.at("client_id").get<std::string>();
                const std::string email_id = args.at("email_id").get<std::string>();
                auto draft = rt->store().draft(email_id, principal_of(ctx));
                if (!draft || draft->client_id != client_id)
                    return LostCall{.detail = "the draft " + email_id + " is not known any more",
                                    .hint =
                                        "read resource=backlink_outreach (newest first) to "
                                        "see whether the e-mail shows as sent"};
                const OutgoingEmail email = outgoing_email(args, *draft);
                const std::string& to = email.to;
                json body = {{"to", to}, {"subject", email.subject}};
                if (!draft->gateway_id.empty()) body["email_id"] = draft->gateway_id;
                gateway::LostAction found = box->gateway().find_lost_action(
                    "send_prospect_email", client_id, body, since, ctx.stop);
                LostCall lost{.detail = found.detail, .hint = found.hint};
                if (!found.ran) return lost;
                rt->store().mark_draft_sent(email_id);
                json data = found.row.is_object() ? std::move(found.row) : json::object();
                data.erase("html");
                lost.result = json{{"ok", true},
                                   {"client_id", client_id},
                                   {"email_id", email_id},
                                   {"status", normalize_status(data, "sent")},
                                   {"recipient", to},
                                   {"title", email.subject},
                                   {"data", std::move(data)},
                                   {"note", lost_call_note(found.detail)}};
                return lost;
            }};
}

}  // namespace

std::vector<ActionEntry> draft_tools(const std::shared_ptr<Toolbox>& box,
                                     const std::shared_ptr<ActionRuntime>& rt) {
    return {deploy_article(box), send_prospect_email(box, rt)};
}

}  // namespace agency::tools
