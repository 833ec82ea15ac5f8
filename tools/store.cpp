#include "tools/store.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <sqlite3.h>

#include "server/crypto.hpp"

namespace agency::tools {

using json = nlohmann::json;

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string args_digest(const json& args) { return crypto::sha256_hex(args.dump()); }

std::string Store::default_path() {
    namespace fs = std::filesystem;
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state && *state) return (fs::path(state) / "agency-mcp" / "state.db").string();
    const char* home = std::getenv("HOME");
    return (fs::path(home && *home ? home : ".") / ".local" / "state" / "agency-mcp" / "state.db")
        .string();
}

namespace {

// SQLite's primary result code, as what a caller can do about it.
StoreError::Kind error_kind(sqlite3* db) {
    switch (sqlite3_errcode(db) & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED: return StoreError::Kind::busy;
        case SQLITE_READONLY: return StoreError::Kind::read_only;
        default: return StoreError::Kind::other;
    }
}

StoreError store_error(sqlite3* db) {
    return StoreError(std::string("state store: ") + sqlite3_errmsg(db), error_kind(db));
}

}  // namespace

// One prepared statement; binds by position, steps, reads columns. Finalized on scope exit.
struct Store::Statement {
    sqlite3* db;
    sqlite3_stmt* stmt = nullptr;
    int next_bind = 1;

    Statement(sqlite3* d, const char* sql) : db(d) {
        if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK)
            throw store_error(db);
    }
    ~Statement() { sqlite3_finalize(stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(std::string_view text) {
        sqlite3_bind_text(stmt, next_bind++, text.data(), static_cast<int>(text.size()),
                          SQLITE_TRANSIENT);
        return *this;
    }
    Statement& bind(std::int64_t value) {
        sqlite3_bind_int64(stmt, next_bind++, value);
        return *this;
    }
    Statement& bind_null() {
        sqlite3_bind_null(stmt, next_bind++);
        return *this;
    }
    // true while a row is available.
    bool step() {
        const int rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        throw store_error(db);
    }
    void run() { step(); }
    std::string text(int column) const {
        const auto* p = sqlite3_column_text(stmt, column);
        return p ? std::string(reinterpret_cast<const char*>(p),
                               static_cast<std::size_t>(sqlite3_column_bytes(stmt, column)))
                 : std::string();
    }
    std::int64_t integer(int column) const { return sqlite3_column_int64(stmt, column); }
    json json_column(int column) const {
        if (sqlite3_column_type(stmt, column) == SQLITE_NULL) return nullptr;
        return json::parse(text(column), nullptr, false);
    }
    int changes() const { return sqlite3_changes(db); }
};

Store::Store(const std::string& path) : path_(path) {
    if (path != ":memory:") {
        std::error_code ec;
        const auto dir = std::filesystem::path(path).parent_path();
        if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    }
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
        std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError("cannot open the state database " + path + ": " + why);
    }
    try {
        // Another process (or a second server on the same file) may hold a write lock briefly.
        sqlite3_busy_timeout(db_, 5000);
        if (path != ":memory:") exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
        exec("PRAGMA foreign_keys=ON");
        open_schema();
    } catch (const StoreError& e) {
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError("cannot use the state database " + path + ": " + e.what());
    }
}

Store::~Store() {
    if (db_) sqlite3_close(db_);
}

void Store::exec(const char* sql) {
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
  updated_at INTEGER NOT NULL
);
)sql";
}  // namespace

void Store::open_schema() {
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
  created_at INTEGER NOT NULL
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
    // MCP tasks (server/tasks.hpp): one row per task, replaced on every change.
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
  resume TEXT
);
CREATE INDEX IF NOT EXISTS tasks_owner ON tasks(owner, created_ms);
CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status);
)sql");
    migrate_jobs_status();
}

