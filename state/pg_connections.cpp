// PgStore's connections: the pool, errors, the schema's migrations and the LISTEN thread.
#include "state/pg_store.hpp"

#include <cerrno>
#include <chrono>

#include <poll.h>

#include "base/log.hpp"
#include "state/pg_internal.hpp"

namespace agency::state {

namespace {

// pg_advisory_lock key of the schema migrations ("agency" in ASCII): one migrator at a time.
constexpr const char* kMigrationLock = "SELECT pg_advisory_lock(107083818574457)";
constexpr const char* kMigrationUnlock = "SELECT pg_advisory_unlock(107083818574457)";

// libpq's message on one line (it breaks lines and indents with tabs): logs are line-based.
std::string trimmed(const char* text) {
    std::string s;
    for (const char* p = text ? text : ""; *p; ++p) {
        const bool blank = *p == '\n' || *p == '\t' || *p == ' ';
        if (!blank)
            s += *p;
        else if (!s.empty() && s.back() != ' ')
            s += ' ';
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

bool busy_state(std::string_view sqlstate) {
    return sqlstate.starts_with("08") ||  // connection exception
           sqlstate == "40001" ||         // serialization failure
           sqlstate == "40P01" ||         // deadlock detected
           sqlstate == "55P03" ||         // lock not available (lock_timeout)
           sqlstate == "53300" ||         // too many connections
           sqlstate.starts_with("57P");   // the server is shutting down or starting
}

void ignore_notice(void*, const char*) {}

// What a failed statement was, for its message: "INSERT", "CREATE", ...
std::string first_word(std::string_view sql) {
    const auto start = sql.find_first_not_of(" \n");
    if (start == std::string_view::npos) return "SQL";
    return std::string(sql.substr(start, sql.find_first_of(" \n(", start) - start));
}

thread_local std::int64_t exchanges_here = 0;

}  // namespace

void count_exchange() { ++exchanges_here; }

std::int64_t PgStore::exchanges_on_this_thread() { return exchanges_here; }

StoreError pg_error(PGconn* conn, const PGresult* result, std::string_view what) {
    const char* state = result ? libpq().PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    const bool lost = !conn || libpq().PQstatus(conn) != CONNECTION_OK;
    const bool busy = lost || (state && busy_state(state));
    std::string message = trimmed(result ? libpq().PQresultErrorMessage(result) : nullptr);
    if (message.empty() && conn) message = trimmed(libpq().PQerrorMessage(conn));
    std::string text = "state store (PostgreSQL): " + std::string(what) + ": " + message;
    if (lost)
        text += " (the connection was lost: retry; it is reopened on the next call)";
    else if (busy)
        text += " (the database is busy: retry in a moment)";
    return StoreError(text, busy ? StoreError::Kind::busy : StoreError::Kind::other,
                      StoreError::Backend::postgres);
}

PgResult PgStore::Conn::run(const char* name, std::initializer_list<PgParam> params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.value ? p.value->c_str() : nullptr);
    count_exchange();
    PgResult r(libpq().PQexecPrepared(pg, name, static_cast<int>(values.size()), values.data(),
                                      nullptr, nullptr, 0));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) throw pg_error(pg, r.get(), name);
    return r;
}

PgResult PgStore::Conn::sql(const std::string& text, const std::vector<PgParam>& params) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.value ? p.value->c_str() : nullptr);
    count_exchange();
    PgResult r(libpq().PQexecParams(pg, text.c_str(), static_cast<int>(values.size()), nullptr,
                                    values.data(), nullptr, nullptr, 0));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        throw pg_error(pg, r.get(), first_word(text));
    return r;
}

