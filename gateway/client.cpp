#include "gateway/client.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_set>

#include <httplib.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "gateway/actions.hpp"
#include "gateway/client_detail.hpp"
#include "gateway/json_parse.hpp"
#include "gateway/plain_client.hpp"

namespace agency::gateway {

std::string_view to_string(ErrorReason reason) {
    switch (reason) {
        case ErrorReason::validation: return "validation";
        case ErrorReason::auth: return "auth";
        case ErrorReason::scope: return "scope";
        case ErrorReason::not_found: return "not_found";
        case ErrorReason::method: return "method";
        case ErrorReason::rate_limited: return "rate_limited";
        case ErrorReason::upstream: return "upstream";
        case ErrorReason::unavailable: return "unavailable";
        case ErrorReason::outcome_unknown: return "outcome_unknown";
        case ErrorReason::cancelled: return "cancelled";
        case ErrorReason::config: return "config";
    }
    return "unknown";
}

bool Discovery::has_resource(std::string_view name) const {
    return std::find(resources.begin(), resources.end(), name) != resources.end();
}

const DiscoveredAction* Discovery::find_action(std::string_view name) const {
    for (const auto& action : actions) {
        if (action.action == name) return &action;
    }
    return nullptr;
}

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// In use at once; more callers wait. Every connection returned is kept, so the next burst
// does not reconnect; an idle one may pin a worker of a thread-per-connection gateway, so one
// idle longer than kMaxIdleTime is closed at the next acquire or release.
constexpr std::size_t kMaxConnections = 16;
constexpr auto kMaxIdleTime = milliseconds(1500);  // under common keep-alive limits (2-5 s)
constexpr int kPageLimit = 1000;                   // the gateway's maximum
constexpr int kVerifyLimit = 20;                   // newest rows read to find a created record
constexpr std::size_t kMaxReserve = 64u << 20;     // trust Content-Length only this far
constexpr std::size_t kMaxClaimed = 512;
constexpr auto kMaxBackoff = milliseconds(30'000);

std::string ms_text(milliseconds d) {
    return std::to_string(d.count()) + " ms";
}

// Waits `delay` unless `stop` fires first; false when it fired.
bool sleep_for(milliseconds delay, const std::stop_token& stop) {
    if (delay.count() > 0) {
        std::mutex mu;
        std::condition_variable_any cv;
        std::unique_lock lock(mu);
        cv.wait_for(lock, stop, delay, [] { return false; });
    }
    return !stop.stop_requested();
}

// base * 2^retry, then a uniform jitter of +-50% so clients that failed together spread out.
milliseconds backoff_delay(milliseconds base, int retry) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    long long raw = base.count();
    for (int i = 0; i < retry && raw < kMaxBackoff.count(); ++i) raw *= 2;
    raw = std::min<long long>(raw, kMaxBackoff.count());
    if (raw <= 1) return milliseconds(raw);
    std::uniform_int_distribution<long long> jitter(raw / 2, raw + raw / 2);
    return milliseconds(jitter(rng));
}

// Retry-After in seconds; the HTTP-date form is not used by the gateway.
std::optional<milliseconds> retry_after_delay(const std::string& header, milliseconds cap) {
    long long seconds = 0;
    const auto* first = header.data();
    const auto* last = header.data() + header.size();
    const auto [ptr, ec] = std::from_chars(first, last, seconds);
    if (header.empty() || ec != std::errc{} || ptr != last || seconds < 0) return std::nullopt;
    if (seconds > cap.count() / 1000) return cap;
    return std::min(milliseconds(seconds * 1000), cap);
}

ErrorReason reason_for_status(int status) {
    switch (status) {
        case 400: return ErrorReason::validation;
        case 401: return ErrorReason::auth;
        case 403: return ErrorReason::scope;
        case 404: return ErrorReason::not_found;
        case 405: return ErrorReason::method;
        case 429: return ErrorReason::rate_limited;
        default: break;
    }
    if (status >= 400 && status < 500) return ErrorReason::validation;
    return ErrorReason::upstream;
}

// The outcome of one HTTP exchange; the body lands in the caller's buffer.
struct Exchange {
    int status = 0;  // 0: no HTTP answer
    httplib::Error error = httplib::Error::Success;
    bool maybe_sent = false;  // no answer, but the gateway may have received the request
    bool timed_out = false;
    std::string retry_after;
    milliseconds elapsed{0};
};

// Failures that happen before a complete request can have reached the gateway.
bool request_may_have_arrived(httplib::Error error) {
    switch (error) {
        case httplib::Error::Connection:
        case httplib::Error::ConnectionTimeout:
        case httplib::Error::BindIPAddress:
        case httplib::Error::SSLConnection:
        case httplib::Error::SSLLoadingCerts:
        case httplib::Error::SSLServerVerification:
        case httplib::Error::Write:  // the request was never fully written
            return false;
        default: return true;
    }
}

std::string describe_network_failure(const Exchange& ex, milliseconds timeout,
                                     milliseconds connect_timeout) {
    if (ex.timed_out) return "no answer within " + ms_text(timeout);
    switch (ex.error) {
        case httplib::Error::Connection: return "could not connect";
        case httplib::Error::ConnectionTimeout:
            return "connecting timed out after " + ms_text(connect_timeout);
        case httplib::Error::Read: return "the connection dropped before the answer was complete";
        case httplib::Error::Write: return "the request could not be sent";
        case httplib::Error::SSLConnection: return "the TLS handshake failed";
        case httplib::Error::SSLLoadingCerts: return "the TLS CA certificates could not be loaded";
        case httplib::Error::SSLServerVerification:
            return "the server's TLS certificate could not be verified";
        case httplib::Error::Canceled: return "the transfer was cancelled";
        default: return "network error (" + httplib::to_string(ex.error) + ")";
    }
}

// The gateway's `error` string when the body is the spec's error object, else "".
std::string gateway_error_text(const std::string& body) {
    const auto json = nlohmann::json::parse(body, nullptr, false);
    if (json.is_object()) {
        const auto it = json.find("error");
        if (it != json.end() && it->is_string()) return it->get<std::string>();
    }
    return {};
}

// A short printable excerpt of a body that is not the error object, for messages.
std::string body_excerpt(const std::string& body) {
    std::string out;
    for (const char c : body.substr(0, 160)) {
        out.push_back(std::isprint(static_cast<unsigned char>(c)) != 0 ? c : ' ');
    }
    if (body.size() > 160) out += "...";
    return out;
}

// Precise reason a TCP connect fails, for check()'s one-line message (httplib only reports
// "connection error").
std::string diagnose_connect(const std::string& host, int port, milliseconds timeout) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const auto port_text = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
        return "the host name '" + host + "' could not be resolved (" + ::gai_strerror(rc) + ")";
    }
    std::string reason = "could not connect";
    for (auto* ai = found; ai != nullptr; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) continue;
        int err = 0;
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            err = errno;
            if (err == EINPROGRESS) {
                pollfd pfd{fd, POLLOUT, 0};
                const int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
                socklen_t len = sizeof(err);
                if (ready <= 0) {
                    err = ETIMEDOUT;
                } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
                    err = errno;
                }
            }
        }
        ::close(fd);
        if (err == 0) {
            reason = "a TCP connection works, but the HTTP request failed";
            break;
        }
        switch (err) {
            case ECONNREFUSED: reason = "connection refused"; break;
            case ETIMEDOUT: reason = "connection timed out after " + ms_text(timeout); break;
            case ENETUNREACH:
            case EHOSTUNREACH: reason = "host unreachable"; break;
            default: reason = std::strerror(err); break;
        }
    }
    ::freeaddrinfo(found);
    return reason;
}

