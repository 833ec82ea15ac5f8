// What the SQLite store's files share: errors from SQLite's result codes and one prepared
// statement. Private to state/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "state/rows.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

// SQLite's primary result code, as what a caller can do about it.
inline StoreError::Kind error_kind(sqlite3* db) {
    switch (sqlite3_errcode(db) & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED: return StoreError::Kind::busy;
        case SQLITE_READONLY: return StoreError::Kind::read_only;
        default: return StoreError::Kind::other;
    }
}

inline StoreError store_error(sqlite3* db) {
    return StoreError(std::string("state store: ") + sqlite3_errmsg(db), error_kind(db));
}

struct SqliteStore::Statement {
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
    nlohmann::json json_column(int column) const {
        if (sqlite3_column_type(stmt, column) == SQLITE_NULL) return nullptr;
        return nlohmann::json::parse(text(column), nullptr, false);
    }
    int changes() const { return sqlite3_changes(db); }
};

template <typename F>
auto SqliteStore::in_transaction(F&& body) {
    exec("BEGIN IMMEDIATE");
    try {
        if constexpr (std::is_void_v<decltype(body())>) {
            body();
            exec("COMMIT");
        } else {
            auto out = body();
            exec("COMMIT");
            return out;
        }
    } catch (...) {
        sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

template <typename Read>
auto SqliteStore::row_by_id(const char* columns, const char* table, std::string_view id,
                            Read read) {
    Statement s(db_,
                (std::string("SELECT ") + columns + " FROM " + table + " WHERE id = ?").c_str());
    s.bind(id);
    using Record = std::decay_t<decltype(read(s))>;
    if (!s.step()) return std::optional<Record>();
    return std::optional<Record>(read(s));
}

// Every row `s` steps to, as `read` makes it (job_from_row, task_from_row).
template <typename Row, typename Read>
auto all_rows(Row& s, Read read) {
    std::vector<std::decay_t<decltype(read(s))>> out;
    while (s.step()) out.push_back(read(s));
    return out;
}

template <typename Read, typename... Params>
auto SqliteStore::rows_if_created(const char* columns, const char* table, const char* rest,
                                  Read read, Params... params) {
    using Record = std::decay_t<decltype(read(std::declval<Statement&>()))>;
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return std::vector<Record>();
    Statement s(db_, (std::string("SELECT ") + columns + " FROM " + table + " " + rest).c_str());
    (s.bind(params), ...);
    return all_rows(s, read);
}

inline constexpr const char* kJobColumns =
    "id, kind, client_id, principal, args, status, result, error, created_at, updated_at, "
    "lease_owner, lease_until_ms";


}  // namespace agency::state
