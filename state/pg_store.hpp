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
#include "state/store_overrides.inc"

    // What PostgreSQL does in one statement where the SQLite store composes the steps (the
    // Store's defaults): one call of agency_claim_key_and_credit, and a write log entry
    // written with the settlement of its key, budget and credit (a data-modifying WITH).
    KeyAndSlot claim_idempotency_with_credit(std::string_view principal, std::string_view tool,
                                             std::string_view key, std::string_view digest,
                                             std::chrono::seconds stale_after,
                                             const CreditRequest& credit) override;
    WriteLogEntry append_write_log_settling(WriteLogEntry entry, const Settlement& settle) override;
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