// Keep-alive connections to the gateway. httplib clients are not safe for concurrent
// requests, so each request leases one exclusively and gives it back.
class ConnectionPool {
public:
    ConnectionPool(detail::BaseUrl url, milliseconds connect_timeout)
        : url_(std::move(url)), connect_timeout_(connect_timeout) {}

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

    Lease acquire(const std::stop_token& stop) {
        std::unique_lock lock(mu_);
        if (!cv_.wait(lock, stop, [&] { return !idle_.empty() || open_ < kMaxConnections; })) {
            throw Error(ErrorReason::cancelled, "cancelled while waiting for a connection");
        }
        if (!idle_.empty()) {  // the most recently used one: the least likely to be closed
            close_stale(Clock::now());  // this one too, when it has been idle that long
            auto entry = std::move(idle_.back());
            idle_.pop_back();
            lock.unlock();
            return Lease(this, std::move(entry.client));
        }
        ++open_;
        lock.unlock();
        try {
            return Lease(this, create());
        } catch (...) {
            {
                std::lock_guard relock(mu_);
                --open_;
            }
            cv_.notify_one();
            throw;
        }
    }

private:
    struct Idle {
        std::unique_ptr<httplib::ClientImpl> client;
        Clock::time_point since;
    };

    std::unique_ptr<httplib::ClientImpl> create() const {
        std::unique_ptr<httplib::ClientImpl> client;
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
        if (url_.https) client = std::make_unique<httplib::SSLClient>(url_.host, url_.port);
#endif
        if (!client) client = std::make_unique<PlainClient>(url_.host, url_.port);
        client->set_keep_alive(true);
        client->set_tcp_nodelay(true);  // SSLClient writes a request's head and body separately
        client->set_url_encode(false);  // targets are encoded here
        client->set_follow_location(false);
        client->set_connection_timeout(connect_timeout_);
        return client;
    }

    // A client whose socket was closed is kept too: it reconnects on its next request, and
    // keeping it saves rebuilding the TLS context.
    void release(std::unique_ptr<httplib::ClientImpl> client) {
        {
            std::lock_guard lock(mu_);
            close_stale(Clock::now());
            idle_.push_back({std::move(client), Clock::now()});
        }
        cv_.notify_one();
    }

    // Closes the sockets of connections idle too long (the oldest are first); their clients are
    // kept and reconnect when next used. A server may close a connection idle that long just as
    // we send on it, and a POST lost that way would look ambiguous, so such a connection is
    // never reused; closing it also frees the gateway worker it may pin. Called with mu_ held.
    void close_stale(Clock::time_point now) {
        for (auto& entry : idle_) {
            if (now - entry.since <= kMaxIdleTime) break;
            if (entry.client->is_socket_open()) entry.client->stop();
        }
    }

    detail::BaseUrl url_;
    milliseconds connect_timeout_;
    std::mutex mu_;
    std::condition_variable_any cv_;
    std::vector<Idle> idle_;  // most recently returned last
    std::size_t open_ = 0;    // leased + idle
};