// A database written before jobs could be cancelled has a CHECK without 'cancelled'; SQLite
// cannot alter a CHECK, so the table is rebuilt once, rows kept.
void Store::migrate_jobs_status() {
    {
        Statement s(db_, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'jobs'");
        if (!s.step() || s.text(0).find("'cancelled'") != std::string::npos) return;
    }
    exec("BEGIN IMMEDIATE; ALTER TABLE jobs RENAME TO jobs_before_cancel;");
    try {
        exec(kJobsTable);
        exec(R"sql(
INSERT INTO jobs SELECT id, kind, client_id, principal, args, status, result, error, created_at,
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

// --- jobs ------------------------------------------------------------------------------------

namespace {
constexpr const char* kJobColumns =
    "id, kind, client_id, principal, args, status, result, error, created_at, updated_at";
}

Job Store::create_job(std::string_view kind, std::string_view client_id,
                      std::string_view principal, const json& args) {
    Job job{.id = "aud_" + crypto::random_hex(8),
            .kind = std::string(kind),
            .client_id = std::string(client_id),
            .principal = std::string(principal),
            .args = args,
            .status = "queued",
            .created_at = unix_now()};
    job.updated_at = job.created_at;
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "INSERT INTO jobs (id, kind, client_id, principal, args, status, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)");
    s.bind(job.id).bind(job.kind).bind(job.client_id).bind(job.principal).bind(args.dump());
    s.bind(job.created_at).bind(job.updated_at).run();
    return job;
}

namespace {
template <typename S>
Job read_job(const S& s) {
    Job job;
    job.id = s.text(0);
    job.kind = s.text(1);
    job.client_id = s.text(2);
    job.principal = s.text(3);
    job.args = s.json_column(4);
    job.status = s.text(5);
    job.result = s.json_column(6);
    job.error = s.json_column(7);
    job.created_at = s.integer(8);
    job.updated_at = s.integer(9);
    return job;
}
}  // namespace

std::optional<Job> Store::job(std::string_view id) {
    std::lock_guard lock(mutex_);
    Statement s(db_, (std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?").c_str());
    s.bind(id);
    if (!s.step()) return std::nullopt;
    return read_job(s);
}

bool Store::mark_running(std::string_view id) {
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "UPDATE jobs SET status = 'running', updated_at = ? WHERE id = ? AND status IN "
                "('queued','running')");
    s.bind(unix_now()).bind(id).run();
    return s.changes() > 0;
}

void Store::finish_job(std::string_view id, bool succeeded, const json& result,
                       const json& error) {
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "UPDATE jobs SET status = CASE status WHEN 'cancelled' THEN 'cancelled' ELSE ? "
                "END, result = ?, error = ?, updated_at = ? WHERE id = ?");
    s.bind(succeeded ? "succeeded" : "failed");
    if (result.is_null()) s.bind_null(); else s.bind(result.dump());
    if (error.is_null()) s.bind_null(); else s.bind(error.dump());
    s.bind(unix_now()).bind(id).run();
}

std::optional<std::string> Store::cancel_job(std::string_view id) {
    std::lock_guard lock(mutex_);
    std::string before;
    {
        Statement s(db_, "SELECT status FROM jobs WHERE id = ?");
        s.bind(id);
        if (!s.step()) return std::nullopt;
        before = s.text(0);
    }
    // The status guard keeps a finish that lands between the two statements (another process
    // on the file) from being overwritten.
    Statement u(db_,
                "UPDATE jobs SET status = 'cancelled', updated_at = ? WHERE id = ? AND status = ?"
                " AND status IN ('queued','running')");
    u.bind(unix_now()).bind(id).bind(before).run();
    if (u.changes() == 0) return std::nullopt;
    return before;
}

std::vector<Job> Store::unfinished_jobs() {
    std::lock_guard lock(mutex_);
    Statement s(db_, (std::string("SELECT ") + kJobColumns +
                      " FROM jobs WHERE status IN ('queued','running') ORDER BY created_at, rowid")
                         .c_str());
    std::vector<Job> out;
    while (s.step()) out.push_back(read_job(s));
    return out;
}

void Store::set_job_status(std::string_view id, std::string_view status) {
    std::lock_guard lock(mutex_);
    Statement s(db_, "UPDATE jobs SET status = ?, updated_at = ? WHERE id = ?");
    s.bind(status).bind(unix_now()).bind(id).run();
}

// --- idempotency -----------------------------------------------------------------------------

std::optional<IdempotencyRecord> Store::find_idempotency_locked(std::string_view principal,
                                                                std::string_view tool,
                                                                std::string_view key) {
    Statement s(db_,
                "SELECT args_digest, pending, is_error, result, created_at FROM idempotency "
                "WHERE principal = ? AND tool = ? AND key = ?");
    s.bind(principal).bind(tool).bind(key);
    if (!s.step()) return std::nullopt;
    return IdempotencyRecord{.args_digest = s.text(0),
                             .pending = s.integer(1) != 0,
                             .is_error = s.integer(2) != 0,
                             .result = s.text(3),
                             .created_at = s.integer(4)};
}

std::optional<IdempotencyRecord> Store::find_idempotency(std::string_view principal,
                                                         std::string_view tool,
                                                         std::string_view key) {
    std::lock_guard lock(mutex_);
    return find_idempotency_locked(principal, tool, key);
}

std::optional<IdempotencyRecord> Store::claim_idempotency(std::string_view principal,
                                                          std::string_view tool,
                                                          std::string_view key,
                                                          std::string_view digest,
                                                          std::chrono::seconds stale_after) {
    std::lock_guard lock(mutex_);
    const std::int64_t now = unix_now();
    if (auto r = find_idempotency_locked(principal, tool, key)) {
        if (!(r->pending && r->args_digest == digest && now - r->created_at > stale_after.count()))
            return r;
    }
    Statement s(db_,
                "INSERT OR REPLACE INTO idempotency (principal, tool, key, args_digest, pending, "
                "is_error, result, created_at) VALUES (?, ?, ?, ?, 1, 0, NULL, ?)");
    s.bind(principal).bind(tool).bind(key).bind(digest).bind(now).run();
    return std::nullopt;
}

void Store::complete_idempotency(std::string_view principal, std::string_view tool,
                                 std::string_view key, bool is_error, std::string_view result) {
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "UPDATE idempotency SET pending = 0, is_error = ?, result = ? WHERE principal = ? "
                "AND tool = ? AND key = ?");
    s.bind(std::int64_t{is_error ? 1 : 0}).bind(result).bind(principal).bind(tool).bind(key).run();
}

void Store::release_idempotency(std::string_view principal, std::string_view tool,
                                std::string_view key) {
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "DELETE FROM idempotency WHERE principal = ? AND tool = ? AND key = ? AND "
                "pending = 1");
    s.bind(principal).bind(tool).bind(key).run();
}

// --- drafts ----------------------------------------------------------------------------------

Draft Store::create_draft(Draft draft) {
    draft.id = "em_" + crypto::random_hex(8);
    draft.status = "draft";
    draft.created_at = unix_now();
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "INSERT INTO drafts (id, client_id, recipient, subject, html, status, gateway_id, "
                "prospect_url, created_at) VALUES (?, ?, ?, ?, ?, 'draft', ?, ?, ?)");
    s.bind(draft.id).bind(draft.client_id).bind(draft.recipient).bind(draft.subject);
    s.bind(draft.html).bind(draft.gateway_id).bind(draft.prospect_url).bind(draft.created_at);
    s.run();
    return draft;
}