void PgStore::Conn::exec(const char* text) {
    count_exchange();
    PgResult r(libpq().PQexec(pg, text));
    const auto status = libpq().PQresultStatus(r.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        throw pg_error(pg, r.get(), first_word(text));
}

std::unique_ptr<PgStore::Conn> pg_connect(const std::string& url, const std::string& described) {
    // Our defaults first: values in the URL (expanded from dbname) override them.
    const char* keys[] = {"connect_timeout", "application_name", "options", "dbname", nullptr};
    const char* values[] = {"10", "agency-mcp", "-c lock_timeout=10000", url.c_str(), nullptr};
    auto conn = std::make_unique<PgStore::Conn>();
    count_exchange();  // a connection opened: several exchanges, counted as one
    conn->pg = libpq().PQconnectdbParams(keys, values, 1);
    if (!conn->pg || libpq().PQstatus(conn->pg) != CONNECTION_OK) {
        const std::string why =
            conn->pg ? trimmed(libpq().PQerrorMessage(conn->pg)) : "out of memory";
        // The two a service meets first (docs/deploy.md): no home folder, so neither
        // ~/.postgresql/root.crt nor ~/.pgpass.
        std::string hint =
            "check that PostgreSQL runs there and that the URL's host, port, database, user and "
            "password are right";
        if (why.find("root certificate file") != std::string::npos)
            hint =
                "name the CA that signed the server's certificate in the URL, "
                "sslrootcert=/etc/agency-mcp/db-ca.crt: a service has no ~/.postgresql";
        else if (why.find("no password supplied") != std::string::npos)
            hint =
                "give the password in a password file named by PGPASSFILE (a systemd "
                "credential under the units: docs/deploy.md), not in the URL";
        throw StoreError(
            "cannot connect to the state database " + described + ": " + why + " (" + hint + ")",
            StoreError::Kind::busy, StoreError::Backend::postgres);
    }
    // CREATE ... IF NOT EXISTS and the like send notices; libpq would print them on stderr.
    libpq().PQsetNoticeProcessor(conn->pg, ignore_notice, nullptr);
    return conn;
}

// --- the URL ---------------------------------------------------------------------------------

bool PgStore::is_url(std::string_view where) {
    return where.starts_with("postgres://") || where.starts_with("postgresql://");
}

std::string PgStore::redact(std::string_view url) {
    std::string out(url);
    const auto scheme = out.find("://");
    if (scheme != std::string::npos) {
        const auto start = scheme + 3;
        auto end = out.find_first_of("/?", start);
        if (end == std::string::npos) end = out.size();
        const auto at = out.rfind('@', end);
        if (at != std::string::npos && at >= start) {
            const auto colon = out.find(':', start);
            if (colon < at) out.erase(colon, at - colon);
        }
    }
    // password=... among the query parameters
    for (auto p = out.find("password="); p != std::string::npos; p = out.find("password=", p)) {
        if (p > 0 && out[p - 1] != '?' && out[p - 1] != '&') {
            ++p;
            continue;
        }
        auto end = out.find('&', p);
        out.erase(p, end == std::string::npos ? std::string::npos : end + 1 - p);
    }
    while (!out.empty() && (out.back() == '&' || out.back() == '?')) out.pop_back();
    return out;
}

// --- the pool --------------------------------------------------------------------------------

namespace {

// An idle connection has nothing to read unless the server closed it (a restart, a failover,
// pg_terminate_backend: a FATAL message, then the end of the stream). Reading that makes libpq
// see the connection as broken, so that it is reopened before this call's statement rather than
// failing it: after PostgreSQL comes back, no call fails on a connection that died while idle.
void notice_closed(PGconn* pg) {
    const int fd = libpq().PQsocket(pg);
    for (int round = 0; fd >= 0 && round < 4; ++round) {
        pollfd waiting{.fd = fd, .events = POLLIN, .revents = 0};
        if (::poll(&waiting, 1, 0) <= 0) return;  // nothing: as healthy as it was
        if (libpq().PQconsumeInput(pg) == 0 || libpq().PQstatus(pg) != CONNECTION_OK) return;
    }
}

}  // namespace

PgStore::Lease PgStore::acquire() {
    std::unique_ptr<Conn> conn;
    {
        std::unique_lock lock(pool_mutex_);
        pool_free_.wait(lock, [&] { return !idle_.empty() || open_ < options_.pool_size; });
        if (!idle_.empty()) {
            conn = std::move(idle_.back());
            idle_.pop_back();
        } else {
            ++open_;
        }
    }
    try {
        if (!conn) {
            conn = pg_connect(url_, described_);
        } else if (notice_closed(conn->pg); libpq().PQstatus(conn->pg) != CONNECTION_OK) {
            count_exchange();
            libpq().PQreset(conn->pg);  // a broken connection is reopened on its next use
            conn->prepared = false;
            if (libpq().PQstatus(conn->pg) != CONNECTION_OK)
                throw StoreError("cannot reconnect to the state database " + described_ + ": " +
                                     trimmed(libpq().PQerrorMessage(conn->pg)) +
                                     " (check that PostgreSQL runs there; retry)",
                                 StoreError::Kind::busy, StoreError::Backend::postgres);
        }
        if (!conn->prepared) {
            for (const auto& s : pg_statements()) {
                count_exchange();
                PgResult r(libpq().PQprepare(conn->pg, s.name, s.sql, 0, nullptr));
                if (libpq().PQresultStatus(r.get()) != PGRES_COMMAND_OK)
                    throw pg_error(conn->pg, r.get(), std::string("preparing ") + s.name);
            }
            conn->prepared = true;
        }
    } catch (...) {
        std::lock_guard lock(pool_mutex_);
        --open_;
        pool_free_.notify_one();
        throw;
    }
    return Lease(this, std::move(conn));
}

void PgStore::release(std::unique_ptr<Conn> conn) {
    const auto tx = libpq().PQtransactionStatus(conn->pg);
    if (tx == PQTRANS_INTRANS || tx == PQTRANS_INERROR) {
        count_exchange();
        libpq().PQclear(libpq().PQexec(conn->pg, "ROLLBACK"));
    }
    std::lock_guard lock(pool_mutex_);
    if (libpq().PQtransactionStatus(conn->pg) == PQTRANS_ACTIVE)
        --open_;  // mid-query (cannot happen between calls): dropped, not reused
    else
        idle_.push_back(std::move(conn));
    pool_free_.notify_one();
}

// --- opening and the schema ------------------------------------------------------------------

PgStore::PgStore(const std::string& url, Options options)
    : url_(url), described_(redact(url)), options_(options) {
    if (options_.pool_size < 1) options_.pool_size = 1;
    auto conn = pg_connect(url_, described_);
    try {
        apply_migrations(*conn, options_.migrate);
    } catch (const StoreError& e) {
        throw StoreError("cannot use the state database " + described_ + ": " + e.what(), e.kind(),
                         StoreError::Backend::postgres);
    }
    std::lock_guard lock(pool_mutex_);
    ++open_;
    idle_.push_back(std::move(conn));
}

PgStore::~PgStore() {
    stopping_ = true;
    if (listener_.joinable()) listener_.join();
}

namespace {
int read_version(PgStore::Conn& conn) {
    if (conn.sql("SELECT to_regclass('agency_schema') IS NULL").boolean(0, 0)) return 0;
    const auto r = conn.sql("SELECT coalesce(max(version), 0) FROM agency_schema");
    return static_cast<int>(r.integer(0, 0));
}
}  // namespace

int PgStore::schema_version() {
    auto conn = acquire();
    return read_version(*conn);
}

int PgStore::migrate(const std::string& url) {
    PgStore store(url, Options{.pool_size = 1, .migrate = true});
    return store.schema_version();
}

void PgStore::apply_migrations(Conn& conn, bool migrate) {
    conn.exec(kMigrationLock);  // instances starting together: one migrates, the rest wait
    try {
        const int version = read_version(conn);
        if (version > kSchemaVersion)
            throw StoreError("its schema is at version " + std::to_string(version) +
                                 ", newer than this agency-mcp understands (" +
                                 std::to_string(kSchemaVersion) +
                                 "): run a newer agency-mcp, or point --state-url elsewhere",
                             StoreError::Kind::other, StoreError::Backend::postgres);
        // A new database is created whatever `migrate` says: that upgrades nothing.
        if (version > 0 && version < kSchemaVersion && !migrate)
            throw StoreError("its schema is at version " + std::to_string(version) +
                                 ", older than this agency-mcp needs (" +
                                 std::to_string(kSchemaVersion) +
                                 "); this command does not upgrade it: run `agency-mcp state "
                                 "migrate` (or start `agency-mcp serve`), after a backup "
                                 "(pg_dump), or use the agency-mcp that wrote it",
                             StoreError::Kind::other, StoreError::Backend::postgres);
        if (version > 0 && version < kSchemaVersion)
            log::info("state database {}: schema {} → {} (migrating)", described_, version,
                      kSchemaVersion);
        for (const auto& step : pg_migrations()) {
            if (step.version <= version) continue;
            conn.exec("BEGIN");
            conn.exec(
                "CREATE TABLE IF NOT EXISTS agency_schema (one boolean PRIMARY KEY DEFAULT true "
                "CHECK (one), version integer NOT NULL)");
            conn.exec(step.sql);
            conn.sql(
                "INSERT INTO agency_schema (one, version) VALUES (true, $1::integer) ON "
                "CONFLICT (one) DO UPDATE SET version = excluded.version",
                {PgParam(step.version)});
            conn.exec("COMMIT");
        }
    } catch (...) {
        if (libpq().PQstatus(conn.pg) == CONNECTION_OK) {
            count_exchange();
            libpq().PQclear(libpq().PQexec(conn.pg, "ROLLBACK"));
            count_exchange();
            libpq().PQclear(libpq().PQexec(conn.pg, kMigrationUnlock));
        }
        throw;
    }
    conn.exec(kMigrationUnlock);
}

// --- LISTEN/NOTIFY ---------------------------------------------------------------------------

void PgStore::watch_task_cancellations(std::function<void(const std::string&)> on_cancel) {
    std::lock_guard lock(watch_mutex_);
    on_cancel_ = std::move(on_cancel);
    if (!listener_.joinable()) listener_ = std::thread([this] { listen_loop(); });
}

// Its own connection (not the pool's): LISTEN holds it for the store's life. Polls with a short
// timeout so that the destructor stops it promptly; reconnects when the connection drops.
void PgStore::listen_loop() {
    const auto pause = [this] {
        for (int i = 0; i < 5 && !stopping_; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
    };
    while (!stopping_) {
        std::unique_ptr<Conn> conn;
        try {
            conn = pg_connect(url_, described_);
            conn->exec("LISTEN agency_task_cancelled");
        } catch (const StoreError&) {
            pause();  // the renewal's list still reports every cancel meanwhile
            continue;
        }
        while (!stopping_ && libpq().PQstatus(conn->pg) == CONNECTION_OK) {
            pollfd fd{.fd = libpq().PQsocket(conn->pg), .events = POLLIN, .revents = 0};
            const int ready = ::poll(&fd, 1, 100);
            if (ready < 0 && errno != EINTR) break;
            if (ready > 0 && libpq().PQconsumeInput(conn->pg) == 0) break;
            while (PGnotify* n = libpq().PQnotifies(conn->pg)) {
                const std::string id = n->extra ? n->extra : "";
                libpq().PQfreemem(n);
                std::function<void(const std::string&)> callback;
                {
                    std::lock_guard lock(watch_mutex_);
                    callback = on_cancel_;
                }
                try {
                    if (callback && !id.empty()) callback(id);
                } catch (...) {  // a callback's failure must not end the watch
                }
            }
        }
        if (!stopping_) pause();
    }
}

}  // namespace agency::state
