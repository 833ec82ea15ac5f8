// The sample's outreach actions: generate_outreach_email drafts an e-mail into
// backlink_outreach (its body where Options::outreach_body_field says), send_prospect_email
// sends one (a draft by email_id, else the newest draft to that address), requiring html as a
// gateway that implements the spec does.
#include "gateway/sample/sample_action_kit.hpp"

namespace agency::sample::detail::actions {

ActionOutcome generate_outreach_email(const Ctx& ctx) {
    const std::string prospect = text_field(ctx.body, "prospectUrl");
    const std::string host = url_host(prospect);
    if (host.find('.') == std::string::npos) {
        return fail(400, "prospectUrl must be a URL such as https://example.com/resources (got '" +
                             prospect + "')");
    }
    const std::string tone = text_field(ctx.body, "tone", "professional");
    auto r = ctx.rng("generate_outreach_email");
    const ojson email = outreach_fields(ctx.client, prospect, tone, r);
    // Options::outreach_body_field: where this gateway keeps the body ("" none; "a.b" nested).
    const std::string& field = ctx.store.options.outreach_body_field;
    const std::size_t dot = field.find('.');
    const std::string leaf = dot == std::string::npos ? field : field.substr(dot + 1);
    ojson row{
        {"prospect_url", prospect},
        {"prospect_domain", host},
        // A real gateway leaves it empty when it found no contact address for the prospect.
        {"email_to", ctx.store.options.empty_recipients ? std::string() : "editor@" + host},
        {"subject", email["subject"]}, {"tone", tone},
        {"status", "draft"},           {"sent_at", nullptr},      {"created_at", ctx.now},
        {"updated_at", ctx.now}};
    if (!leaf.empty()) row[leaf] = email["html"];
    row["id"] = ctx.add("backlink_outreach", row);
    if (ctx.store.options.outreach_record_only)
        return ok(pick(row, {"id", "prospect_url", "subject", "status"}));
    if (dot != std::string::npos) {
        ojson answer = pick(row, {"id", "prospect_url", "email_to", "status", "created_at"});
        answer[field.substr(0, dot)] = ojson{{"subject", row["subject"]}, {leaf, row[leaf]}};
        return ok(answer);
    }
    std::vector<std::string> shown{"id", "prospect_url", "email_to", "subject", "status",
                                   "created_at"};
    if (!leaf.empty()) shown.insert(shown.begin() + 4, leaf);
    return ok(pick(row, shown));
}

ActionOutcome send_prospect_email(const Ctx& ctx) {
    const std::string to = text_field(ctx.body, "to");
    const auto at = to.find('@');
    if (at == std::string::npos || at == 0 || at + 1 == to.size()) {
        return fail(400,
                    "to must be an e-mail address such as editor@example.com (got '" + to + "')");
    }
    // As a gateway that implements the spec does: `html` is a required field, and an empty one
    // is missing.
    if (text_field(ctx.body, "html").empty())
        return fail(400, "Missing required field for action send_prospect_email: html");
    const std::string email_id = text_field(ctx.body, "email_id");
    std::optional<std::size_t> index;
    if (!email_id.empty()) {
        index = ctx.table("backlink_outreach").find(email_id);
        if (!index) {
            return fail(404, "unknown email_id '" + email_id + "' for client_id " + ctx.client.id +
                                 "; read resource=backlink_outreach for drafted e-mails");
        }
    } else {
        // Sending to an address with a draft sends that draft.
        const Table& t = ctx.table("backlink_outreach");
        for (std::size_t i = t.size(); i-- > 0 && !index;) {
            const ojson row = t.parsed(i);
            if (row.value("email_to", "") == to && row.value("status", "") == "draft") index = i;
        }
    }
    ojson row;
    if (index)
        row = ctx.table("backlink_outreach").parsed(*index);
    else {
        const std::string domain = to.substr(at + 1);
        row = ojson{{"prospect_url", "https://" + domain},
                    {"prospect_domain", domain},
                    {"tone", nullptr},
                    {"created_at", ctx.now}};
    }
    row["email_to"] = to;
    row["subject"] = text_field(ctx.body, "subject");
    row["html"] = text_field(ctx.body, "html");
    row["status"] = "sent";
    if (!ctx.store.options.bare_records) row["sent_at"] = ctx.now;
    row["updated_at"] = ctx.now;
    if (index)
        ctx.update("backlink_outreach", *index, row);
    else
        row["id"] = ctx.add("backlink_outreach", row);
    return ok(pick(row, {"id", "email_to", "subject", "status", "sent_at"}));
}

}  // namespace agency::sample::detail::actions
