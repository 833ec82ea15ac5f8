// The Store in one SQLite file (WAL), so that a restart loses nothing. One connection guarded by
// a mutex: the write rate is a handful per tool call, far below what that serves.
#pragma once

#include <mutex>
#include <string>

#include "state/store.hpp"

struct sqlite3;

namespace agency::state {

class SqliteStore final : public Store {
public:
    // $XDG_STATE_HOME/agency-mcp/state.db, else ~/.local/state/agency-mcp/state.db.
    static std::string default_path();

    // Opens an existing database (checking its schema) or, when there is none, makes sure one
    // can be created there: the file and its schema are created by the first call that needs
    // them (the directory now). ":memory:" is a private in-memory database. Throws StoreError
    // naming the path. The file it creates is 0600 (it holds drafts and the write log); an older
    // schema is migrated, or with SchemaUpgrade::refuse refused when first opened.
    explicit SqliteStore(const std::string& path, SchemaUpgrade upgrade = SchemaUpgrade::migrate);
    ~SqliteStore() override;
    SqliteStore(const SqliteStore&) = delete;
    SqliteStore& operator=(const SqliteStore&) = delete;

    // `state backup`: a consistent copy of the database at `from` in a new file `to` (0600),
    // taken with SQLite's online backup while a server may write; checked by quick_check.
    // Throws StoreError (an existing `to` is never overwritten).
    struct Backup {
        int pages = 0;
        int schema_version = 0;
        std::int64_t bytes = 0;
    };
    static Backup backup(const std::string& from, const std::string& to);

    const std::string& path() const { return path_; }
    std::string describe() const override { return path_; }
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

    // --- idempotency (per principal and tool)
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

    // --- credits
    CreditSlot acquire_credit(std::string_view client_id, int max_in_flight, int max_per_minute,
                              std::chrono::seconds hold_limit) override;
    void release_credit(std::string_view slot_id) override;

    // --- action budgets (state/sqlite_budgets.cpp)
    BudgetTake take_budget(std::string_view caller, std::int64_t window_start,
                           std::int64_t limit) override;
    void return_budget(std::string_view caller, std::int64_t window_start) override;
    std::int64_t budget_used(std::string_view caller, std::int64_t window_start) override;

    // --- the write log (state/sqlite_write_log.cpp)
    WriteLogEntry append_write_log(WriteLogEntry entry) override;
    void read_write_log(const WriteLogQuery& query,
                        const std::function<void(const WriteLogEntry&)>& sink) override;
    std::int64_t prune_write_log(std::int64_t before_ms, WriteLogEntry note) override;

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

private:
    struct Statement;
    std::optional<IdempotencyRecord> find_idempotency_locked(std::string_view principal,
                                                             std::string_view tool,
                                                             std::string_view key);
    void open();
    void open_once();
    // The mutex held and the database open (created if need be).
    std::unique_lock<std::mutex> open_locked();
    // The mutex held; false (nothing opened or created) when the database was never created.
    bool exists_locked(std::unique_lock<std::mutex>& lock);
    void exec(const char* sql);
    void open_schema();
    bool has_tables();
    void create_tables();
    void migrate_jobs_status();
    void migrate_to_leases();
    void migrate_draft_principals();
    void migrate_caller_clients();
    // BEGIN IMMEDIATE ... COMMIT around `body` (rolled back when it throws): the steps of a
    // claim or a credit grant are atomic against other processes on the file too.
    template <typename F>
    auto in_transaction(F&& body);
    // The row of `table` with this id as `read` makes it (job_from_row, task_from_row), nullopt
    // when there is none; the caller holds the mutex.
    template <typename Read>
    auto row_by_id(const char* columns, const char* table, std::string_view id, Read read);
    // The rows of `table` that `rest` (WHERE ..., ORDER BY ...) selects with `params` bound, as
    // `read` makes them; none (nothing created) when the database was never created.
    template <typename Read, typename... Params>
    auto rows_if_created(const char* columns, const char* table, const char* rest, Read read,
                         Params... params);

    std::string path_;
    SchemaUpgrade upgrade_ = SchemaUpgrade::migrate;
    sqlite3* db_ = nullptr;
    std::mutex mutex_;
};

}  // namespace agency::state
