// What the PostgreSQL store's files share: a connection with its prepared statements, results,
// parameters and errors. Private to state/.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include "state/pg_store.hpp"

namespace agency::state {

// libpq's functions, loaded on first use (dlopen of libpq.so.5) rather than linked: a process
// that never opens a PostgreSQL store never loads libpq and the ~17 libraries it pulls in
// (Kerberos, LDAP, ...; about 5M instructions at every start, all bound at once).
// clang-format off
#define AGENCY_LIBPQ_FUNCTIONS(X)                                                                \
    X(PQconnectdbParams) X(PQstatus) X(PQerrorMessage) X(PQfinish) X(PQsetNoticeProcessor)     \
    X(PQexecPrepared) X(PQexecParams) X(PQexec) X(PQprepare) X(PQresultStatus)                  \
    X(PQresultErrorField) X(PQresultErrorMessage) X(PQclear) X(PQntuples) X(PQnfields)          \
    X(PQgetisnull) X(PQgetvalue) X(PQgetlength) X(PQfname) X(PQftype) X(PQcmdTuples)            \
    X(PQreset) X(PQtransactionStatus) X(PQsocket) X(PQconsumeInput) X(PQnotifies) X(PQfreemem)
// clang-format on

struct LibPq {
#define AGENCY_LIBPQ_MEMBER(name) decltype(&::name) name = nullptr;
    AGENCY_LIBPQ_FUNCTIONS(AGENCY_LIBPQ_MEMBER)
#undef AGENCY_LIBPQ_MEMBER
};

// Loads libpq once; throws StoreError naming the package to install when it cannot.
const LibPq& libpq();

// One text-format parameter; nullopt is SQL NULL.
struct PgParam {
    std::optional<std::string> value;
    PgParam(std::string_view text) : value(std::string(text)) {}
    PgParam(const char* text) : value(std::string(text)) {}
    PgParam(const std::string& text) : value(text) {}
    PgParam(std::int64_t n) : value(std::to_string(n)) {}
    PgParam(int n) : value(std::to_string(n)) {}
    PgParam(std::nullptr_t) {}
    // JSON text, NULL for a null value.
    static PgParam json(const nlohmann::json& v) {
        return v.is_null() ? PgParam(nullptr) : PgParam(v.dump());
    }
    static PgParam boolean(bool b) { return PgParam(b ? "true" : "false"); }
};

// A query's result (owned); rows are read by column index in text format.
class PgResult {
public:
    explicit PgResult(PGresult* r) : r_(r) {}
    int rows() const { return libpq().PQntuples(r_.get()); }
    int columns() const { return libpq().PQnfields(r_.get()); }
    bool null(int row, int column) const { return libpq().PQgetisnull(r_.get(), row, column) != 0; }
    std::string text(int row, int column) const {
        return std::string(libpq().PQgetvalue(r_.get(), row, column),
                           static_cast<std::size_t>(libpq().PQgetlength(r_.get(), row, column)));
    }
    std::int64_t integer(int row, int column) const {
        return null(row, column) ? 0 : std::stoll(text(row, column));
    }
    bool boolean(int row, int column) const { return text(row, column) == "t"; }
    nlohmann::json json_column(int row, int column) const {
        if (null(row, column)) return nullptr;
        return nlohmann::json::parse(text(row, column), nullptr, false);
    }
    PGresult* get() const { return r_.get(); }

    // One row of it, read as SqliteStore's statements are (text/integer/json_column by index).
    struct Row {
        const PgResult* result;
        int row;
        std::string text(int c) const { return result->text(row, c); }
        std::int64_t integer(int c) const { return result->integer(row, c); }
        nlohmann::json json_column(int c) const { return result->json_column(row, c); }
    };
    Row row(int i) const { return Row{this, i}; }
    // Every row, each made into a record by `from_row` (job_from_row, task_from_row: rows.hpp).
    template <typename FromRow>
    auto all(FromRow from_row) const {
        std::vector<decltype(from_row(row(0)))> out;
        out.reserve(static_cast<std::size_t>(rows()));
        for (int i = 0; i < rows(); ++i) out.push_back(from_row(row(i)));
        return out;
    }

private:
    struct Clear {
        void operator()(PGresult* r) const { libpq().PQclear(r); }
    };
    std::unique_ptr<PGresult, Clear> r_;
};

// StoreError from a failed result or connection: Kind::busy when waiting or reconnecting may
// help (connection lost, serialization failure, deadlock, lock timeout, too many connections).
StoreError pg_error(PGconn* conn, const PGresult* result, std::string_view what);

// One exchange with the server (a statement sent and its answer read) by this thread: every
// PQexec*, PQprepare, ROLLBACK and connection (re)opened of the store calls it first
// (PgStore::exchanges_on_this_thread).
void count_exchange();

struct PgStore::Conn {
    PGconn* pg = nullptr;
    bool prepared = false;  // this connection's statements are prepared (lost on reset)

    ~Conn() {
        if (pg) libpq().PQfinish(pg);
    }
    // A prepared statement (state/pg_statements.cpp) with text parameters.
    PgResult run(const char* name, std::initializer_list<PgParam> params);
    // Ad hoc SQL with parameters (import's INSERT, migrations).
    PgResult sql(const std::string& text, const std::vector<PgParam>& params = {});
    // SQL without parameters, several statements allowed (migration steps, BEGIN, COMMIT).
    void exec(const char* text);
};

// Connects to `url` (libpq's URL, TLS by its sslmode=); throws StoreError (busy) naming
// `described` on failure.
std::unique_ptr<PgStore::Conn> pg_connect(const std::string& url, const std::string& described);

// Every statement the store runs, prepared on each connection: {name, SQL}.
struct PgStatement {
    const char* name;
    const char* sql;
};
const std::vector<PgStatement>& pg_statements();

// agency_acquire_credit's answer (why refused, or '' when granted; when its per-minute window
// frees a place) as a CreditSlot with id `slot_id`.
CreditSlot credit_outcome(const std::string& why, const std::string& slot_id,
                          std::int64_t oldest_ms, std::int64_t now_ms);

// The schema: migration steps by version (state/pg_schema.cpp).
struct PgMigration {
    int version;
    const char* sql;
};
const std::vector<PgMigration>& pg_migrations();

class PgStore::Lease {
public:
    Lease(PgStore* store, std::unique_ptr<Conn> conn) : store_(store), conn_(std::move(conn)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
        if (conn_) store_->release(std::move(conn_));
    }
    Conn& operator*() { return *conn_; }
    Conn* operator->() { return conn_.get(); }

private:
    PgStore* store_;
    std::unique_ptr<Conn> conn_;
};

template <typename F>
auto PgStore::in_transaction(F&& body) {
    auto conn = acquire();
    conn->exec("BEGIN");
    try {
        if constexpr (std::is_void_v<decltype(body(*conn))>) {
            body(*conn);
            conn->exec("COMMIT");
        } else {
            auto out = body(*conn);
            conn->exec("COMMIT");
            return out;
        }
    } catch (...) {
        if (libpq().PQstatus(conn->pg) == CONNECTION_OK) {
            count_exchange();
            libpq().PQclear(libpq().PQexec(conn->pg, "ROLLBACK"));
        }
        throw;
    }
}

}  // namespace agency::state
