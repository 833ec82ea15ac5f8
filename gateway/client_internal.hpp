// Client::Impl and the pieces it is made of, shared by the client's source files
// (client_discovery.cpp: construction, discovery and the public calls; client_transport.cpp:
// connections and one exchange; client_reads.cpp: reads and fetching discovery;
// client_actions.cpp: POSTs; client_checks.cpp: the check after an ambiguous failure). Private
// to gateway/.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include "base/log.hpp"

#include "base/clock.hpp"
#include "base/periodic.hpp"
#include "gateway/actions.hpp"
#include "gateway/client.hpp"
#include "gateway/client_detail.hpp"
#include "gateway/plain_client.hpp"
#include "gateway/retry.hpp"

namespace agency::gateway::internal {

using SteadyTime = std::chrono::steady_clock::time_point;
using std::chrono::milliseconds;

inline constexpr int kPageLimit = 1000;    // the gateway's maximum
inline constexpr int kMaxScanPages = 1000;  // pages one for_each_row reads at most
inline constexpr int kVerifyLimit = 20;    // newest rows read to find a created record
inline constexpr std::size_t kMaxClaimed = 512;

// Set on the thread of Client::serve_while_away's reconnecter: its requests pass the gate that
// fails every other request while the gateway is away, and log nothing (the reconnecter logs
// one line per new reason instead of each attempt's).
inline thread_local bool t_reconnecting = false;

// The outcome of one HTTP exchange; the body lands in the caller's buffer.
struct Exchange {
    int status = 0;  // 0: no HTTP answer
    httplib::Error error = httplib::Error::Success;
    bool maybe_sent = false;  // no answer, but the gateway may have received the request
    bool timed_out = false;
    std::string retry_after;
    milliseconds elapsed{0};
    milliseconds timeout{0};  // the read timeout it had: the nominal one cut to the deadline
    // Set when a limit on the answer's size ended the exchange: what was refused and the
    // limit, as messages say it. Nothing more was read and the connection was closed.
    std::string over_limit;
    // The call's deadline ended the exchange with the answer still coming (timed_out is set).
    bool deadline_hit = false;
    // OpenSSL's verify result when the server's certificate was refused (X509_V_OK: the chain
    // was trusted, so httplib's host name check refused it).
    long verify_result = 0;

    bool ok() const { return status >= 200 && status < 300; }
};

// What one exchange's handlers see and count: the body's bytes (after decoding) against the
// response limit, the head's headers, and the call's deadline (client_transport.cpp).
struct Receiving {
    std::string& out;
    PlainClient* plain;   // null for TLS: no stream of ours underneath
    AnswerMeter& meter;   // what was read underneath (PlainClient's, or the TLS records')
    const std::stop_token& stop;
    std::size_t cap;
    std::chrono::steady_clock::time_point deadline;
    bool sinking = false;  // the body goes straight into `out` (PlainClient)
    std::uint64_t received = 0;
    int status = 0;
    std::string over_limit;
    bool deadline_hit = false;
    // Body bytes being received by every exchange of the client at once, and their bound
    // (Config::max_answers_bytes): this exchange's share is given back when it ends.
    std::atomic<std::uint64_t>* all_receiving = nullptr;
    std::uint64_t all_cap = 0;

