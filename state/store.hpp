// The durable state of the action tools and tasks: background jobs, idempotency records,
// outreach drafts, confirmations and task records, behind one interface so that a second
// backend (shared state for several instances) can stand beside SQLite.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"

#include "server/task_store.hpp"

namespace agency::state {

// The task store's interface is the MCP core's (server/task_store.hpp); the stores here
// implement it, and speak of its records by these names.
using mcp::MemoryTaskStore;
using mcp::TaskRecord;
using mcp::TaskStatus;
using mcp::TaskStore;
using mcp::is_terminal;
using mcp::parse_task_status;
using mcp::to_string;

class StoreError : public std::runtime_error {
public:
    // What a caller can do about it: wait (another process holds the lock), or not.
    enum class Kind { busy, read_only, other };
    // Which store failed, so that a caller is told what to check (a SQLite file, --state-db;
    // a PostgreSQL server, --state-url). SQLite unless the PostgreSQL store says otherwise.
    enum class Backend { sqlite, postgres };
    explicit StoreError(const std::string& message, Kind kind = Kind::other,
                        Backend backend = Backend::sqlite)
        : std::runtime_error(message), kind_(kind), backend_(backend) {}
    Kind kind() const noexcept { return kind_; }
    Backend backend() const noexcept { return backend_; }

private:
    Kind kind_;
    Backend backend_;
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
    // The instance running it and until when (unix ms); empty/0 while queued. With several
    // instances on one store, a job whose lease ran out is taken over by another instance.
    std::string lease_owner;
    std::int64_t lease_until_ms = 0;
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
    // The caller that made it (a principal's name, as jobs store it): only that caller reads
    // or sends it. "" (a row imported from an export older than version 5) is nobody's.
    std::string principal;
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

// A generation slot of the per-client credit limit, counted across every instance of a
// shared store (Store::acquire_credit).
struct CreditSlot {
    bool granted = false;
    std::string id;          // when granted: what release_credit takes
    std::string why;         // when refused: "in_flight" or "per_minute"
    int retry_after_s = 1;   // when refused: when a retry may succeed
};

// One row of the write log: an action tool call that reached the gateway or was refused on
// the way. Append-only: no product code changes or deletes a row, except `write-log prune`
// (an explicit, recorded operation).
struct WriteLogEntry {
    std::string id;           // "wl_" + random; assigned by append_write_log
    std::int64_t at_ms = 0;   // unix ms; the store's clock when 0
    std::string principal;
    std::string tool;
    std::string client_id;    // "" when the arguments named none
    std::string args_digest;  // SHA-256 of the arguments less confirmation_id
    // A short summary of the arguments (bounded, never a confirmation_id).
    nlohmann::json args_summary = nlohmann::json::object();
    // How it was confirmed: person (the elicitation form) | confirmation_id | not_needed |
    // none (stopped before the confirmation stage, or refused there).
    std::string confirmation = "none";
    std::string confirmation_ref;  // a digest of the confirmation_id involved ("" if none)
    // ok (the gateway ran it) | refused (stopped before the gateway) | failed (the gateway
    // said no) | unknown (outcome unknown) | preview (a confirmation was asked for)
    std::string outcome;
    std::string reason;     // the tool error's reason ("" when ok)
    std::string record_id;  // the gateway's (or the job's) record id ("" when none)
    bool replayed = false;  // answered from a finished idempotency key: nothing was sent
    std::string detail;     // a short message (bounded)
    // The clients the caller could reach when it called (schema version 7): "*" for every
    // client (rows written before version 7 too: no caller was limited then), else the ids
    // joined by commas ("demo-law,cl_b").
    std::string caller_clients = "*";
};

// A new write log row id: "wl_", a counter that orders this process's rows, random hex
// (state/write_log_spool.cpp).
std::string new_write_log_id();

// Which rows by outcome: all; the calls that reached the gateway (ok, failed, unknown); or
// those that did not (refused, preview), so that one kind cannot crowd out the other.
enum class WriteLogOutcomes { all, sent, not_sent };

// What write_log reads: rows at or after since_ms, of one client, tool and caller (principal)
// when set, of the outcomes asked for; at most `limit` (0: all), oldest first unless
// newest_first.
struct WriteLogQuery {
    std::int64_t since_ms = 0;
    std::string client_id;
    std::string tool;
    std::string principal;
    std::size_t limit = 0;
    bool newest_first = false;
    WriteLogOutcomes outcomes = WriteLogOutcomes::all;
};

// The schema version this build writes and understands; a database at a newer version is
// refused (StoreError naming both versions), an older one is migrated when opened. Version 6
// changed PostgreSQL's functions and credit counts alone (SQLite's tables are version 5's).
// Version 7 adds the action budgets (`action_budgets`) and the write log's `caller_clients`.
inline constexpr int kSchemaVersion = 7;

// Whether opening may bring an older schema up to kSchemaVersion. Only `serve` and `state
// migrate` migrate (logging "schema 6 → 7"); every other command (write-log, keys list, state
// export, ...) refuses an older schema and names `state migrate`, so that running a report with
// a new binary never upgrades a database that an older server may still need.
enum class SchemaUpgrade { migrate, refuse };

// Tables and their columns as `state export` writes them, identical for every backend:
// {"table": "<name>", "row": {"<column>": value, ...}} per line (JSON values for JSON
// columns, integers for integer/boolean columns, strings or null otherwise).
inline constexpr const char* kStateTables[] = {"jobs",  "idempotency",  "drafts",
                                               "confirmations", "tasks", "credit_slots",
                                               "write_log", "action_budgets"};

// What Store::take_budget decided: granted (one unit counted) or refused (the window's units
// are all used), and the units used in the window after it.
struct BudgetTake {
    bool granted = false;
    std::int64_t used = 0;
};

// The server's durable state: jobs, idempotency records, drafts, confirmations and MCP task
// records (as the core's TaskStore). Tools and the task runtime see only this interface;
// SqliteStore (state/sqlite_store.hpp) is the implementation today.
class Store : public TaskStore {
public:
    ~Store() override = default;

