// The approval view (ui://agency-mcp/approve.html): how a person approves a deploy or a send in
// a view, and how the server knows the approval came from the view and not from the model.
//   1. A client that renders views calls deploy_article, send_prospect_email or an
//      auto-deploying generate_article: the confirmation stage answers the preview (with the
//      full article or e-mail for the view) and NO confirmation_id. The result's _meta carries
//      a single-use approval token ("agency-mcp/approval"): hosts hand a result's _meta to the
//      view and not to the model (MCP Apps), so the model never holds it.
//   2. The person presses Approve or Decline; the view calls the app-only tool view_decide
//      with the token. The token is sealed (tamper-evident, bound to the caller, 10 minutes)
//      and names a confirmation record of the state store, spent once on any instance. It
//      carries that record's id, so it is a bearer secret as a confirmation_id is: never
//      logged, and never in the text or structuredContent a model may read.
//   3. The tool's own pipeline runs again with the decision (preview, then exactly one POST on
//      Approve). With --confirm elicitation-only the click is not enough: the server then asks
//      the person through the host's own elicitation form before acting.
// docs/security.md, "Approving in a view".
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tools/pipeline/action_call.hpp"
#include "tools/pipeline/action_runtime.hpp"

namespace agency::tools {

// What the person decided in the approval view, for the call view_decide runs on this thread.
struct ViewDecision {
    std::string tool;
    bool approve = false;
    std::string confirmation;  // the store's record the token names, spent by spend()
    std::string args_digest;
};
// The decision of the call running on this thread, or nullptr (any call but view_decide's).
const ViewDecision* view_decision();

// Spends the decision's confirmation record (once, on any instance): nullopt when it was
// still unused, else the tool error that ends the call. Spent only once the person's answer
// is final: a modern elicitation round runs the call again from the top.
std::optional<mcp::ToolResult> spend(ActionRuntime& rt, const ViewDecision& decided,
                                     const std::string& principal);

// The confirmation stage's answer for a client that renders views (step 1 above).
mcp::ToolResult ask_in_view(ActionRuntime& rt, const ActionCall& call, const json& call_args,
                            const Preview& preview, const std::string& principal);

// The app-only tool view_decide over the tools the approval view approves (name: the tool's
// own handler, before argument checks: the token's arguments were checked when it was issued).
ToolSpec view_decide_tool(const std::shared_ptr<Toolbox>& box,
                          std::map<std::string, Handler> approvable);

}  // namespace agency::tools
