// SqliteStore: opening the file, its schema and migrations. The Store's operations are by kind:
// jobs, idempotency, drafts and confirmations in sqlite_jobs.cpp, MCP task records in
// sqlite_tasks.cpp, leases, credits and export/import in sqlite_shared.cpp, the write log in
// sqlite_write_log.cpp.
#include "state/sqlite_store.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/log.hpp"
#include "state/sqlite_internal.hpp"

namespace agency::state {

using json = nlohmann::json;

std::string SqliteStore::default_path() {
    namespace fs = std::filesystem;
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state && *state) return (fs::path(state) / "agency-mcp" / "state.db").string();
    const char* home = std::getenv("HOME");
    return (fs::path(home && *home ? home : ".") / ".local" / "state" / "agency-mcp" / "state.db")
        .string();
}

SqliteStore::SqliteStore(const std::string& path, SchemaUpgrade upgrade)
    : path_(path), upgrade_(upgrade) {
    namespace fs = std::filesystem;
    if (path == ":memory:") {
        open();
        return;
    }
    // The database is opened (created, its schema checked and migrated) by the first call that
    // needs it, so that a server that is only started and asked server/discover (a client's
    // probe, issue 29) or to list its tools neither creates, opens nor migrates it (its folder
    // is made now if missing). Whether it could be used is still known now: a path that cannot
    // be one fails at start, not at the first call.
    std::error_code ec;
    if (fs::exists(path, ec)) {
        if (::access(path.c_str(), R_OK | W_OK) != 0)
            throw StoreError("cannot open the state database " + path + ": not writable");
        return;
    }
    const auto dir = fs::path(path).parent_path();
    if (!dir.empty()) fs::create_directories(dir, ec);
    const fs::path probe = dir.empty() ? fs::path(".") : dir;
    if (ec || ::access(probe.c_str(), W_OK | X_OK) != 0) {
        throw StoreError("cannot open the state database " + path + ": cannot create it in " +
                         probe.string() +
                         (ec ? " (" + ec.message() + ")" : std::string(" (not writable)")));
    }
}

// Several stores opening one new file at once (instances, or processes, starting together):
// switching it to WAL and creating its schema can meet a lock that SQLite's busy handler does
// not wait for (the journal mode change answers SQLITE_BUSY at once). Such a start is tried
// again for up to the busy timeout, then fails as before.
void SqliteStore::open() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int attempt = 0;; ++attempt) {
        try {
            open_once();
            return;
        } catch (const StoreError& e) {
            if (e.kind() != StoreError::Kind::busy || std::chrono::steady_clock::now() > deadline)
                throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min(5 + 5 * attempt, 50)));
        }
    }
}

void SqliteStore::open_once() {
    // Created 0600 whatever the umask: the file holds drafts, confirmations and the write log
    // (SQLite gives its -wal and -shm files the database file's mode).
    if (path_ != ":memory:") {
        const int fd = ::open(path_.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd >= 0) ::close(fd);
    }
    if (sqlite3_open_v2(path_.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
        std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError("cannot open the state database " + path_ + ": " + why);
    }
    try {
        // Another process (or a second server on the same file) may hold a write lock briefly.
        sqlite3_busy_timeout(db_, 5000);
        if (path_ != ":memory:") exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        exec("PRAGMA foreign_keys=ON");
        open_schema();
    } catch (const StoreError& e) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError("cannot use the state database " + path_ + ": " + e.what(), e.kind());
    }
}

std::unique_lock<std::mutex> SqliteStore::open_locked() {
    std::unique_lock lock(mutex_);
    if (!db_) open();
    return lock;
}

bool SqliteStore::exists_locked(std::unique_lock<std::mutex>& lock) {
    lock = std::unique_lock(mutex_);
    if (db_) return true;
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) return false;  // never created: nothing in it
    open();
    return true;
}

SqliteStore::~SqliteStore() {
    if (db_) sqlite3_close(db_);
}

void SqliteStore::exec(const char* sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
        std::string why = message ? message : sqlite3_errmsg(db_);
        sqlite3_free(message);
        throw StoreError(why, error_kind(db_));
    }
}