std::optional<Draft> Store::draft(std::string_view id) {
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "SELECT id, client_id, recipient, subject, html, status, gateway_id, "
                "prospect_url, created_at FROM drafts WHERE id = ?");
    s.bind(id);
    if (!s.step()) return std::nullopt;
    return Draft{.id = s.text(0),
                 .client_id = s.text(1),
                 .recipient = s.text(2),
                 .subject = s.text(3),
                 .html = s.text(4),
                 .status = s.text(5),
                 .gateway_id = s.text(6),
                 .prospect_url = s.text(7),
                 .created_at = s.integer(8)};
}

bool Store::mark_draft_sent(std::string_view id) {
    std::lock_guard lock(mutex_);
    Statement s(db_, "UPDATE drafts SET status = 'sent' WHERE id = ? AND status = 'draft'");
    s.bind(id).run();
    return s.changes() > 0;
}

// --- confirmations ---------------------------------------------------------------------------

Confirmation Store::create_confirmation(std::string_view principal, std::string_view tool,
                                        std::string_view digest, std::chrono::seconds ttl) {
    Confirmation c{.id = "cf_" + crypto::random_hex(16),
                   .principal = std::string(principal),
                   .tool = std::string(tool),
                   .args_digest = std::string(digest),
                   .expires_at = unix_now() + ttl.count()};
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "INSERT INTO confirmations (id, principal, tool, args_digest, expires_at, used) "
                "VALUES (?, ?, ?, ?, ?, 0)");
    s.bind(c.id).bind(c.principal).bind(c.tool).bind(c.args_digest).bind(c.expires_at).run();
    return c;
}

