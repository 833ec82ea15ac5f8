// Connections to the gateway, one HTTP exchange, and how its failures read.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <openssl/x509_vfy.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/metrics.hpp"
#include "base/progress_notes.hpp"
#include "base/trace_context.hpp"
#include "gateway/client_internal.hpp"
#include "gateway/json_parse.hpp"
#include "gateway/plain_client.hpp"
#include "gateway/tls_meter.hpp"

namespace agency::gateway::internal {

namespace {

// Config::read_connections / action_connections in use at once; more callers wait (within
// their budget). Every connection returned is kept, so the next burst
// does not reconnect; an idle one may pin a worker of a thread-per-connection gateway, so one
// idle longer than kMaxIdleTime is closed at the next acquire or release.
constexpr auto kMaxIdleTime = milliseconds(1500);  // under common keep-alive limits (2-5 s)

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

// The attempt the current thread's request is (0: the first; with_retries sets it).
thread_local int t_attempt = 0;

base::metrics::CounterFamily& gateway_requests() {
    static auto* family = new base::metrics::CounterFamily(
        "agency_gateway_requests_total",
        "HTTP requests sent to the gateway by method, status (0: no answer; other: a status "
        "HTTP does not define), error type (the network failure, or the status class) and "
        "whether it was a retry",
        {"http_request_method", "http_response_status_code", "error_type", "retry"});
    return *family;
}

base::metrics::HistogramFamily& gateway_duration() {
    static auto* family = new base::metrics::HistogramFamily(
        "http_client_request_duration_seconds",
        "Gateway request duration, each attempt on its own (OpenTelemetry "
        "http.client.request.duration)",
        {"http_request_method", "http_response_status_code"}, base::metrics::duration_buckets());
    return *family;
}

// Both show from the start, not from the first request.
[[maybe_unused]] const bool g_registered = (gateway_requests(), gateway_duration(), true);

// What went wrong, in the OpenTelemetry error.type manner: "" for a 2xx or 3xx answer, the
// status for an error answer, the failure's name without one.
std::string_view error_type(const Exchange& ex) {
    if (!ex.over_limit.empty()) return "response_too_large";
    if (ex.status >= 400) return ex.status >= 500 ? "5xx" : "4xx";
    if (ex.status > 0) return "";
    if (ex.timed_out) return "timeout";
    switch (ex.error) {
        case httplib::Error::Connection: return "connect";
        case httplib::Error::ConnectionTimeout: return "connect_timeout";
        case httplib::Error::Read: return "read";
        case httplib::Error::Write: return "write";
        case httplib::Error::Canceled: return "cancelled";
        case httplib::Error::SSLConnection:
        case httplib::Error::SSLLoadingCerts:
        case httplib::Error::SSLServerVerification: return "tls";
        default: return "other";
    }
}

void count_request(const char* method, const Exchange& ex, double seconds) {
    // Bounded: the gateway (or whatever answers at its URL) chooses the status.
    const std::string status = base::metrics::http_status_label(ex.status);
    gateway_requests().add({method, status, error_type(ex), t_attempt > 0 ? "true" : "false"});
    gateway_duration().observe({method, status}, seconds);
}

}  // namespace

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


namespace {

// Why the server's certificate was refused: a trusted chain for another name (httplib checks
// the name after OpenSSL trusted the chain), an issuer not trusted here, or OpenSSL's reason.
std::string describe_certificate_refusal(long verify_result) {
    if (verify_result == X509_V_OK)
        return "the server's TLS certificate is for another host name than the gateway URL's "
               "(check the host in the URL, or the name the certificate was made for)";
    const std::string reason = X509_verify_cert_error_string(verify_result);
    switch (verify_result) {
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
            return "the server's TLS certificate is not signed by a CA this machine trusts (" +
                   reason + "; a private CA? name its certificate in SSL_CERT_FILE, or a "
                   "directory of them in SSL_CERT_DIR)";
        default: return "the server's TLS certificate was refused (" + reason + ")";
    }
}

}  // namespace

std::string describe_network_failure(const Exchange& ex, milliseconds timeout,
                                     milliseconds connect_timeout) {
    // The timeout the attempt really had (cut to the call's deadline), not the nominal one.
    if (ex.deadline_hit)
        return "no complete answer within " + ms_text(ex.elapsed) +
               ", the rest of the call's budget: the answer was still coming";
    if (ex.timed_out) return "no answer within " + ms_text(ex.timeout.count() > 0 ? ex.timeout : timeout);
    switch (ex.error) {
        case httplib::Error::Connection: return "could not connect";
        case httplib::Error::ConnectionTimeout:
            return "connecting timed out after " + ms_text(connect_timeout);
        case httplib::Error::Read: return "the connection dropped before the answer was complete";
        case httplib::Error::Write: return "the request could not be sent";
        case httplib::Error::SSLConnection: return "the TLS handshake failed";
        case httplib::Error::SSLLoadingCerts:
            return "the TLS CA certificates could not be loaded (check SSL_CERT_FILE and "
                   "SSL_CERT_DIR)";
        case httplib::Error::SSLServerVerification:
            return describe_certificate_refusal(ex.verify_result);
        case httplib::Error::Canceled: return "the transfer was cancelled";
        default: return "network error (" + httplib::to_string(ex.error) + ")";
    }
}

// The gateway's `error` string when the body is the spec's error object, else "".
std::string gateway_error_text(const std::string& body) {
    const auto json = parse_json(body);
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

ConnectionPool::Lease ConnectionPool::acquire(const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    const auto free = [&] { return !idle_.empty() || open_ < max_open_; };
    // Waiting for a free connection counts against the call's budget too.
    const auto* deadline = DeadlineScope::current();
    const auto wait = deadline != nullptr ? std::max(deadline->left(), milliseconds(0))
                                          : milliseconds::max();
    if (deadline != nullptr ? !cv_.wait_for(lock, stop, wait, free) : !cv_.wait(lock, stop, free)) {
        if (stop.stop_requested())
            throw Error(ErrorReason::cancelled, "cancelled while waiting for a connection");
        throw Error(ErrorReason::unavailable,
                    "all " + std::to_string(max_open_) + " gateway connections for " +
                        kind_ + " stayed busy for " + ms_text(wait) +
                        ", the rest of the call's budget of " + ms_text(deadline->budget()) +
                        "; nothing was sent");
    }
    if (!idle_.empty()) {  // the most recently used one: the least likely to be closed
        close_stale(clock_.steady());  // this one too, when it has been idle that long
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

std::unique_ptr<httplib::ClientImpl> ConnectionPool::create() const {
    std::unique_ptr<httplib::ClientImpl> client;
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (url_.https) {
        auto tls = std::make_unique<httplib::SSLClient>(url_.host, url_.port);
        meter_tls_records(*tls);  // the answer's limits, counted on its TLS records
        client = std::move(tls);
    }
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
void ConnectionPool::release(std::unique_ptr<httplib::ClientImpl> client) {
    {
        std::lock_guard lock(mu_);
        close_stale(clock_.steady());
        idle_.push_back({std::move(client), clock_.steady()});
    }
    cv_.notify_one();
}

// Closes the sockets of connections idle too long (the oldest are first); their clients are
// kept and reconnect when next used. A server may close a connection idle that long just as
// we send on it, and a POST lost that way would look ambiguous, so such a connection is
// never reused; closing it also frees the gateway worker it may pin. Called with mu_ held.
void ConnectionPool::close_stale(SteadyTime now) {
    for (auto& entry : idle_) {
        if (now - entry.since <= kMaxIdleTime) break;
        if (entry.client->is_socket_open()) entry.client->stop();
    }
}

}  // namespace agency::gateway::internal

namespace agency::gateway {

using internal::Exchange;
using std::chrono::milliseconds;

Client::Impl::Impl(Config c, detail::BaseUrl u, const base::Clock& clk)
    : config(std::move(c)),
      url(std::move(u)),
      clock(clk),
      reads(url, config.connect_timeout, clk, "reads", config.read_connections),
      actions(url, config.connect_timeout, clk, "actions", config.action_connections) {
    headers.emplace("Accept", "application/json");
    headers.emplace("User-Agent", "agency-mcp/0.1");
    if (!config.api_key.empty()) headers.emplace("Authorization", "Bearer " + config.api_key);
}

std::string Client::Impl::safe(std::string text) const {
    return detail::redact(std::move(text), config.api_key);
}

Error Client::Impl::error(ErrorReason reason, std::string message, int http_status,
                          std::string gateway_error, std::optional<int> status_code,
                          nlohmann::json data) const {
    return Error(reason, safe(std::move(message)), http_status, safe(std::move(gateway_error)),
                 status_code, std::move(data));
}

Error Client::Impl::cancelled(std::string_view what) const {
    return error(ErrorReason::cancelled, "the " + std::string(what) + " was cancelled");
}

std::string Client::Impl::failure_text(const Exchange& ex, const std::string& body,
                                       milliseconds timeout) const {
    if (ex.status == 0) {
        return internal::describe_network_failure(ex, timeout, config.connect_timeout);
    }
    const auto text = internal::gateway_error_text(body);
    std::string out = "HTTP " + std::to_string(ex.status);
    if (!text.empty()) {
        out += ": " + text;
    } else if (!body.empty()) {
        out += " (" + internal::body_excerpt(body) + ")";
    }
    return safe(std::move(out));
}

RetrySchedule Client::Impl::schedule(int max_attempts) const {
    return {max_attempts, config.backoff_base, config.max_retry_after, DeadlineScope::current()};
}

Error Client::Impl::out_of_time(const std::string& what, const Retry& retry,
                                const RetryEnd& end) const {
    const auto reason = retry.http_status == 0     ? ErrorReason::unavailable
                        : retry.http_status == 429 ? ErrorReason::rate_limited
                                                   : ErrorReason::upstream;
    const auto failure = retry.situation.substr(0, retry.situation.find(';'));
    const auto attempts = std::to_string(end.attempts) +
                          (end.attempts == 1 ? " attempt" : " attempts");
    std::string message =
        retry.http_status == 0
            ? "the gateway did not answer the " + what + " within " + ms_text(end.elapsed) +
                  " over " + attempts + " (" + failure + ")"
            : "the gateway " + what + " failed after " + attempts + " over " +
                  ms_text(end.elapsed) + ": " + failure;
    message += "; another attempt (after " + ms_text(end.wait) +
               ") would not fit the call's budget of " + ms_text(end.budget);
    if (retry.not_run) message += "; the action was not run";
    if (retry.http_status == 0) message += " (gateway at " + url.display + ")";
    log_line(log::Level::error, "{}", message);
    nlohmann::json data = {{"failure", failure},
                           {"attempts", end.attempts},
                           {"elapsed_ms", end.elapsed.count()},
                           {"budget_ms", end.budget.count()}};
    return error(reason, std::move(message), retry.http_status, {}, std::nullopt,
                 std::move(data));
}

void Client::Impl::with_retries(int max_attempts, const std::string& what,
                                const std::stop_token& stop,
                                const std::function<std::optional<Retry>(int, bool)>& attempt) {
    fail_if_away();  // at once, with why, while a server started without its gateway
    // A request outside any public call (none should be) still gets the call's budget.
    std::optional<DeadlineScope> own;
    if (DeadlineScope::current() == nullptr) own.emplace(clock, config.call_timeout);
    // A call of many requests (a scan's pages) ends with its budget: once it is spent, no
    // request of it starts, not even a first attempt.
    if (const auto* deadline = DeadlineScope::current(); deadline->left().count() <= 0)
        throw error(ErrorReason::unavailable,
                    "the call's budget of " + ms_text(deadline->budget()) +
                        " was spent before the " + what +
                        " could be sent; nothing more was asked of the gateway");
    // Each attempt tells perform() which it is (retries are counted apart).
    const auto numbered = [&attempt](int n, bool last) {
        const int outer = std::exchange(internal::t_attempt, n);
        struct Restore {
            int value;
            ~Restore() { internal::t_attempt = value; }
        } restore{outer};
        return attempt(n, last);
    };
    run_with_retries(
        schedule(max_attempts), what, stop, numbered,
        {.throw_cancelled = [&] { throw cancelled(what); },
         .warn = [&](const std::string& line) { log_line(log::Level::warn, "{}", line); },
         .throw_out_of_time = [&](const Retry& retry,
                                  const RetryEnd& end) { throw out_of_time(what, retry, end); },
         .on_retry =
             [&](std::string_view note) { base::ProgressNotes::report(safe(std::string(note))); }});
}

// One HTTP exchange on a leased connection. The stop token aborts it mid-flight: the
// connection is shut down, which fails the blocking read at once. Every byte of the answer is
// counted (internal::Receiving; the head, for a plain-HTTP gateway, in PlainClient) and the
// exchange ends at the call's deadline however slowly the answer comes.
Exchange Client::Impl::perform(const char* method, const std::string& target, const std::string* body,
                 std::string& out, milliseconds timeout, const std::stop_token& stop) {
    // Inside the call's deadline: this attempt gets at most what is left of it.
    auto connect_timeout = config.connect_timeout;
    auto left = config.call_timeout;  // until the whole exchange ends, however it goes
    if (const auto* deadline = DeadlineScope::current()) {
        timeout = deadline->cap(timeout);
        connect_timeout = deadline->cap(connect_timeout);
        left = deadline->cap(std::chrono::hours(24));
    }
    auto lease = (std::string_view(method) == "POST" ? actions : reads).acquire(stop);
    auto& client = lease.client();
    auto* plain = dynamic_cast<PlainClient*>(&client);
    client.set_connection_timeout(connect_timeout);
    client.set_read_timeout(timeout);
    client.set_write_timeout(timeout);

    httplib::Request req;
    req.method = method;
    req.path = target;
    req.headers = headers;
    // The call's trace goes on to the gateway as a new span of it (W3C trace context).
    if (const auto* call = base::current_call_trace())
        req.headers.emplace("traceparent", base::child_span(call->trace).header());
    if (body != nullptr) {
        req.body = *body;
        req.headers.emplace("Content-Type", "application/json");
    }
    out.clear();
    // Underneath httplib: PlainClient's stream, or the TLS records this thread receives.
    AnswerMeter tls_meter;
    AnswerMeter& meter = plain != nullptr ? plain->meter() : tls_meter;
    const auto end = std::chrono::steady_clock::now() + left;
    // On the wire the head and a chunked body's framing (or TLS's) come on top of the body.
    const auto body_cap = std::uint64_t{config.max_response_bytes};
    meter.start({.max_head_bytes = internal::kMaxHeadBytes,
                 .max_bytes = 2 * body_cap + internal::kMaxHeadBytes,
                 .deadline = end});
    std::optional<TlsMeterScope> tls_scope;
    if (plain == nullptr) tls_scope.emplace(tls_meter);
    internal::Receiving receiving{out, plain, meter, stop, config.max_response_bytes, end};
    receiving.all_receiving = &answers_receiving;
    receiving.all_cap = config.max_answers_bytes;
    req.response_handler = [&](const httplib::Response& res) { return receiving.on_head(res); };
    req.content_receiver = [&](const char* data, std::size_t size, std::uint64_t,
                               std::uint64_t) { return receiving.on_body(data, size); };

    Exchange ex;
    ex.timeout = timeout;
    if (stop.stop_requested()) {  // nothing went out
        ex.error = httplib::Error::Canceled;
        return ex;
    }
    httplib::Response res;
    auto err = httplib::Error::Success;
    const auto started = std::chrono::steady_clock::now();
    bool ok = false;
    {
        std::stop_callback abort_transfer(stop, [&client] { client.stop(); });
        if (stop.stop_requested()) {  // fired just now: still nothing went out
            ex.error = httplib::Error::Canceled;
            return ex;
        }
        ok = client.send(req, res, err);
    }
    const auto took = std::chrono::steady_clock::now() - started;
    ex.elapsed = std::chrono::duration_cast<milliseconds>(took);
    if (ok) {
        ex.status = res.status;
        ex.retry_after = res.get_header_value("Retry-After");
        // httplib reads no body after a 204 (and an interim 1xx is no answer here): whatever
        // such a gateway sent after the head must not become the next request's answer.
        if (res.status < 200 || res.status == 204 || res.status > 599) client.stop();
    } else {
        if (err == httplib::Error::Success) err = httplib::Error::Canceled;
        ex.error = err;
        if (err == httplib::Error::SSLServerVerification)
            if (const auto* tls = dynamic_cast<const httplib::SSLClient*>(&client))
                ex.verify_result = tls->get_openssl_verify_result();
        ex.maybe_sent = internal::request_may_have_arrived(err);
        ex.timed_out = err == httplib::Error::Read && ex.elapsed + milliseconds(50) >= timeout;
        receiving.finish(ex);
        // httplib closed the connection (a failed exchange never goes back to the pool
        // mid-answer); what was read of the answer is let go at once.
        if (!ex.over_limit.empty() || ex.deadline_hit) std::string().swap(out);
    }
    internal::count_request(method, ex, std::chrono::duration<double>(took).count());
    return ex;
}

}  // namespace agency::gateway