namespace {
constexpr const char* kJobsTable = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  client_id TEXT NOT NULL,
  principal TEXT NOT NULL,
  args TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued','running','succeeded','failed','cancelled')),
  result TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until_ms INTEGER NOT NULL DEFAULT 0
);
)sql";
// Version 4: a task of an authenticated caller (a key, an OAuth token) is bound to the caller,
// no longer to its legacy session: the owner "<caller>#<session id>" becomes "<caller>".
constexpr const char* kTaskOwnersToCallers = R"sql(
UPDATE tasks SET owner = substr(owner, 1, length(owner) - 33)
  WHERE era = 'legacy' AND (owner LIKE 'key:%' OR owner LIKE 'oauth:%') AND length(owner) > 33
    AND substr(owner, -33, 1) = '#' AND substr(owner, -32) NOT GLOB '*[^0-9a-f]*';
)sql";
// Version 3: the write log, append-only (an UPDATE is refused by the database itself).
constexpr const char* kWriteLogTable = R"sql(
CREATE TABLE IF NOT EXISTS write_log (
  id TEXT PRIMARY KEY,
  at_ms INTEGER NOT NULL,
  principal TEXT NOT NULL,
  tool TEXT NOT NULL,
  client_id TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  args_summary TEXT NOT NULL,
  confirmation TEXT NOT NULL,
  confirmation_ref TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  record_id TEXT NOT NULL DEFAULT '',
  replayed INTEGER NOT NULL DEFAULT 0,
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS write_log_at ON write_log(at_ms);
CREATE INDEX IF NOT EXISTS write_log_client ON write_log(client_id, at_ms);
CREATE TRIGGER IF NOT EXISTS write_log_append_only BEFORE UPDATE ON write_log
BEGIN SELECT RAISE(ABORT, 'the write log is append-only'); END;
)sql";
}  // namespace

