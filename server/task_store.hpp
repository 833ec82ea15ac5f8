// Where MCP task records live (a tool call that runs in the background while the caller polls
// it; the protocol side is server/task_runtime.cpp).
// 2025-11-25: task-augmented tools/call (params.task) with tasks/get, tasks/result, tasks/list,
// tasks/cancel. 2026-07-28: the io.modelcontextprotocol/tasks extension (flat CreateTaskResult,
// tasks/get with the result inline, tasks/update for input, tasks/cancel).
// Records live behind TaskStore so that they outlive the process when the store is durable.
// The interface is the core's; state/ implements it (SqliteStore, PgStore), so the core links
// no database library.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace agency::mcp {

using json = nlohmann::json;

enum class TaskStatus { working, input_required, completed, failed, cancelled };

std::string_view to_string(TaskStatus status);
std::optional<TaskStatus> parse_task_status(std::string_view text);
inline bool is_terminal(TaskStatus s) {
    return s == TaskStatus::completed || s == TaskStatus::failed || s == TaskStatus::cancelled;
}

struct TaskRecord {
    std::string id;      // 128 random bits: unguessable
    // Whom the task is bound to; nobody else sees it. An authenticated caller's principal
    // name ("key:<name>", "oauth:<issuer> <sub>"), any session of it; without auth, a legacy
    // HTTP session's "<principal>#<session id>", else the principal ("local").
    std::string owner;
    std::string tool;
    std::string era;     // "legacy" or "modern": the shapes of its answers differ
    TaskStatus status = TaskStatus::working;
    std::string status_message;
    std::int64_t created_ms = 0;
    std::int64_t updated_ms = 0;
    std::int64_t ttl_ms = 0;        // kept this long after creation
    std::int64_t poll_ms = 500;     // suggested polling interval
    json arguments = json::object();
    std::string result;             // CallToolResult JSON (completed)
    json error;                     // {code, message} (failed)
    json input_requests;            // modern input_required: {key: {method, params}}
    json resume;                    // set by the tool: how to pick the work up after a restart
    // The instance running it and until when (unix ms), as Job's lease: with a shared store an
    // unfinished task whose lease ran out is resumed (or failed) by another instance.
    std::string lease_owner;
    std::int64_t lease_until_ms = 0;
};

// Where task records live. The default keeps them in memory; the product keeps them in its
// SQLite state database so that tasks survive a restart.
class TaskStore {
public:
    virtual ~TaskStore() = default;
    // Insert or replace, except that a stored cancelled record stays cancelled: a cancel from
    // any instance wins over a late write of the work.
    virtual void put(const TaskRecord& task) = 0;
    virtual std::optional<TaskRecord> get(std::string_view id) = 0;
    // The owner's tasks of one era ("legacy" or "modern"), newest first.
    virtual std::vector<TaskRecord> list(std::string_view owner, std::string_view era,
                                         std::size_t offset, std::size_t limit) = 0;
    // Tasks a previous process left working or waiting for input.
    virtual std::vector<TaskRecord> unfinished() = 0;
    // Forgets tasks whose ttl has passed.
    virtual void erase_expired(std::int64_t now_ms) = 0;

    // --- several instances on one store (defaults: one process, nothing to share)
    // True when several processes may use the store at once (PostgreSQL): leases decide who
    // runs a job or task, credit counts live in the store. SqliteStore: false (one instance;
    // a restart takes over everything left unfinished).
    virtual bool shared() const { return false; }
    // Takes an unfinished task for `owner` until now + lease_ms, as Store::claim_job; returns
    // the record as stored before the claim.
    virtual std::optional<TaskRecord> claim_task(std::string_view id, std::string_view owner,
                                                 std::int64_t lease_ms, bool force);
    // Extends owner's leases on its unfinished tasks; returns the ids of owner's tasks that
    // were cancelled (by any instance) while leased to it, each once.
    virtual std::vector<std::string> renew_task_leases(std::string_view owner,
                                                       std::int64_t lease_ms);
    // Unfinished tasks no live instance holds (no lease or an expired one), oldest first.
    virtual std::vector<TaskRecord> orphaned_tasks(std::size_t limit);
    // Calls `on_cancel(id)` soon after any instance cancels a task (PostgreSQL: LISTEN/NOTIFY),
    // from a thread of the store's; an empty function stops the calls (returning only once no
    // call is under way). Default: nothing (the renewal's list catches every cancel within a
    // renewal period).
    virtual void watch_task_cancellations(std::function<void(const std::string&)> on_cancel);

    // --- single-use approvals (an input_required round's requestState): true the first time
    // `nonce` of `purpose` is spent, false ever after — on every instance that shares the store,
    // and across restarts when it is durable (SqliteStore, PgStore). Until `expires_ms` (unix
    // ms) a token is usable, so its record is kept at least that long. Default: this process's
    // memory (MemoryTaskStore, tests).
    virtual bool spend_once(std::string_view purpose, std::string_view nonce,
                            std::int64_t expires_ms);

private:
    std::mutex spent_mutex_;
    std::unordered_map<std::string, std::int64_t> spent_;  // purpose '\n' nonce -> expiry
};

class MemoryTaskStore : public TaskStore {
public:
#include "server/task_store_overrides.inc"

private:
    std::mutex mutex_;
    std::unordered_map<std::string, TaskRecord> tasks_;
};

}  // namespace agency::mcp