std::optional<Discovery> parse_discovery(const std::string& body, std::string& problem) {
    const auto json = parse_json(body);
    if (json.is_discarded()) {
        problem = "the answer is not JSON";
        return std::nullopt;
    }
    if (!json.is_object() || !json.contains("resources") || !json["resources"].is_array() ||
        !json.contains("actions") || !json["actions"].is_array()) {
        problem = "the answer is JSON but has no `resources` and `actions` arrays";
        return std::nullopt;
    }
    Discovery out;
    for (const auto& resource : json["resources"]) {
        if (resource.is_string()) out.resources.push_back(resource.get<std::string>());
    }
    for (const auto& entry : json["actions"]) {
        if (!entry.is_object() || !entry.contains("action") || !entry["action"].is_string()) {
            continue;
        }
        DiscoveredAction action;
        action.action = entry["action"].get<std::string>();
        if (entry.contains("description") && entry["description"].is_string()) {
            action.description = entry["description"].get<std::string>();
        }
        if (entry.contains("required_fields") && entry["required_fields"].is_array()) {
            for (const auto& field : entry["required_fields"]) {
                if (field.is_string()) action.required_fields.push_back(field.get<std::string>());
            }
        }
        out.actions.push_back(std::move(action));
    }
    return out;
}

// Records the client itself created or recovered are never matched again, so two identical
// actions in quick succession cannot both claim the first one's record.
bool claims_records(const ActionSpec& spec) {
    return spec.policy != RetryPolicy::unknown && !spec.resource.empty() &&
           spec.filter_body_field.empty() && !spec.time_field.empty() &&
           spec.time_field == spec.order;
}

}  // namespace

struct Client::Impl {
    Config config;
    detail::BaseUrl url;
    httplib::Headers headers;  // carries the key: never logged
    ConnectionPool pool;

    std::mutex discovery_mu;
    std::shared_ptr<const Discovery> discovery;
    Clock::time_point discovery_at;

    std::mutex claimed_mu;
    std::deque<std::string> claimed_order;
    std::unordered_set<std::string> claimed;

    std::mutex refresher_mu;
    std::jthread refresher;  // last member: stopped and joined before the rest goes away

    Impl(Config c, detail::BaseUrl u)
        : config(std::move(c)), url(std::move(u)), pool(url, config.connect_timeout) {
        headers.emplace("Accept", "application/json");
        headers.emplace("User-Agent", "agency-mcp/0.1");
        if (!config.api_key.empty()) headers.emplace("Authorization", "Bearer " + config.api_key);
    }

    // Every message, log line and gateway text passes through here: a gateway may echo the key.
    std::string safe(std::string text) const {
        return detail::redact(std::move(text), config.api_key);
    }

    template <typename... Args>
    void log_line(spdlog::level::level_enum level, fmt::format_string<Args...> format,
                  Args&&... args) const {
        spdlog::log(level, "{}", safe(fmt::format(format, std::forward<Args>(args)...)));
    }

    Error error(ErrorReason reason, std::string message, int http_status = 0,
                std::string gateway_error = {}, std::optional<int> status_code = std::nullopt,
                nlohmann::json data = nullptr) const {
        return Error(reason, safe(std::move(message)), http_status, safe(std::move(gateway_error)),
                     status_code, std::move(data));
    }

    Error cancelled(std::string_view what) const {
        return error(ErrorReason::cancelled, "the " + std::string(what) + " was cancelled");
    }

    std::string read_target(const ReadQuery& q) const {
        std::string target = url.path;
        target += "?resource=";
        detail::append_query_escaped(target, q.resource);
        const auto add = [&](std::string_view name, std::string_view value) {
            target += '&';
            target += name;
            target += '=';
            detail::append_query_escaped(target, value);
        };
        if (!q.client_id.empty()) add("client_id", q.client_id);
        if (q.limit) add("limit", std::to_string(*q.limit));
        if (q.offset) add("offset", std::to_string(*q.offset));
        if (!q.order.empty()) add("order", q.order);
        if (!q.direction.empty()) add("direction", q.direction);
        if (!q.filter_field.empty() || !q.filter_value.empty()) {
            add("filter_field", q.filter_field);
            add("filter_value", q.filter_value);
        }
        return target;
    }

    static std::string describe_read(const ReadQuery& q) {
        std::string what = "read of " + q.resource;
        if (!q.client_id.empty()) what += " for " + q.client_id;
        return what;
    }

    // One HTTP exchange on a leased connection. The stop token aborts it mid-flight: the
    // connection is shut down, which fails the blocking read at once.
    Exchange perform(const char* method, const std::string& target, const std::string* body,
                     std::string& out, milliseconds timeout, const std::stop_token& stop) {
        auto lease = pool.acquire(stop);
        auto& client = lease.client();
        auto* plain = dynamic_cast<PlainClient*>(&client);
        client.set_read_timeout(timeout);
        client.set_write_timeout(timeout);

        httplib::Request req;
        req.method = method;
        req.path = target;
        req.headers = headers;
        if (body != nullptr) {
            req.body = *body;
            req.headers.emplace("Content-Type", "application/json");
        }
        out.clear();
        bool sinking = false;  // the body goes straight into `out` (PlainClient)
        req.response_handler = [&](const httplib::Response& res) {
            const auto header = res.get_header_value("Content-Length");
            std::size_t length = 0;
            std::from_chars(header.data(), header.data() + header.size(), length);
            if (length > 0) {
                out.reserve(std::min<std::size_t>(length, kMaxReserve) +
                            simdjson::SIMDJSON_PADDING);
                if (plain != nullptr) sinking = plain->expect_body_into(res, length, out);
            }
            return !stop.stop_requested();
        };
        req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t,
                                   std::uint64_t) {
            if (stop.stop_requested()) return false;
            if (!sinking) out.append(data, size);
            return true;
        };