int SqliteStore::schema_version() {
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return 0;
    Statement s(db_, "PRAGMA user_version");
    return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

void SqliteStore::open_schema() {
    std::int64_t version = 0;
    {
        Statement s(db_, "PRAGMA user_version");
        version = s.step() ? s.integer(0) : 0;
        if (version > kSchemaVersion)
            throw StoreError("its schema is at version " + std::to_string(version) +
                             ", newer than this agency-mcp understands (" +
                             std::to_string(kSchemaVersion) +
                             "): run a newer agency-mcp, or point --state-db elsewhere");
    }
    // Version 1 wrote no version number: a file at 0 with tables is at 1.
    const bool fresh = version == 0 && !has_tables();
    const std::int64_t from = version == 0 ? 1 : version;
    if (!fresh && version < kSchemaVersion && upgrade_ == SchemaUpgrade::refuse)
        throw StoreError("its schema is at version " + std::to_string(from) +
                         ", older than this agency-mcp needs (" + std::to_string(kSchemaVersion) +
                         "); this command does not upgrade it: run `agency-mcp state migrate` "
                         "(or start `agency-mcp serve`), after a backup (`agency-mcp state "
                         "backup FILE`), or use the agency-mcp that wrote it");
    migrate_jobs_status();  // before the tables of this version: rebuilds an old jobs table
    // One transaction: a new database is written (and synced) once, not once per table.
    exec("BEGIN IMMEDIATE");
    try {
        migrate_to_leases();
        create_tables();
        if (version < 4) exec(kTaskOwnersToCallers);
        migrate_draft_principals();
        migrate_caller_clients();
        exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
        exec("COMMIT");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
    if (!fresh && from < kSchemaVersion)
        log::info("state database {}: schema {} → {} (migrated)", path_, from, kSchemaVersion);
}

bool SqliteStore::has_tables() {
    Statement s(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table'");
    return s.step() && s.integer(0) > 0;
}

// Version 1 (no user_version) had no leases and no shared credit counts: columns added.
void SqliteStore::migrate_to_leases() {
    for (const char* table : {"jobs", "tasks"}) {
        Statement s(db_, "SELECT count(*) FROM pragma_table_info(?) WHERE name = 'lease_owner'");
        s.bind(std::string_view(table));
        if (!s.step()) continue;
        Statement exists(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
        exists.bind(std::string_view(table));
        if (s.integer(0) != 0 || !exists.step() || exists.integer(0) == 0) continue;
        exec(("ALTER TABLE " + std::string(table) +
              " ADD COLUMN lease_owner TEXT NOT NULL DEFAULT ''; ALTER TABLE " + table +
              " ADD COLUMN lease_until_ms INTEGER NOT NULL DEFAULT 0;")
                 .c_str());
    }
}

// Version 5: a draft is bound to the caller that made it. Drafts made before are given to
// `local` (the caller over stdio, or over HTTP without keys or OAuth): a key or a token never
// reaches them.
void SqliteStore::migrate_draft_principals() {
    Statement s(db_, "SELECT count(*) FROM pragma_table_info('drafts') WHERE name = 'principal'");
    if (!s.step() || s.integer(0) != 0) return;
    exec(
        "ALTER TABLE drafts ADD COLUMN principal TEXT NOT NULL DEFAULT ''; "
        "UPDATE drafts SET principal = 'local';");
}

// Version 7: the write log records the clients its caller could reach. Rows written before
// are "*": no caller was limited to some clients then.
void SqliteStore::migrate_caller_clients() {
    Statement s(db_,
                "SELECT count(*) FROM pragma_table_info('write_log') WHERE name = "
                "'caller_clients'");
    if (!s.step() || s.integer(0) != 0) return;
    exec("ALTER TABLE write_log ADD COLUMN caller_clients TEXT NOT NULL DEFAULT '*'");
}

void SqliteStore::create_tables() {
    exec(kJobsTable);
    exec(R"sql(
CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, created_at);
CREATE TABLE IF NOT EXISTS idempotency (
  principal TEXT NOT NULL,
  tool TEXT NOT NULL,
  key TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  pending INTEGER NOT NULL DEFAULT 1,
  is_error INTEGER NOT NULL DEFAULT 0,
  result TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (principal, tool, key)
);
CREATE TABLE IF NOT EXISTS drafts (
  id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  recipient TEXT NOT NULL,
  subject TEXT NOT NULL,
  html TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('draft','sent')),
  gateway_id TEXT,
  prospect_url TEXT,
  created_at INTEGER NOT NULL,
  principal TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS confirmations (
  id TEXT PRIMARY KEY,
  principal TEXT NOT NULL,
  tool TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  used INTEGER NOT NULL DEFAULT 0
);
)sql");
    // MCP tasks (server/task_store.hpp): one row per task, replaced on every change.
    exec(R"sql(
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  tool TEXT NOT NULL,
  era TEXT NOT NULL,
  status TEXT NOT NULL,
  status_message TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  ttl_ms INTEGER NOT NULL,
  poll_ms INTEGER NOT NULL,
  arguments TEXT NOT NULL,
  result TEXT NOT NULL,
  error TEXT,
  input_requests TEXT,
  resume TEXT,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_until_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tasks_owner ON tasks(owner, created_ms);
CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status);
CREATE TABLE IF NOT EXISTS credit_slots (
  id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  granted_ms INTEGER NOT NULL,
  released_ms INTEGER
);
CREATE INDEX IF NOT EXISTS credit_slots_client ON credit_slots(client_id, granted_ms);
)sql");
    exec(kWriteLogTable);  // version 3
    // Version 7: generation actions used per caller and budget window (its start, unix s).
    exec(R"sql(
CREATE TABLE IF NOT EXISTS action_budgets (
  caller TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  used INTEGER NOT NULL,
  PRIMARY KEY (caller, window_start)
);
)sql");
}

// A database written before jobs could be cancelled has a CHECK without 'cancelled'; SQLite
// cannot alter a CHECK, so the table is rebuilt once, rows kept.
void SqliteStore::migrate_jobs_status() {
    {
        Statement s(db_, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'");
        if (!s.step() || s.text(0).find("'cancelled'") != std::string::npos) return;
    }
    exec("BEGIN IMMEDIATE; ALTER TABLE jobs RENAME TO jobs_before_cancel;");
    try {
        exec(kJobsTable);
        exec(R"sql(
INSERT INTO jobs (id, kind, client_id, principal, args, status, result, error, created_at,
  updated_at) SELECT id, kind, client_id, principal, args, status, result, error, created_at,
  updated_at FROM jobs_before_cancel ORDER BY rowid;
DROP TABLE jobs_before_cancel;
CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, created_at);
COMMIT;
)sql");
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

}  // namespace agency::state
