// What keeps the action tools from spending credits carelessly: a per-client limiter on
// generation actions, and the audit worker pool whose jobs survive a restart in the Store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "base/periodic.hpp"
#include "base/trace_context.hpp"
#include "state/store.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

// The state layer's records, as the tools speak of them.
using state::args_digest;
using state::Confirmation;
using state::ConfirmOutcome;
using state::CreditSlot;
using state::Draft;
using state::IdempotencyRecord;
using state::Job;
using state::Store;
using state::StoreError;

struct CreditSettings {
    int max_in_flight_per_client = 2;    // generation actions running at once for one client
    int max_per_minute_per_client = 20;  // generation actions started per client per minute
};

// Refuses rather than queues: a caller (a model) retrying later is cheaper than a hidden
// backlog of credit-spending calls it no longer wants.
// With a shared store (several instances) the counts live in the store, so the limit holds
// across instances; otherwise in this process.
class CreditLimiter {
public:
    CreditLimiter(CreditSettings settings, std::shared_ptr<Store> shared_store = nullptr);

    // Holds one in-flight slot until destroyed.
    class Permit {
    public:
        // `client_id`: a count of this process; or the store's slot id.
        Permit(CreditLimiter* owner, std::string client_id, bool in_store = false)
            : owner_(owner), client_id_(std::move(client_id)), in_store_(in_store) {}
        Permit(Permit&& other) noexcept
            : owner_(std::exchange(other.owner_, nullptr)),
              client_id_(std::move(other.client_id_)),
              in_store_(other.in_store_) {}
        Permit(const Permit&) = delete;
        Permit& operator=(const Permit&) = delete;
        Permit& operator=(Permit&&) = delete;
        ~Permit();
        // The shared store's slot id, for the caller to release with its write-log row
        // (Store::append_write_log_settling); this permit no longer releases it. "" (and the
        // permit unchanged) when the count is this process's.
        std::string hand_over();

    private:
        CreditLimiter* owner_;
        std::string client_id_;
        bool in_store_;
    };

    struct Refusal {
        std::string message;
        int retry_after_s = 1;
    };

    // A permit, or why not (too many in flight, or the per-minute cap reached).
    std::variant<Permit, Refusal> try_acquire(const std::string& client_id);
    // An idempotency key to claim with the permit (Store::claim_idempotency's arguments).
    struct KeyClaim {
        std::string_view principal, tool, key, digest;
        std::chrono::seconds stale_after;
    };
    // try_acquire with `claim` claimed in `keys` in the same store step, when the counts live
    // in that store (one round trip on PostgreSQL rather than two): a permit (the key claimed),
    // a refusal (the key left free) or the key's record (nothing claimed, no permit). nullopt
    // when the counts are this process's: claim, then try_acquire.
    std::optional<std::variant<Permit, Refusal, IdempotencyRecord>> try_acquire_claiming(
        Store& keys, const std::string& client_id, const KeyClaim& claim);
    const CreditSettings& settings() const { return settings_; }

private:
    struct PerClient {
        int in_flight = 0;
        std::deque<std::chrono::steady_clock::time_point> started;  // within the last minute
    };
    void release(const std::string& client_id);
    std::variant<Permit, Refusal> try_acquire_shared(const std::string& client_id);
    std::variant<Permit, Refusal> from_slot(const std::string& client_id, const CreditSlot& slot);

    CreditSettings settings_;
    std::shared_ptr<Store> shared_store_;
    std::mutex mutex_;
    std::map<std::string, PerClient> clients_;
};

// Runs seo_audit jobs on a few background threads. Each job is a row in the Store: queued when
// submitted, running while its POST is out, then succeeded (the report's id, score and issue
// count) or failed (the gateway's error), or cancelled at any point before that.
// On start, jobs a previous process left unfinished are picked up: a queued job was never sent
// and simply runs. A running job's POST may have reached the gateway, so it is reconciled
// before anything is re-sent: the client's seo_reports are read newest first, and a report for
// the same url created at or after the job's creation (less kReconcileSkew for clock skew)
// finishes the job as succeeded with that report, exactly as the POST's answer would have.
// Only when none is found is the audit sent again; if the lookup itself fails it is sent again
// too (seo_audit is retry-safe, spec Action rule 2: a repeat refreshes the same report).
class AuditJobs {
public:
    // How much earlier than the job's creation a gateway report may be stamped and still be
    // taken as its result (the gateway's clock against ours).
    static constexpr std::chrono::seconds kReconcileSkew{60};
    // A succeeded audit whose report is dated more than this before the audit was asked says
    // so in its result (`note`): a new crawl is dated after its request, and a day leaves room
    // for clocks and queues, so an older date means the gateway likely answered with a report
    // it already had.
    static constexpr std::chrono::hours kOldReportAge{24};