ConfirmOutcome Store::consume_confirmation(std::string_view id, std::string_view principal,
                                           std::string_view tool, std::string_view digest) {
    std::lock_guard lock(mutex_);
    Statement s(db_,
                "SELECT principal, tool, args_digest, expires_at, used FROM confirmations WHERE "
                "id = ?");
    s.bind(id);
    if (!s.step()) return ConfirmOutcome::unknown;
    if (s.integer(4) != 0) return ConfirmOutcome::used;
    if (s.text(0) != principal || s.text(1) != tool || s.text(2) != digest)
        return ConfirmOutcome::mismatch;
    if (s.integer(3) < unix_now()) return ConfirmOutcome::expired;
    // The mutex serializes this process; the WHERE used = 0 guards another process on the file.
    Statement u(db_, "UPDATE confirmations SET used = 1 WHERE id = ? AND used = 0");
    u.bind(id).run();
    return u.changes() > 0 ? ConfirmOutcome::accepted : ConfirmOutcome::used;
}

// --- tasks (mcp::TaskStore) -------------------------------------------------------------------

namespace {
constexpr const char* kTaskColumns =
    "id, owner, tool, era, status, status_message, created_ms, updated_ms, ttl_ms, poll_ms, "
    "arguments, result, error, input_requests, resume";

std::string json_or_null(const json& value) { return value.is_null() ? std::string() : value.dump(); }
}  // namespace

namespace {
mcp::TaskRecord task_from(const auto& st) {
    mcp::TaskRecord t;
    t.id = st.text(0);
    t.owner = st.text(1);
    t.tool = st.text(2);
    t.era = st.text(3);
    t.status = mcp::parse_task_status(st.text(4)).value_or(mcp::TaskStatus::failed);
    t.status_message = st.text(5);
    t.created_ms = st.integer(6);
    t.updated_ms = st.integer(7);
    t.ttl_ms = st.integer(8);
    t.poll_ms = st.integer(9);
    t.arguments = st.json_column(10);
    t.result = st.text(11);
    t.error = st.json_column(12);
    t.input_requests = st.json_column(13);
    t.resume = st.json_column(14);
    return t;
}
}  // namespace

void Store::put(const mcp::TaskRecord& t) {
    std::lock_guard lock(mutex_);
    Statement st(db_, (std::string("INSERT OR REPLACE INTO tasks (") + kTaskColumns +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                          .c_str());
    st.bind(t.id).bind(t.owner).bind(t.tool).bind(t.era).bind(mcp::to_string(t.status));
    st.bind(t.status_message).bind(t.created_ms).bind(t.updated_ms).bind(t.ttl_ms).bind(t.poll_ms);
    st.bind(t.arguments.dump()).bind(t.result);
    for (const json* v : {&t.error, &t.input_requests, &t.resume}) {
        if (v->is_null())
            st.bind_null();
        else
            st.bind(json_or_null(*v));
    }
    st.run();
}

std::optional<mcp::TaskRecord> Store::get(std::string_view id) {
    std::lock_guard lock(mutex_);
    Statement st(db_, (std::string("SELECT ") + kTaskColumns + " FROM tasks WHERE id = ?").c_str());
    st.bind(id);
    if (!st.step()) return std::nullopt;
    return task_from(st);
}

std::vector<mcp::TaskRecord> Store::list(std::string_view owner, std::size_t offset,
                                         std::size_t limit) {
    std::lock_guard lock(mutex_);
    Statement st(db_, (std::string("SELECT ") + kTaskColumns +
                       " FROM tasks WHERE owner = ? ORDER BY created_ms DESC, id LIMIT ? OFFSET ?")
                          .c_str());
    st.bind(owner).bind(static_cast<std::int64_t>(limit)).bind(static_cast<std::int64_t>(offset));
    std::vector<mcp::TaskRecord> out;
    while (st.step()) out.push_back(task_from(st));
    return out;
}

std::vector<mcp::TaskRecord> Store::unfinished() {
    std::lock_guard lock(mutex_);
    Statement st(db_, (std::string("SELECT ") + kTaskColumns +
                       " FROM tasks WHERE status IN ('working','input_required') ORDER BY "
                       "created_ms")
                          .c_str());
    std::vector<mcp::TaskRecord> out;
    while (st.step()) out.push_back(task_from(st));
    return out;
}

void Store::erase_expired(std::int64_t now_ms) {
    std::lock_guard lock(mutex_);
    Statement st(db_, "DELETE FROM tasks WHERE ttl_ms > 0 AND created_ms + ttl_ms < ?");
    st.bind(now_ms).run();
}

}  // namespace agency::tools
