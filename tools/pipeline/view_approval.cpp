// The approval view's token and the app-only tool view_decide (tools/pipeline/view_approval.hpp).
#include "tools/pipeline/view_approval.hpp"
#include "tools/pipeline/client_scope.hpp"

#include <chrono>

#include "base/log.hpp"
#include "tools/kit/tool_metrics.hpp"
#include "tools/kit/views.hpp"

namespace agency::tools {

namespace {

constexpr std::chrono::seconds kApprovalTtl{600};  // as a confirmation_id
constexpr std::string_view kApprovalSubject = "view-approval";
constexpr const char* kApprovalMeta = "agency-mcp/approval";

// The store record a view's approval spends is kept under its own tool name: its id (which the
// token's signed, readable payload carries) names no record a confirmation_id could spend, so
// whoever sees the token can do nothing with it but hand it back to view_decide.
std::string view_record_tool(const std::string& tool) { return "view:" + tool; }

thread_local const ViewDecision* current_decision = nullptr;

// Sets the decision for the call running on this thread, for as long as it runs.
class DecisionScope {
public:
    explicit DecisionScope(const ViewDecision& decision) : previous_(current_decision) {
        current_decision = &decision;
    }
    ~DecisionScope() { current_decision = previous_; }
    DecisionScope(const DecisionScope&) = delete;
    DecisionScope& operator=(const DecisionScope&) = delete;

private:
    const ViewDecision* previous_;
};

std::string approval_refusal(ConfirmOutcome outcome) {
    switch (outcome) {
        case ConfirmOutcome::used: return "was already answered; each approval acts once";
        case ConfirmOutcome::expired: return "has expired (an approval lasts 10 minutes)";
        case ConfirmOutcome::mismatch: return "was issued for other arguments";
        case ConfirmOutcome::unknown:
        case ConfirmOutcome::accepted: break;
    }
    return "is not known to this server";
}

// The preview's members for the text a model reads, and with the view's own beside them.
json approval_preview(const Preview& preview, bool for_view) {
    json out = preview.details.is_object() ? preview.details : json::object();
    if (for_view && preview.view_only.is_object())
        for (const auto& [key, value] : preview.view_only.items()) out[key] = value;
    return out;
}

mcp::ToolResult decide_in_view(Toolbox& box, const std::map<std::string, Handler>& approvable,
                               const json& args, mcp::RequestContext& ctx) {
    const std::string principal = principal_of(ctx);
    const std::string decision = args.at("decision").get<std::string>();
    auto opened = box.approval_sealer().open(args.at("approval").get<std::string>(),
                                             {.subject = kApprovalSubject, .principal = principal});
    if (const auto* refusal = std::get_if<base::TokenRefusal>(&opened)) {
        log::warn("view_decide: an approval token of {} was refused ({})", principal,
                  base::describe(*refusal));
        return tool_error("confirmation",
                          std::string("this approval was refused: ") +
                              std::string(base::describe(*refusal)) +
                              ". Nothing was done; the tool's next call shows a new preview.");
    }
    const json& body = std::get<base::OpenedToken>(opened).body;
    const std::string tool = body.value("tool", "");
    const json call_args = body.value("args", json::object());
    const auto handler = approvable.find(tool);
    if (handler == approvable.end())
        return tool_error("confirmation",
                          "this approval names no tool of this server; nothing "
                          "was done");
    // The approved call runs the tool's own handler, past add_tool's checks: they are made here
    // as that tool's call would make them. The request's tool selection (the server's, a key's,
    // X-MCP-Tools) must offer the tool itself, not only view_decide; and a scope narrowed since
    // the preview reaches that client no more.
    if (!ctx.tool_selected(tool)) {
        log::warn(
            "view_decide: {} is not offered to this request of {}; the approval was not "
            "used",
            tool, principal);
        return tool_error("confirmation", tool +
                                              " is not offered to this request (its tool "
                                              "selection or read-only setting leaves it "
                                              "out); nothing was done");
    }
    if (auto refusal = client_scope_refusal(call_args, ctx)) return std::move(*refusal);
    const ViewDecision made{tool, decision == "approve", body.value("confirmation", ""),
                            args_digest(call_args)};
    log::info("{}: {} in the approval view by {}", tool, made.approve ? "approved" : "declined",
              principal);
    DecisionScope scope(made);
    return handler->second(call_args, ctx);
}

}  // namespace

const ViewDecision* view_decision() { return current_decision; }

std::optional<mcp::ToolResult> spend(ActionRuntime& rt, const ViewDecision& decided,
                                     const std::string& principal) {
    const ConfirmOutcome outcome = rt.store().consume_confirmation(
        decided.confirmation, principal, view_record_tool(decided.tool), decided.args_digest);
    if (outcome == ConfirmOutcome::accepted) return std::nullopt;
    count_confirmation(outcome == ConfirmOutcome::expired ? "expired" : "refused", "view");
    return tool_error("confirmation", "this approval of " + decided.tool + " " +
                                          approval_refusal(outcome) +
                                          "; nothing more was done. Call " + decided.tool +
                                          " again for a new preview.");
}

mcp::ToolResult ask_in_view(ActionRuntime& rt, const ActionCall& call, const json& call_args,
                            const Preview& preview, const std::string& principal) {
    const Confirmation c = rt.store().create_confirmation(principal, view_record_tool(call.tool),
                                                          args_digest(call_args), kApprovalTtl);
    count_confirmation("asked", "view");
    const std::string token = call.box->approval_sealer().seal(
        {.subject = kApprovalSubject, .principal = principal}, kApprovalTtl,
        {{"tool", call.tool}, {"args", call_args}, {"confirmation", c.id}});
    json out = {
        {"ok", true},
        {"client_id", call_args.value("client_id", "")},
        {"status", "confirmation_required"},
        {"expires_at", iso_time(c.expires_at)},
        {"message", preview.message +
                        " Nothing was done yet: the person approves or declines it in "
                        "the approval view shown with this result (it acts once, within "
                        "10 minutes). Do not call " +
                        call.tool + " again for it; the view tells you what the person decided."},
        {"preview", approval_preview(preview, false)}};
    mcp::ToolResult result;
    result.text_block = out.dump();
    out["preview"] = approval_preview(preview, true);
    result.structured_text = out.dump();
    result.meta = {{kApprovalMeta, {{"token", token}, {"expires_at", iso_time(c.expires_at)}}}};
    return result;
}

ToolSpec view_decide_tool(const std::shared_ptr<Toolbox>& box,
                          std::map<std::string, Handler> approvable) {
    auto tools = std::make_shared<const std::map<std::string, Handler>>(std::move(approvable));
    return ToolSpec{
        .name = "view_decide",
        .toolset = "views",
        .description = "Approval view: Approve or Decline, once, with the view's token.",
        .read_only = false,
        .destructive = true,
        .idempotent = false,
        .needs_write = true,
        .interactive = true,
        .mapping =
            "the POST of the tool approved (deploy_article, send_prospect_email, "
            "generate_article), once; nothing on Decline",
        .handler =
            [box, tools](const json& args, mcp::RequestContext& ctx) {
                return decide_in_view(*box, *tools, args, ctx);
            },
        .view = kApproveView,
        .app_only = true};
}

}  // namespace agency::tools