        Exchange ex;
        if (stop.stop_requested()) {  // nothing went out
            ex.error = httplib::Error::Canceled;
            return ex;
        }
        httplib::Response res;
        auto err = httplib::Error::Success;
        const auto started = Clock::now();
        bool ok = false;
        {
            std::stop_callback abort_transfer(stop, [&client] { client.stop(); });
            if (stop.stop_requested()) {  // fired just now: still nothing went out
                ex.error = httplib::Error::Canceled;
                return ex;
            }
            ok = client.send(req, res, err);
        }
        ex.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
        if (ok) {
            ex.status = res.status;
            ex.retry_after = res.get_header_value("Retry-After");
        } else {
            if (err == httplib::Error::Success) err = httplib::Error::Canceled;
            ex.error = err;
            ex.maybe_sent = request_may_have_arrived(err);
            ex.timed_out = err == httplib::Error::Read && ex.elapsed + milliseconds(50) >= timeout;
        }
        return ex;
    }

    std::string failure_text(const Exchange& ex, const std::string& body,
                             milliseconds timeout) const {
        if (ex.status == 0) return describe_network_failure(ex, timeout, config.connect_timeout);
        const auto text = gateway_error_text(body);
        std::string out = "HTTP " + std::to_string(ex.status);
        if (!text.empty()) {
            out += ": " + text;
        } else if (!body.empty()) {
            out += " (" + body_excerpt(body) + ")";
        }
        return safe(std::move(out));
    }

    // A GET with the read rules: 5xx, network errors and timeouts retried with backoff, 429
    // after Retry-After, any other answer final. Returns the 2xx exchange; the body is in `out`.
    Exchange get(const std::string& target, const std::string& what, std::string& out,
                 const std::stop_token& stop, int max_attempts) {
        for (int attempt = 0;; ++attempt) {
            if (stop.stop_requested()) throw cancelled(what);
            const auto ex = perform("GET", target, nullptr, out, config.read_timeout, stop);
            if (stop.stop_requested()) throw cancelled(what);
            if (ex.status >= 200 && ex.status < 300) return ex;

            const bool last = attempt + 1 >= max_attempts;
            const auto failure = failure_text(ex, out, config.read_timeout);
            const auto gw_text = safe(gateway_error_text(out));
            const bool retryable = ex.status == 0 || ex.status == 429 || ex.status >= 500;
            if (!retryable) {
                log_line(spdlog::level::warn, "gateway {}: {}", what, failure);
                throw error(reason_for_status(ex.status),
                            "the gateway refused the " + what + ": " + failure, ex.status, gw_text);
            }
            if (last) {
                const auto reason = ex.status == 0     ? ErrorReason::unavailable
                                    : ex.status == 429 ? ErrorReason::rate_limited
                                                       : ErrorReason::upstream;
                log_line(spdlog::level::err, "gateway {} failed after {} attempts: {}", what,
                         attempt + 1, failure);
                std::string message = "the gateway " + what + " failed after " +
                                      std::to_string(attempt + 1) + " attempts: " + failure;
                nlohmann::json data = nullptr;
                if (ex.status == 0) {
                    message += " (gateway at " + url.display + ")";
                    data = {{"failure", failure},
                            {"connect_failed", ex.error == httplib::Error::Connection}};
                }
                throw error(reason, std::move(message), ex.status, gw_text, std::nullopt,
                            std::move(data));
            }
            auto delay = backoff_delay(config.backoff_base, attempt);
            if (ex.status == 429) {
                delay = retry_after_delay(ex.retry_after, config.max_retry_after).value_or(delay);
            }
            log_line(spdlog::level::warn, "gateway {}: {}; retrying in {} (attempt {} of {})", what,
                     failure, ms_text(delay), attempt + 2, max_attempts);
            if (!sleep_for(delay, stop)) throw cancelled(what);
        }
    }

    Error bad_page(const std::string& body, const std::string& what, int http_status,
                   WalkProblem problem) const {
        std::string message = "the gateway answered the " + what + " with ";
        message += describe(problem);
        if (!body.empty()) message += ": " + body_excerpt(body);
        log_line(spdlog::level::err, "gateway: {}", message);
        return error(ErrorReason::upstream, std::move(message), http_status);
    }

    WalkResult walk(Page& page, const WalkOptions& options, const RowVisitor& on_row) const {
        WalkResult walked = walk_rows(page.body, options, on_row);
        if (walked.problem != WalkProblem::none)
            throw bad_page(page.body, page.what, page.http_status, walked.problem);
        page.pagination = walked.pagination;
        return walked;
    }

    Page read(const ReadQuery& query, const std::stop_token& stop, bool scan = true) {
        Page page;
        page.what = describe_read(query);
        const auto ex = get(read_target(query), page.what, page.body, stop, config.max_attempts);
        page.http_status = ex.status;
        page.body.reserve(page.body.size() + simdjson::SIMDJSON_PADDING);
        if (scan) walk(page, {}, [](const Row&) { return false; });
        return page;
    }

    Pagination for_each_row(ReadQuery query, const std::function<bool(std::string_view)>& on_row,
                            const std::stop_token& stop) {
        query.limit = kPageLimit;
        std::int64_t offset = query.offset.value_or(0);
        for (;;) {
            query.offset = offset;
            Page page = read(query, stop, false);
            const WalkResult walked =
                walk(page, {}, [&](const Row& row) { return on_row(row.json); });
            if (walked.stopped || !page.pagination.present || !page.pagination.has_more ||
                walked.rows == 0) {
                return page.pagination;
            }
            offset += kPageLimit;
        }
    }

    // --- discovery -------------------------------------------------------------------------

    std::shared_ptr<const Discovery> fetch_discovery(const std::stop_token& stop, int attempts) {
        std::string body;
        const auto ex = get(url.path, "discovery", body, stop, attempts);
        std::string problem;
        auto parsed = parse_discovery(body, problem);
        if (!parsed) {
            log_line(spdlog::level::err, "gateway discovery at {}: {}", url.display, problem);
            throw error(ErrorReason::upstream,
                        "the gateway at " + url.display + " answered discovery, but " + problem +
                            ": " + body_excerpt(body),
                        ex.status);
        }
        return std::make_shared<const Discovery>(std::move(*parsed));
    }

    // Stores a fresh discovery; true when it differs from one cached before.
    bool store_discovery(std::shared_ptr<const Discovery> fresh) {
        std::lock_guard lock(discovery_mu);
        const bool changed = discovery && !(*discovery == *fresh);
        discovery = std::move(fresh);
        discovery_at = Clock::now();
        return changed;
    }

    // --- actions ---------------------------------------------------------------------------

    static std::string claim_key(std::string_view resource, const nlohmann::json& row) {
        const auto it = row.is_object() ? row.find("id") : row.end();
        if (!row.is_object() || it == row.end()) return {};
        const auto id = detail::scalar_text(*it);
        return id ? std::string(resource) + '\n' + *id : std::string{};
    }

    void claim(const ActionSpec* spec, const nlohmann::json& row) {
        if (spec == nullptr || !claims_records(*spec)) return;
        auto key = claim_key(spec->resource, row);
        if (key.empty()) return;
        std::lock_guard lock(claimed_mu);
        if (!claimed.insert(key).second) return;
        claimed_order.push_back(std::move(key));
        if (claimed_order.size() > kMaxClaimed) {
            claimed.erase(claimed_order.front());
            claimed_order.pop_front();
        }
    }

    bool is_claimed(const ActionSpec& spec, const nlohmann::json& row) {
        if (!claims_records(spec)) return false;
        const auto key = claim_key(spec.resource, row);
        std::lock_guard lock(claimed_mu);
        return !key.empty() && claimed.count(key) != 0;
    }

    // Reads the newest rows of the written resource and judges whether an attempt sent at or
    // after `first_sent` created its record (verify, confirm_only). Throws Error when the read
    // fails.
    detail::Verdict verify(const ActionSpec& spec, const nlohmann::json& body,
                           std::string_view client_id,
                           std::chrono::system_clock::time_point first_sent,
                           const std::stop_token& stop) {
        ReadQuery q;
        q.resource = std::string(spec.resource);
        q.client_id = std::string(client_id);
        q.limit = kVerifyLimit;
        q.order = std::string(spec.order);
        q.direction = "desc";
        if (!spec.filter_body_field.empty()) {
            q.filter_field = "id";
            q.filter_value = *detail::scalar_text(body[std::string(spec.filter_body_field)]);
        }
        std::string page;
        const auto what = "verification " + describe_read(q);
        get(read_target(q), what, page, stop, config.max_attempts);
        const auto json = nlohmann::json::parse(page, nullptr, false);
        if (!json.is_object() || !json.contains("data") || !json["data"].is_array()) {
            throw error(ErrorReason::upstream,
                        "the gateway answered the " + what + " without a `data` array");
        }
        bool has_more = true;  // unknown: assume more rows exist
        if (const auto p = json.find("pagination"); p != json.end() && p->is_object()) {
            if (const auto h = p->find("has_more"); h != p->end() && h->is_boolean()) {
                has_more = h->get<bool>();
            }
        }
        const auto not_before = std::chrono::floor<std::chrono::seconds>(first_sent) -
                                std::chrono::duration_cast<std::chrono::seconds>(config.clock_skew);
        return detail::judge_rows(spec, body, json["data"], has_more, kVerifyLimit, not_before,
                                  [&](const nlohmann::json& row) { return is_claimed(spec, row); });
    }

    // The one row a verify_state action acts on (filter_field=id), or null when the gateway
    // has none. Throws Error when the read fails.
    nlohmann::json read_target_row(const ActionSpec& spec, const nlohmann::json& body,
                                   std::string_view client_id, const std::stop_token& stop) {
        ReadQuery q;
        q.resource = std::string(spec.resource);
        q.client_id = std::string(client_id);
        q.limit = kVerifyLimit;
        q.filter_field = "id";
        q.filter_value = *detail::scalar_text(body[std::string(spec.filter_body_field)]);
        std::string page;
        const auto what = "state " + describe_read(q);
        get(read_target(q), what, page, stop, config.max_attempts);
        auto json = nlohmann::json::parse(page, nullptr, false);
        if (!json.is_object() || !json.contains("data") || !json["data"].is_array()) {
            throw error(ErrorReason::upstream,
                        "the gateway answered the " + what + " without a `data` array");
        }
        for (auto& row : json["data"]) {
            // The read filters by id already; checked again so a gateway that ignored the
            // filter cannot make another record look like this one.
            if (row.is_object() && row.contains("id") &&
                detail::scalar_text(row["id"]) == q.filter_value) {
                return std::move(row);
            }
        }
        return nullptr;
    }

    ActionResult act(std::string_view action, std::string_view client_id,
                     const nlohmann::json& fields, const std::stop_token& stop) {
        const std::string what = "action " + std::string(action) + " for " + std::string(client_id);
        if (!fields.is_null() && !fields.is_object()) {
            throw error(ErrorReason::validation,
                        "the fields of " + what + " must be a JSON object");
        }
        nlohmann::json body = fields.is_object() ? fields : nlohmann::json::object();
        body["action"] = action;
        body["client_id"] = client_id;
        const auto body_text = body.dump();

        const ActionSpec* spec = find_action_spec(action, body);
        auto policy = spec != nullptr ? spec->policy : RetryPolicy::unknown;
        std::string unverifiable;  // why a verify action cannot be checked this time
        if ((policy == RetryPolicy::verify || policy == RetryPolicy::verify_state ||
             policy == RetryPolicy::confirm_only) &&
            !detail::can_verify(*spec, body)) {
            policy = RetryPolicy::unknown;
            unverifiable = "the request lacks the fields needed to find its record";
        } else if (spec == nullptr) {
            unverifiable = "the client has no way to check this action's effect";
        } else if (policy == RetryPolicy::unknown) {
            unverifiable = "the gateway keeps no readable record of it";
        }
        // verify_state: the row as it was before anything is sent, to compare with afterwards.
        nlohmann::json before;
        if (policy == RetryPolicy::verify_state) {
            try {
                before = read_target_row(*spec, body, client_id, stop);
                if (before.is_null()) {
                    policy = RetryPolicy::unknown;
                    unverifiable = "the " + std::string(spec->resource) +
                                   " row it acts on was not found before sending";
                }
            } catch (const Error& e) {
                if (e.reason() == ErrorReason::cancelled) throw cancelled(what);
                policy = RetryPolicy::unknown;
                unverifiable = "the " + std::string(spec->resource) +
                               " row it acts on could not be read before sending (" +
                               e.what() + ")";
            }
        }
        const std::string hint = spec != nullptr && !spec->check_hint.empty()
                                     ? std::string(spec->check_hint)
                                     : std::string("read what it writes");

        int posts = 0;
        std::optional<std::chrono::system_clock::time_point> first_sent;
        std::string answer;
        for (int attempt = 0;; ++attempt) {
            if (stop.stop_requested()) throw cancelled(what);
            const auto sent_at = std::chrono::system_clock::now();
            const auto ex = perform("POST", target_for_action(), &body_text, answer,
                                    config.action_timeout, stop);
            const bool arrived = ex.status != 0 || ex.maybe_sent;
            if (arrived) {
                ++posts;
                if (!first_sent) first_sent = sent_at;
            }
            const bool last = attempt + 1 >= config.max_attempts;
            // What is known about an attempt that may or may not have run (Error::data).
            const auto known_with = [&](const std::string& failure, std::string verification) {
                nlohmann::json data = {{"action", action},
                                       {"client_id", client_id},
                                       {"attempts", posts},
                                       {"failure", failure},
                                       {"verification", std::move(verification)}};
                if (first_sent) data["sent_at"] = detail::format_utc_time(*first_sent);
                if (ex.status != 0) data["http_status"] = ex.status;
                return data;
            };
            if (ex.status >= 200 && ex.status < 300) {
                // The usual case: the failure texts below (two parses of the answer) are
                // needed only if the answer turns out to be unreadable.
                return success(spec, answer, ex, posts, what, [&](std::string verification) {
                    return known_with(failure_text(ex, answer, config.action_timeout),
                                      std::move(verification));
                });
            }
            const auto failure = failure_text(ex, answer, config.action_timeout);
            const auto gw_text = safe(gateway_error_text(answer));
            const auto known = [&](std::string verification) {
                return known_with(failure, std::move(verification));
            };

            if (stop.stop_requested() && ex.status == 0) {
                if (!arrived) throw cancelled(what);
                throw error(ErrorReason::cancelled,
                            "the " + what +
                                " was cancelled while the gateway was working on it; it may or may "
                                "not have run",
                            0, {}, std::nullopt, known("not attempted: cancelled"));
            }

            if (ex.status == 429 || !arrived) {
                // The gateway did not do the work: safe to send again.
                if (last) {
                    const auto reason =
                        ex.status == 429 ? ErrorReason::rate_limited : ErrorReason::unavailable;
                    log_line(spdlog::level::err,
                             "gateway {} failed after {} attempts: {}; it was not run", what,
                             attempt + 1, failure);
                    throw error(reason,
                                "the gateway " + what + " failed after " +
                                    std::to_string(attempt + 1) + " attempts: " + failure +
                                    "; the action was not run" +
                                    (ex.status == 0 ? " (gateway at " + url.display + ")" : ""),
                                ex.status, gw_text);
                }
                auto delay = backoff_delay(config.backoff_base, attempt);
                if (ex.status == 429) {
                    delay =
                        retry_after_delay(ex.retry_after, config.max_retry_after).value_or(delay);
                }
                log_line(spdlog::level::warn,
                         "gateway {}: {}; not run, sending again in {} (attempt {} of {})", what,
                         failure, ms_text(delay), attempt + 2, config.max_attempts);
                if (!sleep_for(delay, stop)) throw cancelled(what);
                continue;
            }
            if (ex.status != 0 && ex.status < 500) {
                log_line(spdlog::level::warn, "gateway {}: {}", what, failure);
                throw error(reason_for_status(ex.status),
                            "the gateway refused the " + what + ": " + failure, ex.status, gw_text);
            }

            // Ambiguous: a 5xx, a timeout or a dropped connection after the request went out.
            const bool answered = ex.status != 0;  // the gateway finished with this attempt
            if (policy == RetryPolicy::retry_safe) {
                if (last) {
                    log_line(spdlog::level::err, "gateway {} failed after {} attempts: {}", what,
                             attempt + 1, failure);
                    throw error(answered ? ErrorReason::upstream : ErrorReason::unavailable,
                                "the gateway " + what + " failed after " +
                                    std::to_string(attempt + 1) + " attempts: " + failure,
                                ex.status, gw_text);
                }
                const auto delay = backoff_delay(config.backoff_base, attempt);
                log_line(spdlog::level::warn,
                         "gateway {}: {}; repeating it is harmless, retrying in {} "
                         "(attempt {} of {})",
                         what, failure, ms_text(delay), attempt + 2, config.max_attempts);
                if (!sleep_for(delay, stop)) throw cancelled(what);
                continue;
            }
            if (policy == RetryPolicy::unknown) {
                throw outcome_unknown(what, failure, ex.status, gw_text,
                                      known("not possible: " + unverifiable), unverifiable, hint);
            }

            detail::Verdict found;
            try {
                if (policy == RetryPolicy::verify_state) {
                    found = detail::compare_state(*spec, before,
                                                  read_target_row(*spec, body, client_id, stop));
                } else {
                    found = verify(*spec, body, client_id, *first_sent, stop);
                }
            } catch (const Error& e) {
                if (e.reason() == ErrorReason::cancelled) {
                    throw error(ErrorReason::cancelled,
                                "the " + what + " was cancelled while checking whether it ran (" +
                                    failure + "); it may or may not have run",
                                ex.status, gw_text, std::nullopt, known("cancelled"));
                }
                throw outcome_unknown(what, failure, ex.status, gw_text,
                                      known(std::string("failed: ") + e.what()),
                                      "checking whether it ran failed: " + std::string(e.what()),
                                      hint);
            }
            if (found.evidence == detail::Evidence::ran) {
                claim(spec, found.row);
                log_line(spdlog::level::warn, "gateway {}: {}; {}, so it ran and is not sent again",
                         what, failure, found.detail);
                ActionResult result;
                result.data = std::move(found.row);
                result.status_code = 200;
                result.attempts = posts;
                result.recovered = true;
                result.note = "the gateway answered " + failure + ", but " + found.detail +
                              ": it ran once and was not sent again";
                return result;
            }
            if (found.evidence == detail::Evidence::unclear) {
                throw outcome_unknown(what, failure, ex.status, gw_text, known(found.detail),
                                      found.detail, hint);
            }
            if (!answered) {
                throw outcome_unknown(
                    what, failure, 0, gw_text, known(found.detail),
                    "the gateway may still be working on it (" + found.detail + " yet)", hint);
            }
            if (last) {
                log_line(spdlog::level::err, "gateway {} failed after {} attempts: {}; {}", what,
                         attempt + 1, failure, found.detail);
                throw error(ErrorReason::upstream,
                            "the gateway " + what + " failed after " + std::to_string(attempt + 1) +
                                " attempts: " + failure + "; " + found.detail +
                                ", so it did not run",
                            ex.status, gw_text);
            }
            const auto delay = backoff_delay(config.backoff_base, attempt);
            log_line(spdlog::level::warn,
                     "gateway {}: {}; {}, so it did not run: sending again in {} "
                     "(attempt {} of {})",
                     what, failure, found.detail, ms_text(delay), attempt + 2, config.max_attempts);
            if (!sleep_for(delay, stop)) throw cancelled(what);
        }
    }

    const std::string& target_for_action() const { return url.path; }

    Error outcome_unknown(const std::string& what, const std::string& failure, int http_status,
                          const std::string& gw_text, nlohmann::json data,
                          const std::string& why, const std::string& hint = {}) const {
        log_line(spdlog::level::err,
                 "gateway {}: {}; it may or may not have run and was not re-sent: {}", what,
                 failure, why);
        if (!hint.empty() && data.is_object()) data["check"] = hint;
        return error(ErrorReason::outcome_unknown,
                     "the " + what + " may or may not have run (" + failure +
                         "); it was not re-sent because " + why + ". Check before running it " +
                         (hint.empty() ? std::string("again.") : "again: " + hint + "."),
                     http_status, gw_text, std::nullopt, std::move(data));
    }

    template <typename Known>
    ActionResult success(const ActionSpec* spec, const std::string& answer, const Exchange& ex,
                         int posts, const std::string& what, const Known& known) {
        auto response = parse_json(answer);
        if (!response.is_object()) {
            // The gateway says it finished, but its answer cannot be read.
            throw outcome_unknown(
                what,
                "HTTP " + std::to_string(ex.status) +
                    " with a body that is not a JSON object: " + body_excerpt(answer),
                ex.status, {}, known("not attempted: the gateway answered"),
                "the answer could not be read");
        }
        const auto status = response.value("status", std::string{});
        std::optional<int> status_code;
        if (const auto it = response.find("status_code");
            it != response.end() && it->is_number_integer()) {
            status_code = it->get<int>();
        }
        // Moved out, not copied: the rest of the answer is not kept.
        nlohmann::json data = nullptr;
        if (const auto it = response.find("data"); it != response.end()) data = std::move(*it);
        if (status == "error" || (status != "success" && status_code && *status_code >= 400)) {
            // gateway_error_text without parsing the answer again.
            std::string gw_text;
            if (const auto it = response.find("error"); it != response.end() && it->is_string()) {
                gw_text = it->get<std::string>();
            }
            std::string message = "the " + what +
                                  " did not complete: the gateway reported "
                                  "status \"" +
                                  status + "\"";
            if (status_code) message += " with status_code " + std::to_string(*status_code);
            if (!gw_text.empty()) message += ": " + gw_text;
            message += "; nothing was billed, and it was not re-sent";
            log_line(spdlog::level::warn, "gateway: {}", message);
            throw error(ErrorReason::upstream, std::move(message), ex.status, std::move(gw_text),
                        status_code, std::move(data));
        }
        claim(spec, data);
        ActionResult result;
        result.status_code = status_code.value_or(200);
        result.data = std::move(data);
        result.attempts = posts;
        return result;
    }
};