    // Called after every change to a job (running, succeeded, failed, cancelled, and a
    // cancelled job's late result), with the job as stored. From a worker thread, except for
    // cancel(), which calls it on the cancelling thread. Must not block for long.
    using Listener = std::function<void(const Job&)>;

    // Who runs a job when several instances share the store (Store::shared()): the instance
    // that claimed it, for `lease` at a time, renewed every lease / 3 while it lives. A job
    // whose lease ran out (its instance died) is taken over by another instance, reconciled
    // like a restart's. On a store of one instance, a start takes over every unfinished job.
    struct Sharing {
        std::string instance_id;  // unique per process
        std::chrono::milliseconds lease{15'000};
        // What the lease keeper waits on between its rounds (the process's when null): a test
        // steps it. Leases are stamped by the store's clock.
        const base::Clock* clock = nullptr;
    };

    AuditJobs(std::shared_ptr<Store> store, int workers, Sharing sharing);
    ~AuditJobs();  // stops and joins; unfinished jobs stay in the store for the next start
    AuditJobs(const AuditJobs&) = delete;
    AuditJobs& operator=(const AuditJobs&) = delete;

    // Picks up unfinished jobs; the workers start with the first job. Later calls do nothing.
    void start(std::shared_ptr<Toolbox> box);
    void stop();

    Job submit(const std::string& client_id, const std::string& principal, const std::string& url);

    // The job as stored (any principal: callers check Job::principal themselves).
    std::optional<Job> find(const std::string& id);

    // A queued job becomes cancelled and is never POSTed. A running job is marked cancelled
    // too, but its POST is already out: the audit may still run at the gateway, and its result
    // is recorded while the status stays cancelled. False when the job is unknown or already
    // finished.
    bool cancel(const std::string& id);

    // Sets (or, with an empty function, clears) the one change listener. A listener is called
    // after each change with the job as the store holds it at that moment (never an older
    // state): a change that follows quickly may be seen in the place of the one before.
    void on_change(Listener listener);
    // Adds a listener called after the one above, for as long as the jobs live (e.g. resource
    // update notifications).
    void add_change_listener(Listener listener);

private:
    struct Pending {
        std::string id;
        bool force = false;  // a restart of the only instance: take it whatever its lease
        // The submitting call's trace (its log lines and the POST carry it); null for a job
        // picked up after a restart or from another instance, which gets a trace of its own.
        std::shared_ptr<const base::CallTrace> trace;
    };
    void start_workers();  // with mutex_ held
    // Shared store, every lease / 3: renews this instance's leases and queues the jobs of dead
    // instances.
    void keep_leases();
    void take_orphans();
    void work(std::stop_token stop);
    void run_one(const Pending& pending, std::stop_token stop);
    // The gateway's report that a job's earlier POST produced, if there is one.
    std::optional<nlohmann::json> find_report(const Job& job, std::stop_token stop);
    // Adds to a succeeded job's result the report's date (report_date, report_date_field) and,
    // when that is older than the audit by kOldReportAge, a note saying so. `report` is what
    // the gateway answered; without a date in it, the report row is read (one GET by id).
    void date_report(const Job& job, const nlohmann::json& report, nlohmann::json& result,
                     std::stop_token stop);
    void changed(const std::string& id);

    std::shared_ptr<Store> store_;
    int worker_count_;
    Sharing sharing_;
    base::Periodic keeper_;
    std::shared_ptr<Toolbox> box_;
    std::mutex mutex_;
    std::condition_variable_any ready_;
    std::deque<Pending> queue_;
    std::vector<std::jthread> workers_;
    bool started_ = false;
    std::mutex listener_mutex_;
    std::shared_ptr<const Listener> listener_;
    std::shared_ptr<const std::vector<Listener>> more_listeners_;  // replaced, never changed
};

}  // namespace agency::tools
