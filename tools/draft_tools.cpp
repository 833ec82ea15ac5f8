// Acting on drafts: deploy_article publishes a drafted article, send_prospect_email sends an
// outreach draft. Both act on the outside world, so a person confirms first; confirmed acts
// spend no credits but honour idempotency_key like every action.
#include "tools/action_internal.hpp"

namespace agency::tools {

namespace {

ActionEntry deploy_article(const std::shared_ptr<Toolbox>& box) {
    return {.spec = {.name = "deploy_article",
                  .title = "Deploy article",
                  .description =
                      "Publishes a drafted article to the client's site. Asks for confirmation "
                      "first: by elicitation when the client supports it, otherwise the first "
                      "call returns a preview and a confirmation_id, and only a second call with "
                      "the same arguments and that confirmation_id deploys.",
                  .destructive = true,
                  .idempotent = false,
                  .gateway_action = "deploy_blog",
                  .mapping = "POST action=deploy_blog {post_id: article_id} after confirmation; "
                             "the preview reads resource=blogs by id and resource=clients"},
         .spends_credits = false,
         .preview = [box](const json& args, mcp::RequestContext& ctx) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string article_id = args.at("article_id").get<std::string>();
             const json article = first_row(
                 *box,
                 {.resource = "blogs",
                  .client_id = client_id,
                  .filter_field = "id",
                  .filter_value = article_id},
                 "unknown article_id " + article_id + " for client_id " + client_id +
                     "; list_articles shows the ids",
                 ctx.stop);
             const json client = client_record(*box, client_id, ctx.stop);
             json title = first_string(article, {"post_title", "title", "keyword"});
             json site = first_string(client, {"website", "domain", "name"});
             json target = first_string(article, {"deployment_target"});
             if (target.is_null()) target = first_string(client, {"deployment_target"});
             json status = first_string(article, {"status"});
             const std::string title_text = title.is_null() ? article_id : title.get<std::string>();
             std::string message = "Deploy article \"" + title_text + "\" (" + article_id +
                                   ") to " +
                                   (site.is_null() ? "client " + client_id
                                                   : site.get<std::string>()) +
                                   (target.is_null() ? std::string()
                                                     : " via " + target.get<std::string>()) +
                                   ".";
             if (status.is_string() && status == "published")
                 message += " It is already published; deploying again republishes it.";
             return Preview{message,
                            {{"action", "deploy_blog"},
                             {"article_id", article_id},
                             {"title", title},
                             {"site", site},
                             {"deployment_target", target},
                             {"current_status", status}}};
         },
         .execute = [box](const json& args, const Preview& preview, mcp::RequestContext& ctx) {
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
             result["data"] = data;
             // Published after all: the answer says how that is known (sent once).
             if (r.recovered) result["note"] = r.note;
             return result;
         }};
}

ActionEntry send_prospect_email(const std::shared_ptr<Toolbox>& box, const std::shared_ptr<ActionRuntime>& rt) {
    return {.spec = {.name = "send_prospect_email",
                  .title = "Send outreach email",
                  .description =
                      "Sends a draft from generate_outreach_email (email_id) to its recipient, "
                      "once. Confirmation first: by elicitation when the client supports it, "
                      "else the first call returns a preview and a confirmation_id; a second "
                      "call with the same arguments and that confirmation_id sends.",
                  .destructive = true,
                  .idempotent = false,
                  .gateway_action = "send_prospect_email",
                  .mapping = "POST action=send_prospect_email {to, subject, html, email_id} from "
                             "the stored draft, after confirmation; the draft is then marked "
                             "sent"},
         .spends_credits = false,
         .preview = [rt](const json& args, mcp::RequestContext&) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string email_id = args.at("email_id").get<std::string>();
             auto draft = rt->store().draft(email_id);
             if (!draft || draft->client_id != client_id)
                 throw Refused{"not_found",
                                      "unknown email_id " + email_id + " for client_id " +
                                          client_id + "; generate_outreach_email returns it"};
             if (draft->status != "draft")
                 throw Refused{"already_sent",
                                      "email " + email_id + " to " + draft->recipient +
                                          " was already sent; nothing was sent again"};
             if (draft->recipient.empty())
                 throw Refused{"validation", "draft " + email_id + " has no recipient address"};
             return Preview{"Send the email \"" + draft->subject + "\" to " + draft->recipient +
                                " (draft " + email_id + ").",
                            {{"action", "send_prospect_email"},
                             {"email_id", email_id},
                             {"to", draft->recipient},
                             {"subject", draft->subject},
                             {"prospect_url", draft->prospect_url}}};
         },
         .execute = [box, rt](const json& args, const Preview&, mcp::RequestContext& ctx) {
             const std::string client_id = args.at("client_id").get<std::string>();
             const std::string email_id = args.at("email_id").get<std::string>();
             // Re-read: another call may have sent it since the preview.
             auto draft = rt->store().draft(email_id);
             if (!draft || draft->status != "draft")
                 throw Refused{"already_sent", "email " + email_id + " was already sent"};
             json body = {{"to", draft->recipient},
                          {"subject", draft->subject},
                          {"html", draft->html}};
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
             json result{{"ok", true},
                         {"client_id", client_id},
                         {"email_id", email_id},
                         {"status", normalize_status(data, "sent")},
                         {"recipient", draft->recipient},
                         {"title", draft->subject},
                         {"data", data}};
             if (r.recovered) result["note"] = r.note;
             return result;
         }};
}

}  // namespace

std::vector<ActionEntry> draft_tools(const std::shared_ptr<Toolbox>& box,
                                     const std::shared_ptr<ActionRuntime>& rt) {
    return {deploy_article(box),
            send_prospect_email(box, rt)};
}

}  // namespace agency::tools
