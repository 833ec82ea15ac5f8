// The durable state of the action tools and tasks: background jobs, idempotency records,
// outreach drafts, confirmations and task records, behind one interface so that a second
// backend (shared state for several instances) can stand beside SQLite.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "state/task_store.hpp"

namespace agency::state {

class StoreError : public std::runtime_error {
public:
    // What a caller can do about it: wait (another process holds the lock), or not.
    enum class Kind { busy, read_only, other };
    explicit StoreError(const std::string& message, Kind kind = Kind::other)
        : std::runtime_error(message), kind_(kind) {}
    Kind kind() const noexcept { return kind_; }

private:
    Kind kind_;
};

struct Job {
    std::string id;
    std::string kind;  // "seo_audit"
    std::string client_id;
    std::string principal;
    nlohmann::json args = nlohmann::json::object();
    std::string status;  // queued | running | succeeded | failed | cancelled
    // null until succeeded; a job cancelled while running keeps the result its POST brought
    nlohmann::json result;
    nlohmann::json error;         // null unless failed: {reason, message, status_code?}
    std::int64_t created_at = 0;  // unix seconds
    std::int64_t updated_at = 0;
};

// An idempotency key's record. `pending` while its first call runs.
struct IdempotencyRecord {
    std::string args_digest;
    bool pending = true;
    bool is_error = false;
    std::string result;  // the first call's tool result text (structured JSON or error JSON)
    std::int64_t created_at = 0;
};

struct Draft {
    std::string id;
    std::string client_id;
    std::string recipient;
    std::string subject;
    std::string html;
    std::string status;      // draft | sent
    std::string gateway_id;  // the gateway's backlink_outreach record
    std::string prospect_url;
    std::int64_t created_at = 0;
};

struct Confirmation {
    std::string id;
    std::string principal;
    std::string tool;
    std::string args_digest;
    std::int64_t expires_at = 0;
    bool used = false;
};

enum class ConfirmOutcome { accepted, unknown, used, expired, mismatch };

// The server's durable state: jobs, idempotency records, drafts, confirmations and MCP task
// records (as the core's TaskStore). Tools and the task runtime see only this interface;
// SqliteStore (state/sqlite_store.hpp) is the implementation today.
class Store : public TaskStore {
public:
    ~Store() override = default;

    // --- jobs
    virtual Job create_job(std::string_view kind, std::string_view client_id,
                           std::string_view principal, const nlohmann::json& args) = 0;
    virtual std::optional<Job> job(std::string_view id) = 0;
    // queued -> running; false when the job is not queued or running (already finished).
    virtual bool mark_running(std::string_view id) = 0;
    // Records the outcome: succeeded or failed, except that a cancelled job stays cancelled
    // (its late result or error is still recorded).
    virtual void finish_job(std::string_view id, bool succeeded, const nlohmann::json& result,
                            const nlohmann::json& error) = 0;
    // queued or running -> cancelled; returns the status it had, or nullopt when the job is
    // unknown or already finished (nothing changed).
    virtual std::optional<std::string> cancel_job(std::string_view id) = 0;
    // Jobs left queued or running, oldest first (what a restart picks up again).
    virtual std::vector<Job> unfinished_jobs() = 0;

    // --- idempotency (per principal and tool)
    // Claims `key` for a first call with `digest`; when the key is already known, returns its
    // record instead (pending, finished, or with another digest) and claims nothing. A pending
    // claim older than `stale_after` is taken over (its process died mid-call).
    virtual std::optional<IdempotencyRecord> claim_idempotency(
        std::string_view principal, std::string_view tool, std::string_view key,
        std::string_view digest, std::chrono::seconds stale_after) = 0;
    // The record for `key`, if any; claims nothing.
    virtual std::optional<IdempotencyRecord> find_idempotency(std::string_view principal,
                                                              std::string_view tool,
                                                              std::string_view key) = 0;
    virtual void complete_idempotency(std::string_view principal, std::string_view tool,
                                      std::string_view key, bool is_error,
                                      std::string_view result) = 0;
    // Forgets a claim whose call created nothing, so the key can be used again.
    virtual void release_idempotency(std::string_view principal, std::string_view tool,
                                     std::string_view key) = 0;

    // --- drafts
    // id and created_at assigned; status "draft"
    virtual Draft create_draft(Draft draft) = 0;
    virtual std::optional<Draft> draft(std::string_view id) = 0;
    // draft -> sent; false when unknown or not a draft.
    virtual bool mark_draft_sent(std::string_view id) = 0;

    // --- confirmations
    virtual Confirmation create_confirmation(std::string_view principal, std::string_view tool,
                                             std::string_view args_digest,
                                             std::chrono::seconds ttl) = 0;
    // Single use: accepted only when it exists, is unused, unexpired, and binds exactly this
    // principal, tool and digest; it is marked used in the same step.
    virtual ConfirmOutcome consume_confirmation(std::string_view id, std::string_view principal,
                                                std::string_view tool,
                                                std::string_view args_digest) = 0;
};

// Arguments as a stable digest (object keys are sorted by nlohmann::json), for binding
// idempotency keys and confirmations to exact arguments.
std::string args_digest(const nlohmann::json& args);

}  // namespace agency::state
