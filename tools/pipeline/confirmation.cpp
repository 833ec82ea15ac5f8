// The confirmation stage of a confirmed action: a client with elicitation is asked (legacy:
// mid-call; modern: input_required); any other gets a preview and a single-use
// confirmation_id bound to the caller, the tool and the exact arguments, and acts only when
// called again with it. With ActionSettings::elicitation_only, only the elicitation answer
// confirms: the model relays a confirmation_id, so it proves no person saw the preview.
#include <chrono>

#include "base/log.hpp"

#include "base/untrusted_text.hpp"
#include "tools/kit/tool_metrics.hpp"
#include "tools/pipeline/action_runtime.hpp"
#include "tools/pipeline/pipeline.hpp"
#include "tools/pipeline/view_approval.hpp"

namespace agency::tools {

namespace {

constexpr std::chrono::seconds kConfirmationTtl{600};

Preview shown(const Preview& preview) {
    Preview out = preview;
    out.message = base::strip_invisible_text(preview.message);
    base::UntrustedJsonCleaner invisible_only(false);
    const std::string details = preview.details.dump();
    if (const std::string_view clean = invisible_only.clean(details);
        clean.size() != details.size())
        out.details = json::parse(clean);
    return out;
}

std::string refusal_text(ConfirmOutcome outcome) {
    switch (outcome) {
        case ConfirmOutcome::unknown:
            return "is not known (never issued, or issued to another caller or tool)";
        case ConfirmOutcome::used: return "was already used; each confirmation_id acts once";
        case ConfirmOutcome::expired: return "has expired (they last 10 minutes)";
        case ConfirmOutcome::mismatch: return "was issued for other arguments";
        case ConfirmOutcome::accepted: break;
    }
    return "was accepted";
}

// A second call carrying the confirmation_id of a preview: spent once, here.
std::optional<mcp::ToolResult> confirm_with_id(ActionRuntime& rt, const std::string& tool,
                                               const json& call_args,
                                               const std::string& confirmation_id,
                                               const std::string& principal) {
    const ConfirmOutcome outcome =
        rt.store().consume_confirmation(confirmation_id, principal, tool, args_digest(call_args));
    if (outcome != ConfirmOutcome::accepted) {
        count_confirmation(outcome == ConfirmOutcome::expired ? "expired" : "refused",
                           "confirmation_id");
        // The confirmation_id is a secret: it never goes to the log.
        log::warn("{}: a confirmation_id of {} was refused", tool, principal);
        return tool_error("confirmation", "confirmation_id \"" + confirmation_id + "\" " +
                                              refusal_text(outcome) + "; nothing was done. Call " +
                                              tool + " without confirmation_id for a new preview.");
    }
    log::info("{}: confirmed by {} with a confirmation_id", tool, principal);
    count_confirmation("granted", "confirmation_id");
    return std::nullopt;
}

const json* member(const json& object, const char* key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

// Asks the user through the client (elicitation/create).
std::optional<mcp::ToolResult> confirm_by_elicitation(const ActionCall& call,
                                                      const Preview& preview,
                                                      const std::string& principal,
                                                      mcp::RequestContext& ctx) {
    const std::string& tool = call.tool;
    const json schema = {{"type", "object"},
                         {"properties",
                          {{"confirm",
                            {{"type", "boolean"},
                             {"title", call.title + " now?"},
                             {"description", preview.message}}}}},
                         {"required", json::array({"confirm"})}};
    // Asked once per question: a legacy client now; a modern one in the round that returns
    // input_required (the round that brings the answer asks nothing).
    if (ctx.era == mcp::Era::legacy) count_confirmation("asked", "elicitation");
    json answer;
    try {
        answer = ctx.ask("confirm", "elicitation/create",
                         {{"message", preview.message}, {"requestedSchema", schema}});
    } catch (const mcp::InputRequired&) {
        count_confirmation("asked", "elicitation");
        throw;
    }
    // The answer is the client's: any shape may arrive. Only a boolean true confirms;
    // "true" or 1 is refused as malformed rather than taken for a yes.
    const json* action_field = member(answer, "action");
    const std::string action = action_field && action_field->is_string()
                                   ? action_field->get<std::string>()
                                   : std::string();
    const json* content = member(answer, "content");
    const json* confirm = content ? member(*content, "confirm") : nullptr;
    if (action == "accept" && confirm && !confirm->is_boolean()) {
        log::info("{}: malformed confirmation answer from {}, nothing sent", tool, principal);
        count_confirmation("refused", "elicitation");
        return tool_error(
            "invalid_answer",
            "the client's confirmation answer is malformed: confirm must be "
            "true or false, got " +
                confirm->dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 64) +
                ". Nothing was done; call the tool again to be asked again.");
    }
    const bool yes = action == "accept" && confirm && *confirm == true;
    count_confirmation(yes ? "granted" : "declined", "elicitation");
    if (yes) return std::nullopt;
    const std::string why = action == "accept" ? "not confirmed (confirm was not true)"
                            : action.empty()   ? "not answered"
                                               : action + "d";
    log::info("{}: {} by {}, nothing sent", tool, why, principal);
    return tool_error(action == "cancel" ? "cancelled" : "declined",
                      "the user " +
                          (action == "cancel"    ? std::string("cancelled")
                           : action == "decline" ? std::string("declined")
                                                 : "did not confirm") +
                          ": " + preview.message + " Nothing was done.",
                      {{"action", action.empty() ? json(nullptr) : json(action)}});
}

// The first step of the two-step confirmation: the preview and a new confirmation_id.
mcp::ToolResult issue_confirmation(ActionRuntime& rt, const std::string& tool,
                                   const json& call_args, const Preview& preview,
                                   const std::string& principal) {
    const Confirmation c =
        rt.store().create_confirmation(principal, tool, args_digest(call_args), kConfirmationTtl);
    count_confirmation("asked", "confirmation_id");
    json out = {{"ok", true},
                {"client_id", call_args.value("client_id", "")},
                {"status", "confirmation_required"},
                {"confirmation_id", c.id},
                {"expires_at", iso_time(c.expires_at)},
                {"message", preview.message +
                                " Nothing was done yet: show this to the user and, "
                                "once they agree, call " +
                                tool +
                                " again with the same arguments and this "
                                "confirmation_id (single use, 10 minutes)."},
                {"preview", preview.details}};
    return mcp::ToolResult::structured(out.dump());
}

// The elicitation-only mode's refusal: a confirmation_id proves only that the model relayed it,
// so this server takes a person's answer to its form and nothing else.
enum class WhyNoForm { had_id, cannot_elicit, cannot_answer };

mcp::ToolResult elicitation_required(const std::string& tool, const Preview& preview,
                                     WhyNoForm why) {
    const bool had_id = why == WhyNoForm::had_id;
    log::info("{}: refused, this server confirms by elicitation only ({})", tool,
              had_id ? "a confirmation_id was passed" : "the client cannot elicit");
    return tool_error(
        "confirmation_required",
        std::string(had_id ? "a confirmation_id is not accepted here: "
                    : why == WhyNoForm::cannot_answer
                        ? "this client declared elicitation but answered the confirmation form "
                          "with \"Method not found\", so it cannot show one: "
                        : "this client cannot show a confirmation form: ") +
            "this server accepts only a person's answer to its elicitation form as the "
            "confirmation of " +
            tool +
            " (the operator chose --confirm elicitation-only). Use "
            "an MCP client that supports elicitation and call " +
            tool +
            " without confirmation_id. Nothing was done. What it would do: " + preview.message,
        {{"preview", preview.details}});
}

// The person answered in the approval view (view_decide): a decline ends the call; an
// approval acts, unless the operator accepts only the elicitation form: then the host's own
// form asks the person once more, and only its yes acts. The token is spent once the answer
// is final (a modern form round runs the call again from the top).
std::optional<mcp::ToolResult> decided_in_view(ActionRuntime& rt, const ActionCall& call,
                                               const Preview& preview, const ViewDecision& decided,
                                               const std::string& principal,
                                               mcp::RequestContext& ctx) {
    if (decided.tool != call.tool)
        return tool_error("confirmation", "this approval was for " + decided.tool + ", not " +
                                              call.tool + "; nothing was done");
    std::optional<mcp::ToolResult> form;  // the form's answer when it ends the call
    if (decided.approve && rt.settings().elicitation_only) {
        if (!ctx.client_supports("elicitation")) {
            form = elicitation_required(call.tool, preview, WhyNoForm::cannot_elicit);
        } else {
            try {
                form = confirm_by_elicitation(call, preview, principal, ctx);
            } catch (const mcp::RpcError& e) {
                if (e.code() != mcp::error_code::method_not_found) throw;
                form = elicitation_required(call.tool, preview, WhyNoForm::cannot_answer);
            }
        }
    }
    if (auto refused = spend(rt, decided, principal)) return refused;
    if (form) return form;
    if (!decided.approve) {
        count_confirmation("declined", "view");
        return tool_error(
            "declined",
            "the person declined in the approval view: " + preview.message + " Nothing was done.",
            {{"action", "decline"}});
    }
    if (!rt.settings().elicitation_only) count_confirmation("granted", "view");
    return std::nullopt;
}

}  // namespace

std::optional<mcp::ToolResult> confirm(ActionRuntime& rt, const ActionCall& call,
                                       const json& call_args, const std::string& confirmation_id,
                                       const Preview& gateway_preview, mcp::RequestContext& ctx) {
    // What a person is shown holds nothing invisible: the preview's parts (titles, excerpts,
    // bodies) were cleaned of hidden HTML where they were read; no invisible character is left
    // in the whole either. Its text is plain by now, so a '<' in it is visible and stays.
    const Preview preview = shown(gateway_preview);
    const std::string principal = principal_of(ctx);
    const bool only_a_person = rt.settings().elicitation_only;
    if (const ViewDecision* decided = view_decision())
        return decided_in_view(rt, call, preview, *decided, principal, ctx);
    if (!confirmation_id.empty()) {
        if (only_a_person) return elicitation_required(call.tool, preview, WhyNoForm::had_id);
        return confirm_with_id(rt, call.tool, call_args, confirmation_id, principal);
    }
    // A client that renders views: the person approves in the approval view, which shows
    // what goes out in full (tools/pipeline/view_approval.hpp); no confirmation_id reaches the
    // model.
    if (ctx.renders_views()) return ask_in_view(rt, call, call_args, preview, principal);
    if (ctx.client_supports("elicitation")) {
        try {
            return confirm_by_elicitation(call, preview, principal, ctx);
        } catch (const mcp::RpcError& e) {
            // Declared but not implemented (@mastra/mcp 0.14 and 1.x): the session now
            // confirms by confirmation_id (client_supports says no from here on).
            if (e.code() != mcp::error_code::method_not_found) throw;
            log::warn(
                "{}: the client of {} declared elicitation but answered elicitation/create "
                "with Method not found; confirming by confirmation_id in this session",
                call.tool, principal);
            if (only_a_person)
                return elicitation_required(call.tool, preview, WhyNoForm::cannot_answer);
        }
    } else if (only_a_person) {
        return elicitation_required(call.tool, preview, WhyNoForm::cannot_elicit);
    }
    return issue_confirmation(rt, call.tool, call_args, preview, principal);
}

}  // namespace agency::tools