namespace {

detail::BaseUrl validate(const Config& config) {
    auto url = detail::parse_base_url(config.base_url);
    const auto bad = [](const std::string& message) { return Error(ErrorReason::config, message); };
    if (config.max_attempts < 1) throw bad("max_attempts must be at least 1");
    if (config.read_timeout.count() <= 0 || config.action_timeout.count() <= 0 ||
        config.connect_timeout.count() <= 0) {
        throw bad("the gateway timeouts must be positive");
    }
    if (config.backoff_base.count() < 0 || config.max_retry_after.count() < 0 ||
        config.clock_skew.count() < 0) {
        throw bad("backoff_base, max_retry_after and clock_skew must not be negative");
    }
    if (config.api_key.find_first_of("\r\n") != std::string::npos) {
        throw bad("the API key contains a line break");
    }
    return url;
}

}  // namespace

Client::Client(Config config) {
    auto url = validate(config);
    impl_ = std::make_unique<Impl>(std::move(config), std::move(url));
}

Client::~Client() = default;

const Config& Client::config() const {
    return impl_->config;
}

Page Client::read(const ReadQuery& query, std::stop_token stop) {
    return impl_->read(query, stop);
}

Page Client::read_body(const ReadQuery& query, std::stop_token stop) {
    return impl_->read(query, stop, false);
}

