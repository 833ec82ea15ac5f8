// The Store in PostgreSQL (libpq), so that several agency-mcp instances share one state: leases
// decide who runs a job or task, credit counts live in the database, and every exactly-once
// step (a claim, a confirmation, an idempotency key, a credit slot) is decided by one SQL
// statement or transaction, never by this process's memory.
// TLS is libpq's own: `sslmode=verify-full` (and sslrootcert=...) in the URL; nothing here
// handles certificates.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "state/store.hpp"

namespace agency::state {

class PgStore final : public Store {
public:
    struct Options {
        int pool_size = 4;  // connections kept open, each with its statements prepared
        // Apply pending schema migrations when opening (under an advisory lock: instances
        // starting together migrate once). false: an older schema is refused instead.
        bool migrate = true;
    };

    // True for postgres:// and postgresql:// URLs.
    static bool is_url(std::string_view where);
    // The URL with any password (user:password@ or password=) removed, for messages.
    static std::string redact(std::string_view url);
    // `agency-mcp state migrate`: brings the database at `url` to kSchemaVersion and returns
    // the version it is at. Throws StoreError (a newer schema is refused, never downgraded).
    static int migrate(const std::string& url);

    // Connects (one connection now, the rest of the pool on demand) and checks, or migrates,
    // the schema. Throws StoreError naming the URL without its password.
    explicit PgStore(const std::string& url) : PgStore(url, Options{}) {}
    PgStore(const std::string& url, Options options);
    ~PgStore() override;
    PgStore(const PgStore&) = delete;
    PgStore& operator=(const PgStore&) = delete;

    // Exchanges with the server (each a statement sent and its answer awaited: one round trip)
    // that this thread has made through any PgStore, prepares and rollbacks included. A tool
    // call runs on one thread: the difference across it is the call's round trips.
    static std::int64_t exchanges_on_this_thread();

    bool shared() const override { return true; }
    std::string describe() const override { return described_; }
    int schema_version() override;
    void probe_write() override;

    // --- jobs
    Job create_job(std::string_view kind, std::string_view client_id, std::string_view principal,
                   const nlohmann::json& args) override;
    std::optional<Job> job(std::string_view id) override;
    std::optional<Job> claim_job(std::string_view id, std::string_view owner,
                                 std::chrono::milliseconds lease, bool force) override;
    void renew_job_leases(std::string_view owner, std::chrono::milliseconds lease) override;
    std::vector<Job> orphaned_jobs(std::size_t limit) override;
    void finish_job(std::string_view id, bool succeeded, const nlohmann::json& result,
                    const nlohmann::json& error) override;
    std::optional<std::string> cancel_job(std::string_view id) override;
    std::vector<Job> unfinished_jobs() override;

    // --- idempotency
    std::optional<IdempotencyRecord> claim_idempotency(std::string_view principal,
                                                       std::string_view tool, std::string_view key,
                                                       std::string_view digest,
                                                       std::chrono::seconds stale_after) override;
    std::optional<IdempotencyRecord> find_idempotency(std::string_view principal,
                                                      std::string_view tool,
                                                      std::string_view key) override;
    void complete_idempotency(std::string_view principal, std::string_view tool,
                              std::string_view key, bool is_error,
                              std::string_view result) override;
    void release_idempotency(std::string_view principal, std::string_view tool,
                             std::string_view key) override;

    // --- drafts
    Draft create_draft(Draft draft) override;
    std::optional<Draft> draft(std::string_view id, std::string_view principal) override;
    bool mark_draft_sent(std::string_view id) override;

    // --- confirmations
    Confirmation create_confirmation(std::string_view principal, std::string_view tool,
                                     std::string_view args_digest,
                                     std::chrono::seconds ttl) override;
    ConfirmOutcome consume_confirmation(std::string_view id, std::string_view principal,
                                        std::string_view tool,
                                        std::string_view args_digest) override;

    // --- action budgets (state/pg_budgets.cpp)
    BudgetTake take_budget(std::string_view caller, std::int64_t window_start,
                           std::int64_t limit) override;
    void return_budget(std::string_view caller, std::int64_t window_start) override;
    std::int64_t budget_used(std::string_view caller, std::int64_t window_start) override;

    // --- credits
    CreditSlot acquire_credit(std::string_view client_id, int max_in_flight, int max_per_minute,
                              std::chrono::seconds hold_limit) override;
    void release_credit(std::string_view slot_id) override;
    // One call of agency_claim_key_and_credit.
    KeyAndSlot claim_idempotency_with_credit(std::string_view principal, std::string_view tool,
                                             std::string_view key, std::string_view digest,
                                             std::chrono::seconds stale_after,
                                             const CreditRequest& credit) override;

    // --- the write log (state/pg_write_log.cpp)
    WriteLogEntry append_write_log(WriteLogEntry entry) override;
    void read_write_log(const WriteLogQuery& query,
                        const std::function<void(const WriteLogEntry&)>& sink) override;
    std::int64_t prune_write_log(std::int64_t before_ms, WriteLogEntry note) override;
    // One statement (a data-modifying WITH).
    WriteLogEntry append_write_log_settling(WriteLogEntry entry, const Settlement& settle) override;

    // --- export / import
    void export_rows(const std::function<void(const nlohmann::json&)>& sink) override;
    void import_row(const nlohmann::json& line) override;

    // --- MCP tasks (TaskStore)
    void put(const TaskRecord& task) override;
    std::optional<TaskRecord> get(std::string_view id) override;
    std::vector<TaskRecord> list(std::string_view owner, std::string_view era, std::size_t offset,
                                 std::size_t limit) override;
    std::vector<TaskRecord> unfinished() override;
    void erase_expired(std::int64_t now_ms) override;
    std::optional<TaskRecord> claim_task(std::string_view id, std::string_view owner,
                                         std::int64_t lease_ms, bool force) override;
    std::vector<std::string> renew_task_leases(std::string_view owner,
                                               std::int64_t lease_ms) override;
    std::vector<TaskRecord> orphaned_tasks(std::size_t limit) override;
    // A LISTEN connection on a thread of this store's; reconnects when dropped. A second call
    // replaces the callback.
    void watch_task_cancellations(std::function<void(const std::string&)> on_cancel) override;

    struct Conn;  // one libpq connection (state/pg_internal.hpp)

private:
    class Lease;  // a pooled connection, back to the pool when it ends
    Lease acquire();
    void release(std::unique_ptr<Conn> conn);
    void apply_migrations(Conn& conn, bool migrate);
    void listen_loop();
    // Runs `body(conn)` on a pooled connection inside BEGIN ... COMMIT (ROLLBACK on a throw).
    template <typename F>
    auto in_transaction(F&& body);

    std::string url_;
    std::string described_;
    Options options_;

    std::mutex pool_mutex_;
    std::condition_variable pool_free_;
    std::vector<std::unique_ptr<Conn>> idle_;
    int open_ = 0;  // connections that exist (idle or lent)

    std::mutex watch_mutex_;
    std::function<void(const std::string&)> on_cancel_;
    std::thread listener_;
    std::atomic<bool> stopping_{false};
};

}  // namespace agency::state
