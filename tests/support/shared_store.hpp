// The state store that the instances of one test share, on either backend: a SQLite file in the
// temporary folder (removed with its -wal and -shm) or a fresh PostgreSQL database; and the
// store's names that its tests write unqualified (`using namespace agency::testing::store_names;`).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "base/crypto.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/pg_cluster.hpp"

namespace agency::testing {

enum class StoreBackend { sqlite, postgres };

// `prefix` names the SQLite file ("agency-drafts-" gives agency-drafts-<hex>.db).
struct SharedStore {
    StoreBackend backend;
    std::string where;

    SharedStore(StoreBackend b, const std::string& prefix) : backend(b) {
        where = b == StoreBackend::postgres
                    ? pg_fresh_database()
                    : (std::filesystem::temp_directory_path() /
                       (prefix + agency::crypto::random_hex(6) + ".db"))
                          .string();
    }
    ~SharedStore() {
        if (backend == StoreBackend::sqlite) {
            std::error_code ignored;
            for (const char* suffix : {"", "-wal", "-shm"})
                std::filesystem::remove(where + suffix, ignored);
        }
    }
    SharedStore(const SharedStore&) = delete;
    SharedStore& operator=(const SharedStore&) = delete;

    // Another connection to it, as another instance (or process) would open.
    std::unique_ptr<agency::state::Store> open() const {
        if (backend == StoreBackend::postgres)
            return std::make_unique<agency::state::PgStore>(where);
        return std::make_unique<agency::state::SqliteStore>(where);
    }
};

}  // namespace agency::testing

// None of these means anything else in a test: the directive is safe in a unity batch too.
namespace agency::testing::store_names {
using agency::state::ConfirmOutcome, agency::state::Draft, agency::state::PgStore,
    agency::state::SqliteStore, agency::state::StoreError, agency::state::TaskRecord,
    agency::state::TaskStatus, agency::state::WriteLogEntry, agency::state::WriteLogQuery;
}  // namespace agency::testing::store_names