    ~Receiving() {
        if (all_receiving != nullptr) all_receiving->fetch_sub(received);
    }
    bool on_head(const httplib::Response& res);
    bool on_body(const char* data, std::size_t size);
    // After a failed send: which limit ended it, into `ex`.
    void finish(Exchange& ex) const;
};

ErrorReason reason_for_status(int status);
// "16 MiB", "1.5 GiB", "300 KiB", "512 bytes": a size as messages show it.
std::string bytes_text(std::uint64_t bytes);
// Headers one answer may carry, and the bytes of its head (status line and headers). httplib
// 0.11 bounds neither the count nor, while reading, a line's length.
inline constexpr std::size_t kMaxHeaderCount = 256;
inline constexpr std::size_t kMaxHeadBytes = 64 * 1024;

std::string describe_network_failure(const Exchange& ex, std::chrono::milliseconds timeout,
                                     milliseconds connect_timeout);
// The gateway's `error` string when the body is the spec's error object, else "".
std::string gateway_error_text(const std::string& body);
// A short printable excerpt of a body that is not the error object, for messages.
std::string body_excerpt(const std::string& body);
// Precise reason a TCP connect fails, for check()'s one-line message (httplib only reports
// "connection error").
std::string diagnose_connect(const std::string& host, int port, std::chrono::milliseconds timeout);
// Discovery's lists are bounded (a hostile gateway listed 100,000 resources): the first of
// each are kept, in the gateway's order; `left_out` then names each limit reached.
inline constexpr std::size_t kMaxDiscoveredResources = 200;
inline constexpr std::size_t kMaxDiscoveredActions = 200;
inline constexpr std::size_t kMaxRequiredFields = 64;
inline constexpr std::size_t kMaxDiscoveredName = 64;          // bytes; longer names are left out
inline constexpr std::size_t kMaxActionDescription = 2'000;  // bytes; longer ones are cut
std::optional<Discovery> parse_discovery(const std::string& body, std::string& problem,
                                         std::string* left_out = nullptr);

// Keep-alive connections to the gateway. httplib clients are not safe for concurrent
// requests, so each request leases one exclusively and gives it back. `kind` names the
// connections in errors ("reads", "actions").
class ConnectionPool {
public:
    ConnectionPool(detail::BaseUrl url, milliseconds connect_timeout, const base::Clock& clock,
                   const char* kind, std::size_t max_open)
        : url_(std::move(url)),
          connect_timeout_(connect_timeout),
          clock_(clock),
          kind_(kind),
          max_open_(std::max<std::size_t>(1, max_open)) {}

    class Lease {
    public:
        Lease(ConnectionPool* pool, std::unique_ptr<httplib::ClientImpl> client)
            : pool_(pool), client_(std::move(client)) {}
        Lease(Lease&&) = default;
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        Lease& operator=(Lease&&) = delete;
        ~Lease() {
            if (client_) pool_->release(std::move(client_));
        }
        httplib::ClientImpl& client() { return *client_; }

    private:
        ConnectionPool* pool_;
        std::unique_ptr<httplib::ClientImpl> client_;
    };

    Lease acquire(const std::stop_token& stop);

private:
    struct Idle {
        std::unique_ptr<httplib::ClientImpl> client;
        SteadyTime since;
    };

    std::unique_ptr<httplib::ClientImpl> create() const;
    void release(std::unique_ptr<httplib::ClientImpl> client);
    void close_stale(SteadyTime now);

    detail::BaseUrl url_;
    milliseconds connect_timeout_;
    const base::Clock& clock_;
    const char* kind_;
    std::size_t max_open_;
    std::mutex mu_;
    std::condition_variable_any cv_;
    std::vector<Idle> idle_;  // most recently returned last
    std::size_t open_ = 0;    // leased + idle
};

// One act() call: the request, what the client may do after an ambiguous failure, and what
// the attempts so far did.
struct ActionRun {
    std::string action;
    std::string client_id;
    std::string what;  // "action <name> for <client>", as messages name it
    nlohmann::json body;
    std::string body_text;
    const ActionSpec* spec = nullptr;
    ResendRule rule = ResendRule::unknown;
    std::string unverifiable;  // why the effect cannot be checked this time
    nlohmann::json before;     // verify_state: the row before the first POST
    std::string hint;          // how a person checks whether it ran
    int posts = 0;             // POSTs that may have reached the gateway
    std::optional<std::chrono::system_clock::time_point> first_sent;
    std::string answer;
};

// One failed POST, as messages and Error::data describe it.
struct ActionFailure {
    const Exchange& ex;
    std::string failure;
    std::string gw_text;
};

}  // namespace agency::gateway::internal

