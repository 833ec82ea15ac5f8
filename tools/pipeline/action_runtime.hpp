// The action runtime: the state every action's gate (tools/pipeline/pipeline.hpp) stands on. The
// store, the credit limiter, the write log and the leased audit jobs, shared by every action
// tool of a server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "state/store.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/pipeline/budgets.hpp"
#include "tools/pipeline/jobs.hpp"
#include "tools/pipeline/write_log_writer.hpp"

namespace agency::tools {

struct ActionSettings {
    // Where jobs, drafts, idempotency records and the write log are kept: app/ opens it
    // (open_state: SQLite or PostgreSQL); a test makes its own (tests/support/action_store.hpp).
    std::shared_ptr<Store> store;
    // This process among the instances of a shared store (instance_id random when empty).
    AuditJobs::Sharing sharing;
    int audit_workers = 2;
    CreditSettings credits;
    // The lease of a claimed idempotency key: a call that kept no result this long after its
    // claim is not running any more (its process stopped, or the store failed after the POST),
    // and the next repeat checks the gateway for its record (tools/pipeline/pipeline.cpp). serve
    // sets four call budgets, at least a minute.
    std::chrono::seconds stale_claim{600};
    // A repeat of a call that is still running (same key and arguments, on any instance)
    // waits this long for the first call's result before hearing in_progress.
    std::chrono::milliseconds await_first_call{20'000};
    // Only a person's answer to the elicitation form confirms a deploy or send: a
    // confirmation_id (which the model relays) is refused, and so is a client that cannot
    // elicit (--confirm elicitation-only, AGENCY_CONFIRM=elicitation-only).
    bool elicitation_only = false;
    // Generation actions per caller and window (tools/pipeline/budgets.hpp; serve
    // --monthly-actions,
    // --budget-window).
    BudgetSettings budgets;
    // The time budget windows are read by; null: the process's (base::Clock::or_system). Must
    // outlive the runtime (tests pass a ManualClock, and give the store the same one).
    const base::Clock* clock = nullptr;
    // The write log's spool (tools/pipeline/write_log_writer.hpp): where rows wait while the store
    // cannot take them; "" keeps them in memory. serve puts it beside the store
    // (state::WriteLogSpool::beside).
    std::string write_log_spool;
    // Refusals of one caller, tool, client and reason within this window are one row and a
    // count (tools/pipeline/write_log_writer.hpp).
    std::chrono::seconds refusal_window{60};
};

// The state the action tools share: the store, the credit limiter and the audit workers.
class ActionRuntime {
public:
    // Throws std::invalid_argument without a store.
    explicit ActionRuntime(ActionSettings settings);
    ~ActionRuntime();

    const ActionSettings& settings() const { return settings_; }
    Store& store() { return *store_; }
    const std::shared_ptr<Store>& shared_store() const { return store_; }
    CreditLimiter& credits() { return credits_; }
    const base::Clock& clock() const { return base::Clock::or_system(settings_.clock); }
    AuditJobs& audits() { return audits_; }
    // Every write log row of the action tools goes through it
    // (tools/pipeline/write_log_writer.hpp).
    WriteLogWriter& write_log() { return write_log_; }

    // Audit changes, for waiters (audit tasks): a counter that moves on every job change.
    std::uint64_t audit_version();
    // Waits until the counter moves past `seen` (updating it), `stop` fires, or `at_most`.
    void wait_audit_change(std::uint64_t& seen, std::stop_token stop,
                           std::chrono::milliseconds at_most);

private:
    ActionSettings settings_;
    std::shared_ptr<Store> store_;
    CreditLimiter credits_;
    WriteLogWriter write_log_;
    std::mutex audit_mutex_;
    std::condition_variable_any audit_changed_;
    std::uint64_t audit_version_ = 0;
    AuditJobs audits_;  // last: its workers stop before the members above go
};

}  // namespace agency::tools