WalkResult Client::walk(Page& page, const WalkOptions& options, const RowVisitor& on_row) const {
    return impl_->walk(page, options, on_row);
}

Pagination Client::for_each_row(ReadQuery query,
                                const std::function<bool(std::string_view)>& on_row,
                                std::stop_token stop) {
    return impl_->for_each_row(std::move(query), on_row, stop);
}

ActionResult Client::act(std::string_view action, std::string_view client_id,
                         const nlohmann::json& fields, std::stop_token stop) {
    return impl_->act(action, client_id, fields, stop);
}

std::shared_ptr<const Discovery> Client::discovery(std::stop_token stop) {
    {
        std::lock_guard lock(impl_->discovery_mu);
        if (impl_->discovery && Clock::now() - impl_->discovery_at < impl_->config.discovery_ttl) {
            return impl_->discovery;
        }
    }
    auto fresh = impl_->fetch_discovery(stop, impl_->config.max_attempts);
    impl_->store_discovery(fresh);
    return fresh;
}

bool Client::refresh_discovery(std::stop_token stop) {
    return impl_->store_discovery(impl_->fetch_discovery(stop, impl_->config.max_attempts));
}

void Client::start_discovery_refresh(std::chrono::milliseconds period,
                                     std::function<void()> on_change) {
    std::lock_guard lock(impl_->refresher_mu);
    impl_->refresher = std::jthread();  // stops and joins a previous refresher
    Impl* impl = impl_.get();
    impl->refresher =
        std::jthread([impl, period, on_change = std::move(on_change)](std::stop_token stop) {
            while (sleep_for(period, stop)) {
                try {
                    const bool changed = impl->store_discovery(
                        impl->fetch_discovery(stop, impl->config.max_attempts));
                    if (changed && on_change) on_change();
                } catch (const Error& e) {
                    if (e.reason() == ErrorReason::cancelled) return;
                    spdlog::warn("gateway discovery refresh failed: {}", e.what());
                } catch (const std::exception& e) {
                    spdlog::warn("gateway discovery refresh failed: {}", e.what());
                }
            }
        });
}

