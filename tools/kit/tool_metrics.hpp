// The tools' own metrics (base/metrics.hpp): confirmations, credit-limiter refusals and audit
// jobs. The core counts the calls themselves (server/telemetry.hpp).
#pragma once

#include <string_view>

namespace agency::tools {

// A confirmation was asked, granted, declined, expired or refused (a confirmation_id unknown,
// used or for other arguments; a malformed answer), by elicitation or by confirmation_id.
void count_confirmation(std::string_view result, std::string_view via);
// The credit limiter refused a generation action of `tool`.
void count_credit_refusal(std::string_view tool);
// An action-budget unit was taken or given back (tools/pipeline/budgets.hpp); no per-caller label.
void count_budget_unit(std::string_view event);
// A generation action of `tool` was refused for its caller's action budget.
void count_budget_refusal(std::string_view tool);
// An audit job entered `status` (queued, running, succeeded, failed, cancelled).
void count_audit_job(std::string_view status);

}  // namespace agency::tools
