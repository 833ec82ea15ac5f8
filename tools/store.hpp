// The durable state of the action tools: background jobs, idempotency records, outreach drafts
// and confirmations, in one SQLite file (WAL), so that a restart loses nothing. One connection
// guarded by a mutex: the write rate is a handful per tool call, far below what that serves.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tasks.hpp"

struct sqlite3;

namespace agency::tools {

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
    std::string status;                // queued | running | succeeded | failed | cancelled
    // null until succeeded; a job cancelled while running keeps the result its POST brought
    nlohmann::json result;
    nlohmann::json error;              // null unless failed: {reason, message, status_code?}
    std::int64_t created_at = 0;       // unix seconds
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
    std::string status;  // draft | sent
    std::string gateway_id;    // the gateway's backlink_outreach record
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

// The server's durable state in one SQLite file: jobs, idempotency records, drafts,
// confirmations, and MCP task records (as the core's TaskStore).
class Store : public mcp::TaskStore {
public:
    // $XDG_STATE_HOME/agency-mcp/state.db, else ~/.local/state/agency-mcp/state.db.
    static std::string default_path();

    // Opens (creating the file, its directory and the schema when absent). ":memory:" is a
    // private in-memory database. Throws StoreError naming the path.
    explicit Store(const std::string& path);
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    const std::string& path() const { return path_; }

    // --- jobs
    Job create_job(std::string_view kind, std::string_view client_id, std::string_view principal,
                   const nlohmann::json& args);
    std::optional<Job> job(std::string_view id);
    // queued -> running; false when the job is not queued or running (already finished).
    bool mark_running(std::string_view id);
    // Records the outcome: succeeded or failed, except that a cancelled job stays cancelled
    // (its late result or error is still recorded).
    void finish_job(std::string_view id, bool succeeded, const nlohmann::json& result,
                    const nlohmann::json& error);
    // queued or running -> cancelled; returns the status it had, or nullopt when the job is
    // unknown or already finished (nothing changed).
    std::optional<std::string> cancel_job(std::string_view id);
    // Jobs left queued or running, oldest first (what a restart picks up again).
    std::vector<Job> unfinished_jobs();
    // For tests that play a previous process: sets the status as-is.
    void set_job_status(std::string_view id, std::string_view status);

    // --- idempotency (per principal and tool)
    // Claims `key` for a first call with `digest`; when the key is already known, returns its
    // record instead (pending, finished, or with another digest) and claims nothing. A pending
    // claim older than `stale_after` is taken over (its process died mid-call).
    std::optional<IdempotencyRecord> claim_idempotency(std::string_view principal,
                                                       std::string_view tool, std::string_view key,
                                                       std::string_view digest,
                                                       std::chrono::seconds stale_after);
    // The record for `key`, if any; claims nothing.
    std::optional<IdempotencyRecord> find_idempotency(std::string_view principal,
                                                      std::string_view tool, std::string_view key);
    void complete_idempotency(std::string_view principal, std::string_view tool,
                              std::string_view key, bool is_error, std::string_view result);
    // Forgets a claim whose call created nothing, so the key can be used again.
    void release_idempotency(std::string_view principal, std::string_view tool,
                             std::string_view key);

    // --- drafts
    Draft create_draft(Draft draft);  // id and created_at assigned; status "draft"
    std::optional<Draft> draft(std::string_view id);
    // draft -> sent; false when unknown or not a draft.
    bool mark_draft_sent(std::string_view id);

    // --- confirmations
    Confirmation create_confirmation(std::string_view principal, std::string_view tool,
                                     std::string_view args_digest, std::chrono::seconds ttl);
    // Single use: accepted only when it exists, is unused, unexpired, and binds exactly this
    // principal, tool and digest; it is marked used in the same step.
    ConfirmOutcome consume_confirmation(std::string_view id, std::string_view principal,
                                        std::string_view tool, std::string_view args_digest);

    // --- MCP tasks (mcp::TaskStore)
    void put(const mcp::TaskRecord& task) override;
    std::optional<mcp::TaskRecord> get(std::string_view id) override;
    std::vector<mcp::TaskRecord> list(std::string_view owner, std::size_t offset,
                                      std::size_t limit) override;
    std::vector<mcp::TaskRecord> unfinished() override;
    void erase_expired(std::int64_t now_ms) override;

private:
    struct Statement;
    std::optional<IdempotencyRecord> find_idempotency_locked(std::string_view principal,
                                                             std::string_view tool,
                                                             std::string_view key);
    void exec(const char* sql);
    void open_schema();
    void migrate_jobs_status();

    std::string path_;
    sqlite3* db_ = nullptr;
    std::mutex mutex_;
};

// Arguments as a stable digest (object keys are sorted by nlohmann::json), for binding
// idempotency keys and confirmations to exact arguments.
std::string args_digest(const nlohmann::json& args);

std::int64_t unix_now();

}  // namespace agency::tools