void Client::stop_discovery_refresh() {
    std::lock_guard lock(impl_->refresher_mu);
    impl_->refresher = std::jthread();
}

void Client::check() {
    auto& impl = *impl_;
    const auto& at = impl.url.display;
    const int attempts = std::min(impl.config.max_attempts, 2);  // fail fast at start-up
    try {
        impl.store_discovery(impl.fetch_discovery({}, attempts));
    } catch (const Error& e) {
        const auto text = e.gateway_error().empty() ? std::string{} : ": " + e.gateway_error();
        const auto http = " (HTTP " + std::to_string(e.http_status()) + text + ")";
        switch (e.reason()) {
            case ErrorReason::unavailable: {
                const auto& data = e.data();
                std::string why =
                    data.is_object() ? data.value("failure", std::string{}) : std::string{};
                if (why.empty()) why = "no answer";
                if (data.is_object() && data.value("connect_failed", false)) {
                    why =
                        diagnose_connect(impl.url.host, impl.url.port, impl.config.connect_timeout);
                }
                throw impl.error(ErrorReason::unavailable,
                                 "cannot reach the gateway at " + at + ": " + why);
            }
            case ErrorReason::auth:
                throw impl.error(
                    ErrorReason::auth,
                    impl.config.api_key.empty()
                        ? "the gateway at " + at + " requires an API key" + http +
                              "; set AGENCY_API_KEY"
                        : "the gateway at " + at + " rejected the API key" + http +
                              "; check that it is valid and not expired, or set AGENCY_API_KEY",
                    e.http_status(), e.gateway_error());
            case ErrorReason::scope:
                throw impl.error(ErrorReason::scope,
                                 "the gateway at " + at + " denied access" + http +
                                     "; the API key needs the read scope",
                                 e.http_status(), e.gateway_error());
            case ErrorReason::not_found:
            case ErrorReason::method:
            case ErrorReason::validation:
                throw impl.error(ErrorReason::config,
                                 "the server at " + at + " is not the agency gateway" + http +
                                     "; check the base URL and its path",
                                 e.http_status(), e.gateway_error());
            case ErrorReason::upstream:
                if (e.http_status() >= 200 && e.http_status() < 300) {
                    throw impl.error(ErrorReason::config,
                                     "the server at " + at +
                                         " answered, but not with the gateway's discovery JSON; "
                                         "check the base URL and its path",
                                     e.http_status());
                }
                throw impl.error(ErrorReason::upstream,
                                 "the gateway at " + at + " is failing" + http, e.http_status(),
                                 e.gateway_error());
            default: throw;
        }
    }
}

}  // namespace agency::gateway
