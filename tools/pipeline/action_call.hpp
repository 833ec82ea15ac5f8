// What an action tool gives the gate (tools/pipeline/pipeline.hpp): its preview, its one POST and
// how to find the record of a call whose answer was lost.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// What a confirmed action would do, read before anything is sent.
struct Preview {
    std::string message;  // one sentence naming exactly what will happen
    json details;         // the same as fields, shown in the two-step preview
    bool needed = true;   // false: these arguments act without a confirmation
    // Shown only in the approval view (tools/pipeline/view_approval.cpp), not in the text a model
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

}  // namespace agency::tools