    // What stamps rows and decides what has expired (confirmations, leases, the write log's
    // times): the clock the store was given at start, a test's ManualClock, or the process's.
    const base::Clock& clock() const { return base::Clock::or_system(clock_); }
    // Before the store is shared; `clock` must outlive it.
    void use_clock(const base::Clock& clock) { clock_ = &clock; }

    // Where the store is, for messages: a file path, or a URL without its password.
    virtual std::string describe() const = 0;

    // A spent approval is an idempotency record of its own (principal "", tool "~" + purpose,
    // key the nonce): the store's one insert-if-absent decides, for every instance on it and
    // after a restart. Kept like any idempotency record (never pruned before the token expires).
    bool spend_once(std::string_view purpose, std::string_view nonce, std::int64_t) override {
        const std::string tool = "~" + std::string(purpose);
        if (claim_idempotency("", tool, nonce, "", std::chrono::seconds{std::int64_t{1} << 40}))
            return false;
        complete_idempotency("", tool, nonce, false, R"({"spent":true})");
        return true;
    }
    // The schema version of the database (kSchemaVersion once migrated; 0 when not created
    // yet).
    virtual int schema_version() = 0;
    // Readiness: a write the database really commits, leaving nothing behind (a row of
    // `confirmations` under a random id, inserted and deleted in one transaction: its pages
    // are written at the commit, so a full disk, a read-only file or a read-only PostgreSQL
    // fails it while reads still answer). Throws StoreError. A SQLite file never created is left
    // alone (the first write creates it).
    virtual void probe_write() = 0;

    // --- jobs
    virtual Job create_job(std::string_view kind, std::string_view client_id,
                           std::string_view principal, const nlohmann::json& args) = 0;
    virtual std::optional<Job> job(std::string_view id) = 0;
    // Takes a job for `owner` until now + `lease` and marks it running: when it is queued, or
    // running under no lease, an expired lease or owner's own; with `force`, whatever lease it
    // has (a single instance after a restart: nobody else runs). Returns the job as it was
    // before the claim (a "running" one may have been sent already); nullopt when it is
    // unknown, finished, cancelled or held by another instance. Atomic across instances.
    virtual std::optional<Job> claim_job(std::string_view id, std::string_view owner,
                                         std::chrono::milliseconds lease, bool force) = 0;
    // Extends owner's leases on its running jobs to now + `lease`.
    virtual void renew_job_leases(std::string_view owner, std::chrono::milliseconds lease) = 0;
    // Unfinished jobs no live instance holds (queued, or running with no lease or an expired
    // one), oldest first, at most `limit`. Claims nothing.
    virtual std::vector<Job> orphaned_jobs(std::size_t limit) = 0;
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
    // id and created_at assigned; status "draft"; bound to draft.principal
    virtual Draft create_draft(Draft draft) = 0;
    // The draft `id` when `principal` made it; another caller's draft is nullopt, exactly as
    // an unknown id.
    virtual std::optional<Draft> draft(std::string_view id, std::string_view principal) = 0;
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