namespace agency::gateway {

struct Client::Impl {
    using Exchange = internal::Exchange;

    Config config;
    detail::BaseUrl url;
    const base::Clock& clock;
    httplib::Headers headers;  // carries the key: never logged
    // Reads and actions lease from pools of their own: an action may wait on the gateway for
    // tens of seconds (a generation), and a burst of them must not hold every connection a read
    // needs. GETs (reads, discovery, the checks around an action) use `reads`; POSTs `actions`.
    internal::ConnectionPool reads;
    internal::ConnectionPool actions;
    // Body bytes all exchanges are receiving at once (Config::max_answers_bytes).
    std::atomic<std::uint64_t> answers_receiving{0};

    std::mutex discovery_mu;
    std::shared_ptr<const Discovery> discovery;
    internal::SteadyTime discovery_at;
    // The last discovery fetch's error, "" once one succeeds (readiness: discovery_health).
    std::string discovery_failure;
    // What discovery's limits left out ("" when nothing), warned once per text when warnings
    // are logged: start-up's check runs with the log silenced, so the warning waits for the
    // next discovery() (client_reads.cpp).
    std::string discovery_left_out;
    std::atomic<bool> discovery_left_out_pending{false};
    void tell_discovery_left_out();

    std::mutex claimed_mu;
    std::deque<std::string> claimed_order;
    std::unordered_set<std::string> claimed;

    // The key's missing write scope, learned from a POST's 403 (client_actions.cpp).
    std::atomic<bool> write_denied{false};
    std::mutex write_denied_mu;
    std::function<void()> on_write_denied;

    // Started while the gateway could not be reached (Client::serve_while_away): every request
    // fails at once with `away_reason` until the reconnecter's check answers.
    std::atomic<bool> away{false};
    std::string away_reason;  // under discovery_mu
    void fail_if_away();

    std::mutex refresher_mu;
    std::jthread reconnecter;  // stopped and joined before the rest goes away
    base::Periodic refresher;  // last member: stopped and joined before the rest goes away

    Impl(Config c, detail::BaseUrl u, const base::Clock& clock);

    // Marks the key read-only and tells the listener, once (client_actions.cpp).
    void learn_write_denied();

    // --- messages (client_transport.cpp) ----------------------------------------------------
    // Every message, log line and gateway text passes through here: a gateway may echo the key.
    std::string safe(std::string text) const;
    template <typename... Args>
    void log_line(log::Level level, fmt::format_string<Args...> format, Args&&... args) const {
        if (internal::t_reconnecting) return;
        log::write(level, safe(log::format(format, std::forward<Args>(args)...)));
    }
    Error error(ErrorReason reason, std::string message, int http_status = 0,
                std::string gateway_error = {}, std::optional<int> status_code = std::nullopt,
                nlohmann::json data = nullptr) const;
    Error cancelled(std::string_view what) const;
    std::string failure_text(const Exchange& ex, const std::string& body,
                             std::chrono::milliseconds timeout) const;

    // --- transport (client_transport.cpp) ---------------------------------------------------
    // One HTTP exchange on a leased connection. The stop token aborts it mid-flight.
    Exchange perform(const char* method, const std::string& target, const std::string* body,
                     std::string& out, std::chrono::milliseconds timeout, const std::stop_token& stop);
    // The schedule every request follows, with `max_attempts` attempts at most.
    RetrySchedule schedule(int max_attempts) const;
    // The error ending a run_with_retries whose next attempt would cross the call's deadline.
    Error out_of_time(const std::string& what, const Retry& retry, const RetryEnd& end) const;
    // run_with_retries with this client's log, cancellation, deadline and progress notes.
    void with_retries(int max_attempts, const std::string& what, const std::stop_token& stop,
                      const std::function<std::optional<Retry>(int, bool)>& attempt);

