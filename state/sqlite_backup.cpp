// `agency-mcp state backup FILE`: a consistent copy of a SQLite state file, taken with SQLite's
// online backup while a server may be writing it. A plain `cp` of a WAL-mode file copies the
// main file without the pages still in its -wal file: it can hold no tables at all.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "state/sqlite_store.hpp"

namespace agency::state {

namespace {

struct Db {
    sqlite3* db = nullptr;
    ~Db() { sqlite3_close(db); }
    std::string error() const { return db ? sqlite3_errmsg(db) : "out of memory"; }
};

}  // namespace

SqliteStore::Backup SqliteStore::backup(const std::string& from, const std::string& to) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_regular_file(from, ec))
        throw StoreError("there is no state database at " + from +
                         " (give --state-db, or AGENCY_STATE_DB, as serve has it)");
    if (fs::exists(to, ec) || fs::is_symlink(to, ec))
        throw StoreError(to + " exists: a backup never overwrites a file; name a new one");
    // Made now, 0600 whatever the umask: the copy holds what the state file holds.
    const int fd = ::open(to.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        throw StoreError("cannot create " + to + ": " + std::generic_category().message(errno));
    ::close(fd);
    const auto fail = [&](const std::string& why) {
        fs::remove(to, ec);
        return StoreError("backing up " + from + " to " + to + " failed: " + why);
    };
    Db source, target;
    // Read-write without create (a read-only connection to a WAL file needs its -shm file to
    // exist): nothing is written through it.
    if (sqlite3_open_v2(from.c_str(), &source.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
        throw fail(source.error());
    sqlite3_busy_timeout(source.db, 5000);
    sqlite3_exec(source.db, "PRAGMA query_only=1", nullptr, nullptr, nullptr);
    if (sqlite3_open_v2(to.c_str(), &target.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
        throw fail(target.error());
    sqlite3_backup* copy = sqlite3_backup_init(target.db, "main", source.db, "main");
    if (!copy) throw fail(target.error());
    // All pages in one step: one read transaction, so the copy is the file at one moment. A
    // writer holding the lock (a checkpoint) is waited for, up to 10 s.
    int rc = SQLITE_OK;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((rc = sqlite3_backup_step(copy, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int pages = sqlite3_backup_pagecount(copy);
    sqlite3_backup_finish(copy);
    if (rc != SQLITE_DONE) throw fail(sqlite3_errstr(rc));
    Backup out;
    out.pages = pages;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(target.db, "PRAGMA user_version", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        out.schema_version = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    // The copy is whole: checked before it is called a backup.
    if (sqlite3_prepare_v2(target.db, "PRAGMA quick_check", -1, &stmt, nullptr) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_ROW ||
        std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) != "ok") {
        sqlite3_finalize(stmt);
        throw fail("the copy does not pass SQLite's quick_check");
    }
    sqlite3_finalize(stmt);
    out.bytes = static_cast<std::int64_t>(fs::file_size(to, ec));
    return out;
}

}  // namespace agency::state
