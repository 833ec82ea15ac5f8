#include "tools/kit/tool_metrics.hpp"

#include "base/metrics.hpp"

namespace agency::tools {

namespace {

namespace metrics = base::metrics;

metrics::CounterFamily& confirmations() {
    static auto* family = [] {
        auto* made = new metrics::CounterFamily(
            "agency_mcp_confirmations_total",
            "Confirmations of deploys, sends and auto-deploying generations: asked, granted, "
            "declined, expired or refused, by elicitation or confirmation_id",
            {"result", "via"});
        for (const auto via : {"elicitation", "confirmation_id"})
            for (const auto result : {"asked", "granted", "declined", "expired", "refused"})
                made->touch({result, via});
        return made;
    }();
    return *family;
}

metrics::CounterFamily& credit_refusals() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_credit_refusals_total",
        "Generation actions the per-client credit limiter refused (rate_limited), by tool",
        {"gen_ai_tool_name"});
    return *family;
}

// Action budgets (issue 35): totals over every caller (a label per caller would grow with
// the keys and OAuth subjects); `agency-mcp keys list` shows each key's use.
metrics::CounterFamily& budget_units() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_budget_units_total",
        "Action-budget units taken by generation actions, and given back by those that never "
        "reached the gateway",
        {"event"}, {"taken", "returned"});
    return *family;
}

metrics::CounterFamily& budget_refusals() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_budget_refusals_total",
        "Generation actions refused because their caller's action budget was used up "
        "(reason budget), by tool",
        {"gen_ai_tool_name"});
    return *family;
}

metrics::CounterFamily& audit_jobs() {
    static auto* family = new metrics::CounterFamily(
        "agency_mcp_audit_jobs_total", "Audit jobs that reached each status on this process",
        {"status"}, {"queued", "running", "succeeded", "failed", "cancelled"});
    return *family;
}

// Every family shows from the start (at zero where its labels are known), not from its first
// use: a scrape right after start lists what will be counted.
[[maybe_unused]] const bool g_registered =
    (confirmations(), credit_refusals(), budget_units(), budget_refusals(), audit_jobs(), true);

}  // namespace

void count_confirmation(std::string_view result, std::string_view via) {
    confirmations().add({result, via});
}

void count_credit_refusal(std::string_view tool) { credit_refusals().add({tool}); }

void count_budget_unit(std::string_view event) { budget_units().add({event}); }

void count_budget_refusal(std::string_view tool) { budget_refusals().add({tool}); }

void count_audit_job(std::string_view status) { audit_jobs().add({status}); }

}  // namespace agency::tools
