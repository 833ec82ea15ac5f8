// The one path every tool call takes: the stages, in the order they run, listed here once
// and composed in pipeline.cpp (with_call_stages, run_action). docs/design.md, "One tools/call,
// hop by hop":
//   scope        the caller's write scope, checked by mcp::Server from
//                ToolDef::required_scopes before the tool's handler runs
//   validate     arguments against the compiled input schema (every tool)
//   client scope a client outside the caller's clients does not exist for it (every tool;
//                client_scope.hpp), before any stage reads the store or the gateway
//   key scope    the gateway key's (run_action: a key known to lack the write scope refuses
//                every action, reason scope)
//   replay       a finished idempotency_key answers at once (actions)
//   budget       a generation action past the caller's budget is refused before its preview
//                reads anything (the unit is taken after the confirmation)
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

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/pipeline/action_call.hpp"

namespace agency::state {
class StoreError;
}

namespace agency::tools {

class ActionRuntime;

// Why the gateway key cannot run `tool` (it lacks the write scope), nullopt when it may.
// Registers a tool (tools/pipeline/registration.cpp): its schemas, annotations and view, and its
// handler inside with_call_stages.
ToolDoc add_tool(mcp::Server& server, ToolSpec spec);

// The call stages around a tool's handler, in their order: shape (failures become tool
// errors), validate, client scope, then the handler (for an action, run_action's stages).
Handler with_call_stages(std::shared_ptr<const InputValidator> validator, Handler handler,
                         RefusalHook on_refused);

// The confirmation stage: nullopt when the call may act now (a valid confirmation_id, or the
// user said yes), else the answer that ends the call (a preview with a new confirmation_id, a
// refusal, a decline).
std::optional<mcp::ToolResult> confirm(ActionRuntime& rt, const ActionCall& call,
                                       const json& call_args, const std::string& confirmation_id,
                                       const Preview& preview, mcp::RequestContext& ctx);

std::optional<Refused> write_scope_refusal(Toolbox& box, const std::string& tool);

// Runs an action call's stages from replay to shape, and appends its row to the write log
// (tools/pipeline/write_log.hpp) whatever the outcome.
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