    // --- credits (the per-client limit on generation actions, across instances)
    // A slot for `client_id`: refused when `max_in_flight` slots are held (a slot held longer
    // than `hold_limit` counts as abandoned by a dead instance) or `max_per_minute` slots were
    // granted in the last 60 s. Atomic across instances.
    virtual CreditSlot acquire_credit(std::string_view client_id, int max_in_flight,
                                      int max_per_minute, std::chrono::seconds hold_limit) = 0;
    // Ends a slot's in-flight time (its grant still counts toward the minute).
    virtual void release_credit(std::string_view slot_id) = 0;

    // --- a key and a credit slot together (a generation action with an idempotency_key): one
    // round trip each on PostgreSQL; these defaults make the two calls they stand for.
    struct CreditRequest {
        std::string_view client_id;
        int max_in_flight = 0;
        int max_per_minute = 0;
        std::chrono::seconds hold_limit{0};
    };
    struct KeyAndSlot {
        std::optional<IdempotencyRecord> known;  // the key's record: nothing claimed, no slot
        CreditSlot slot;                         // else the slot, granted or refused
    };
    // claim_idempotency, then (when claimed) acquire_credit; a refused slot leaves the key
    // unclaimed, as release_idempotency would.
    virtual KeyAndSlot claim_idempotency_with_credit(std::string_view principal,
                                                     std::string_view tool, std::string_view key,
                                                     std::string_view digest,
                                                     std::chrono::seconds stale_after,
                                                     const CreditRequest& credit) {
        KeyAndSlot out;
        out.known = claim_idempotency(principal, tool, key, digest, stale_after);
        if (out.known) return out;
        try {
            out.slot = acquire_credit(credit.client_id, credit.max_in_flight, credit.max_per_minute,
                                      credit.hold_limit);
        } catch (...) {
            release_idempotency(principal, tool, key);
            throw;
        }
        if (!out.slot.granted) release_idempotency(principal, tool, key);
        return out;
    }
    // What an action call leaves to settle as its write-log row is appended.
    struct Settlement {
        std::string principal, tool, key;  // the idempotency key to complete ("": none)
        bool is_error = false;
        std::string result;   // the key's result
        std::string slot_id;  // a credit slot to release ("": none)
    };

    // --- action budgets (generation actions per caller and budget window, across instances)
    // One unit of `caller`'s budget in the window starting at `window_start` (unix seconds):
    // granted when fewer than `limit` were used, in one atomic step (of several instances
    // racing for the last unit, one gets it); refused, changing nothing, otherwise (always
    // when `limit` <= 0). Counts survive restarts: they are rows of the store.
    virtual BudgetTake take_budget(std::string_view caller, std::int64_t window_start,
                                   std::int64_t limit) = 0;
    // Gives back one unit taken for an action that never reached the gateway (never below 0).
    virtual void return_budget(std::string_view caller, std::int64_t window_start) = 0;
    // The units `caller` used in the window (0 when none, or the database was never created).
    virtual std::int64_t budget_used(std::string_view caller, std::int64_t window_start) = 0;

    // --- the write log (append-only)
    // Appends `entry` (id when empty and at_ms when 0 assigned) and returns it as stored. An
    // entry whose id the log already holds changes nothing (a spooled row appended twice).
    virtual WriteLogEntry append_write_log(WriteLogEntry entry) = 0;
    // The rows `query` selects, handed to `sink` in order.
    virtual void read_write_log(const WriteLogQuery& query,
                                const std::function<void(const WriteLogEntry&)>& sink) = 0;
    // Retention: deletes the rows older than `before_ms` and appends `note` (its detail
    // completed with the count) in the same transaction; returns how many were deleted.
    virtual std::int64_t prune_write_log(std::int64_t before_ms, WriteLogEntry note) = 0;
    // complete_idempotency and release_credit as `settle` says, then append_write_log(entry)
    // (one round trip on PostgreSQL, where the three are one statement: all or none).
    virtual WriteLogEntry append_write_log_settling(WriteLogEntry entry, const Settlement& settle) {
        if (!settle.key.empty())
            complete_idempotency(settle.principal, settle.tool, settle.key, settle.is_error,
                                 settle.result);
        if (!settle.slot_id.empty()) release_credit(settle.slot_id);
        return append_write_log(std::move(entry));
    }

    // --- export / import (`agency-mcp state export|import`; format at kStateTables)
    virtual void export_rows(const std::function<void(const nlohmann::json&)>& sink) = 0;
    // Writes one exported line; a row whose key exists already is refused (StoreError).
    virtual void import_row(const nlohmann::json& line) = 0;

private:
    const base::Clock* clock_ = nullptr;  // none given: the process's
};

// Arguments as a stable digest (object keys are sorted by nlohmann::json), for binding
// idempotency keys and confirmations to exact arguments.
std::string args_digest(const nlohmann::json& args);

}  // namespace agency::state