    // --- reads and discovery (client_reads.cpp) ---------------------------------------------
    std::string read_target(const ReadQuery& q) const;
    static std::string describe_read(const ReadQuery& q);
    // A GET with the read rules: 5xx, network errors and timeouts retried with backoff, 429
    // after Retry-After, any other answer final. Returns the 2xx exchange; the body is in `out`.
    Exchange get(const std::string& target, const std::string& what, std::string& out,
                 const std::stop_token& stop, int max_attempts);
    Error bad_page(const std::string& body, const std::string& what, int http_status,
                   WalkProblem problem) const;
    WalkResult walk(Page& page, const WalkOptions& options, const RowVisitor& on_row) const;
    Page read(const ReadQuery& query, const std::stop_token& stop, bool scan = true);
    Pagination for_each_row(ReadQuery query, const std::function<bool(std::string_view)>& on_row,
                            const std::stop_token& stop);
    std::shared_ptr<const Discovery> fetch_discovery(const std::stop_token& stop, int attempts);
    // Stores a fresh discovery; true when it differs from one cached before.
    bool store_discovery(std::shared_ptr<const Discovery> fresh);
    // The cached discovery while it is younger than discovery_ttl, else null.
    std::shared_ptr<const Discovery> cached_discovery();

    // --- actions (client_actions.cpp) -------------------------------------------------------
    ActionResult act(std::string_view action, std::string_view client_id,
                     const nlohmann::json& fields, const std::stop_token& stop,
                     const std::stop_token& cut_exchange);
    internal::ActionRun plan_action(std::string_view action, std::string_view client_id,
                                    const nlohmann::json& fields, const std::stop_token& stop);
    // One POST of `run`: nullopt with `result` set when done; a Retry when it may be sent again.
    std::optional<Retry> post_once(internal::ActionRun& run, int attempt, bool last,
                                   std::optional<ActionResult>& result,
                                   const std::stop_token& stop);
    ActionResult success(const internal::ActionRun& run, const Exchange& ex);
    Error too_large_answer(const internal::ActionRun& run, const Exchange& ex) const;
    nlohmann::json known(const internal::ActionRun& run, const Exchange& ex,
                         const std::string& failure, std::string verification) const;
    Error outcome_unknown(const std::string& what, const std::string& failure, int http_status,
                          const std::string& gw_text, nlohmann::json data,
                          const std::string& why, const std::string& hint = {}) const;

    // --- the check after an ambiguous failure (client_checks.cpp) ---------------------------
    // After a 5xx, a timeout or a dropped connection of an action that is not retry-safe:
    // nullopt with `result` set when the check found the record; a Retry when it proved the
    // action did not run; otherwise throws (outcome_unknown, cancelled, or the final error).
    std::optional<Retry> check_after_failure(internal::ActionRun& run,
                                             const internal::ActionFailure& failed, int attempt,
                                             bool last,
                                             std::optional<ActionResult>& result,
                                             const std::stop_token& stop);
    LostAction find_lost_action(std::string_view action, std::string_view client_id,
                                const nlohmann::json& fields,
                                std::chrono::system_clock::time_point since,
                                const std::stop_token& stop);
    detail::Verdict verify(const ActionSpec& spec, const nlohmann::json& body,
                           std::string_view client_id,
                           std::chrono::system_clock::time_point first_sent,
                           const std::stop_token& stop);
    nlohmann::json read_target_row(const ActionSpec& spec, const nlohmann::json& body,
                                   std::string_view client_id, const std::stop_token& stop);
    // A check's read, parsed; throws Error{upstream} when it has no `data` array.
    nlohmann::json read_checked_page(const ReadQuery& q, const std::string& what,
                                     const std::stop_token& stop);
    void claim(const ActionSpec* spec, const nlohmann::json& row);
    bool is_claimed(const ActionSpec& spec, const nlohmann::json& row);
};

}  // namespace agency::gateway
