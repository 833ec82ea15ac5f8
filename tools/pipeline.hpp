// The one path every tool call takes. Stages, in the order they run (docs/design.md, "Tool
// pipeline"):
//   scope        the caller's write scope, checked by mcp::Server from
//                ToolDef::required_scopes before the tool's handler runs
//   validate     arguments against the compiled input schema (every tool)
//   key scope    the gateway key's (run_action: a key known to lack the write scope refuses
//                every action, reason scope)
//   replay       a finished idempotency_key answers at once (actions)
//   confirmation a person confirms first when the call's preview says so (confirmed actions)
//   idempotency  the key is claimed, so a repeat never runs a second POST (actions)
//   credits      the per-client credit limiter (actions that spend credits)
//   execute      the tool's work
//   shape        the result object becomes the structured answer; gateway and state failures
//                become tool errors
// The key is claimed before credits are taken: a repeat of a running call hears in_progress
// and spends nothing.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/mcp_server.hpp"
#include "tools/tool_kit.hpp"

namespace agency::state {
class StoreError;
}

namespace agency::tools {

class ActionRuntime;

// What a confirmed action would do, read before anything is sent.
struct Preview {
    std::string message;  // one sentence naming exactly what will happen
    json details;         // the same as fields, shown in the two-step preview
    bool needed = true;   // false: these arguments act without a confirmation
    // Shown only in the approval view (tools/view_approval.cpp), not in the text a model
    // reads: what would go out in full, e.g. the article's or e-mail's HTML (body_html).
    json view_only;
};

// Thrown by a preview or an execution when the action cannot run at all (a tool error with
// this reason).
struct Refused {
    std::string reason;
    std::string message;
};

// What a lost call's check found (ActionCall::find_lost).
struct LostCall {
    std::optional<json> result;  // the tool's result, when the gateway shows the call's record
    std::string detail;          // what the check saw
    std::string hint;            // how a person checks whether it ran
};

// The three stages an action supplies, as ActionCall holds them (and ActionEntry passes them on).
using PreviewStage = std::function<Preview(const json& args, mcp::RequestContext& ctx)>;
using ExecuteStage =
    std::function<json(const json& args, const Preview& preview, mcp::RequestContext& ctx)>;
using FindLostStage = std::function<LostCall(
    const json& args, std::chrono::system_clock::time_point since, mcp::RequestContext& ctx)>;

// The facts of an action call: which stages apply and the tool's own work.
struct ActionCall {
    std::string tool;
    // Set: the call is refused (reason scope) while the gateway key is known to lack the write
    // scope, before anything else runs.
    std::shared_ptr<Toolbox> box;
    std::string title;  // the elicitation asks "<title> now?"
    // The result member holding the gateway's record id, for the write log (article_id, ...).
    std::string record_field;
    bool spends_credits = true;
    // Set: the confirmation stage runs. Reads what the action touches and says what it would
    // do; throws Refused or gateway::Error when it cannot run. Sends nothing.
    PreviewStage preview;
    // The work (the one POST); returns the tool's result object, throws gateway::Error.
    ExecuteStage execute;
    // Set: when a call with an idempotency_key kept no result past the claim's lease (its
    // process stopped, or the store failed, after the POST may have gone out), reads whether
    // the gateway shows the record a call with these arguments made at or after `since`.
    // Sends nothing; throws gateway::Error when the read fails. Unset: the outcome is unknown.
    FindLostStage find_lost;
};

// Why the gateway key cannot run `tool` (it lacks the write scope), nullopt when it may.
std::optional<Refused> write_scope_refusal(Toolbox& box, const std::string& tool);

// Runs an action call's stages from replay to shape, and appends its row to the write log
// (tools/write_log.hpp) whatever the outcome.
mcp::ToolResult run_action(ActionRuntime& rt, const ActionCall& call, const json& args,
                           mcp::RequestContext& ctx);
// The write log's row for an action call refused before run_action (invalid arguments, or
// the caller's missing scope): ToolSpec::on_refused of the action tools.
void record_refusal(ActionRuntime& rt, const std::string& tool, const std::string& record_field,
                    const json& args, mcp::RequestContext& ctx, const mcp::ToolResult& refusal);

// The state store failed under a call: the tool error `state_unavailable`, naming the store
// that failed and what to do. SQLite (--state-db): locked by another process, read-only or
// failing, SQLite's words in the log only. PostgreSQL (--state-url): the shared store could not
// be reached or used, with libpq's reason (the URL in it carries no password).
mcp::ToolResult state_unavailable(const state::StoreError& e);

// The validate and shape stages around any handler: invalid arguments and gateway or state
// failures become tool errors. `on_refused` hears a call refused for its arguments.
Handler checked_handler(std::shared_ptr<const InputValidator> validator, Handler handler,
                        RefusalHook on_refused = {});
std::function<mcp::ToolResult(const json& resume, const json& args, mcp::RequestContext&)>
checked_resume(
    std::function<mcp::ToolResult(const json& resume, const json& args, mcp::RequestContext&)>
        resume);

}  // namespace agency::tools
