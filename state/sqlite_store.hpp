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
#include "state/store_overrides.inc"

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
