// Client for the agency gateway (../shared/spec/gateway-api.md): one endpoint, GET reads,
// POST actions. Keeps connections alive, retries reads safely, and never re-sends an action
// unless it is sure the first attempt created nothing. Safe to use from many threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "gateway/page_walk.hpp"

namespace agency::gateway {

// Machine-readable reason of a failure; the tool layer reports these names.
enum class ErrorReason {
    validation,       // 400: missing/invalid parameter (gateway text lists allowed values)
    auth,             // 401: missing, invalid or expired key
    scope,            // 403: key lacks scope, or client not linked to the agency
    not_found,        // 404 or an unknown record
    method,           // 405
    rate_limited,     // 429 still limited after waiting
    upstream,         // 5xx after retries, or an action answered HTTP 200 with status:"error"
    unavailable,      // network error / timeout after retries; gateway unreachable
    outcome_unknown,  // an action may or may not have run; it was not re-sent
    cancelled,        // the caller's stop_token fired
    config,           // bad configuration (malformed URL, missing key, ...)
};
std::string_view to_string(ErrorReason reason);

class Error : public std::runtime_error {
public:
    Error(ErrorReason reason, std::string message, int http_status = 0,
          std::string gateway_error = {}, std::optional<int> status_code = std::nullopt,
          nlohmann::json data = nullptr)
        : std::runtime_error(std::move(message)),
          reason_(reason),
          http_status_(http_status),
          gateway_error_(std::move(gateway_error)),
          status_code_(status_code),
          data_(std::move(data)) {}

    ErrorReason reason() const noexcept { return reason_; }
    int http_status() const noexcept { return http_status_; }  // 0: no HTTP answer
    // The gateway's `error` text, verbatim ("" if none).
    const std::string& gateway_error() const noexcept { return gateway_error_; }
    // For status:"error" action answers: the body's status_code.
    std::optional<int> status_code() const noexcept { return status_code_; }
    // For status:"error": the body's data; for outcome_unknown: what is known.
    const nlohmann::json& data() const noexcept { return data_; }

private:
    ErrorReason reason_;
    int http_status_;
    std::string gateway_error_;
    std::optional<int> status_code_;
    nlohmann::json data_;
};

struct Config {
    std::string base_url{};  // http(s)://host[:port][/path]
    std::string api_key{};   // sent as Authorization: Bearer; "" for the API explorer
    // Per attempt; each is cut to what is left of call_timeout. An action's 20 s (the spec
    // suggests 10-30 s for generation) leaves time for the check after a timeout.
    std::chrono::milliseconds read_timeout{10'000};
    std::chrono::milliseconds action_timeout{20'000};
    std::chrono::milliseconds connect_timeout{5'000};
    // The whole of one operation (a read, an action with its checks, discovery): every attempt
    // and backoff wait, under the common MCP client timeout so an answer comes back in time.
    std::chrono::milliseconds call_timeout{30'000};
    int max_attempts = 6;                         // reads and retry-safe actions
    std::chrono::milliseconds backoff_base{250};  // delay = base * 2^attempt, with jitter
    std::chrono::milliseconds max_retry_after{60'000};  // cap on a 429's Retry-After wait
    std::chrono::seconds clock_skew{5};           // tolerance when matching rows by time
    std::chrono::seconds discovery_ttl{300};
    // The most one gateway answer may be, head and body, chunked or not (a compressed body
    // counts as decoded). A larger one ends the call with an upstream error naming this limit
    // (--gateway-max-response-bytes) and its connection is closed. A page is at most 1000
    // rows: ~0.3-3 MB; an action's answer is usually a few kB.
    std::size_t max_response_bytes = std::size_t{16} << 20;
    // Connections open at once, in two pools: GETs (reads, discovery, the checks around an
    // action) and POSTs (actions, which may wait tens of seconds each). A call that finds its
    // pool busy waits for a connection within its budget.
    std::size_t read_connections = 80;
    std::size_t action_connections = 256;
    // The body bytes all connections are receiving at once: with hundreds of connections a
    // broken gateway sending large answers on each would otherwise hold connections times
    // max_response_bytes. The answer that passes it ends with an upstream error naming it.
    std::size_t max_answers_bytes = std::size_t{256} << 20;
};

struct ReadQuery {
    // `{}` everywhere so designated initializers may omit fields under -Wextra -Werror.
    std::string resource{};
    std::string client_id{};  // "" for clients
    std::optional<int> limit{};
    std::optional<std::int64_t> offset{};
    std::string order{};      // "" = gateway default
    std::string direction{};  // "asc" | "desc" | ""
    std::string filter_field{};
    std::string filter_value{};
};

// A read's answer as the gateway sent it: the tool layer parses `body` itself (simdjson on the
// hot path), so nothing is parsed twice.
struct Page {
    std::string body;
    Pagination pagination;
    std::string what{};    // the read, as messages name it ("keywords read for demo-bulk")
    int http_status = 0;
};

struct ActionResult {
    nlohmann::json data;      // the answer's `data` (the rest of the answer is not kept)
    int status_code = 200;
    int attempts = 1;         // POSTs actually sent
    bool recovered = false;   // the record was found by verification after an ambiguous failure
    std::string note{};       // recovered: what failed and what showed that it ran anyway
};

// What find_lost_action saw: whether the gateway shows the record a lost call made.
struct LostAction {
    bool ran = false;     // the gateway shows the record (in `row`)
    nlohmann::json row;   // ran: the record
    std::string detail;   // what the check saw, for messages
    std::string hint;     // how a person checks whether it ran
};

struct DiscoveredAction {
    std::string action;
    std::string description;
    std::vector<std::string> required_fields;
    bool operator==(const DiscoveredAction&) const = default;
};

struct Discovery {
    std::vector<std::string> resources;
    std::vector<DiscoveredAction> actions;
    // The key's scopes when discovery tells them (the spec names no such member; accepted:
    // `"scopes": [...]` or `"key": {"scopes": [...]}` at the top level), nullopt when it does not.
    std::optional<std::vector<std::string>> key_scopes;
    bool has_resource(std::string_view name) const;
    const DiscoveredAction* find_action(std::string_view name) const;
    bool operator==(const Discovery&) const = default;
};

class Client {
public:
    // Validates the configuration (throws Error{config} with one clear message for a
    // malformed URL); does not touch the network. `clock` stamps the actions' send times,
    // ages cached discovery and idle connections, and is what every wait waits on: backoffs,
    // and the periods of start_discovery_refresh and serve_while_away (a test steps those with
    // a ManualClock whose sleeps wait until it is advanced). Without a clock: the process's.
    explicit Client(Config config, const base::Clock* clock = nullptr);
    Client(Config config, const base::Clock& clock) : Client(std::move(config), &clock) {}
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    const Config& config() const;
    // The clock its deadlines run on (a caller opening a DeadlineScope around several calls
    // uses it, so that the scope and the calls agree).
    const base::Clock& clock() const;

    // One GET. Retries 5xx, network errors and timeouts with backoff; honours 429 Retry-After;
    // never retries another 4xx. Throws Error.
    Page read(const ReadQuery& query, std::stop_token stop = {});

    // The same GET (same retries and errors) without looking inside the answer: `pagination`
    // is left unset (present = false), and `body` has simdjson's padding. For a caller that
    // parses the page anyway and reads `data` and `pagination` in that one pass.
    Page read_body(const ReadQuery& query, std::stop_token stop = {});

    // Walks a page from read_body (see page_walk.hpp): its rows to on_row and its
    // `pagination` into page.pagination, in one parse. Throws Error{upstream} naming the read,
    // with an excerpt of the body, when the page is malformed.
    WalkResult walk(Page& page, const WalkOptions& options, const RowVisitor& on_row) const;

    // Pages through the resource with limit 1000 (offset += limit) until has_more is false,
    // handing each row's raw JSON text to on_row; on_row returns false to stop early.
    // Memory stays bounded by one page. Returns the last page's pagination. The walk is one
    // call (one budget, Config::call_timeout, for every page); it stops with an upstream error
    // after 1,000 pages, or at a page that begins with the previous page's rows (a gateway
    // that ignores offset).
    Pagination for_each_row(ReadQuery query,
                            const std::function<bool(std::string_view row_json)>& on_row,
                            std::stop_token stop = {});

    // One POST action {action, client_id, ...fields}. Never blindly re-sent: see actions.hpp.
    // HTTP 200 with status:"error" throws Error{upstream} carrying status_code and data.
    // `stop` ends the call only before anything is sent (Error{cancelled}); once a POST may
    // leave, the exchange and its checks run to their end within the call's budget whatever the
    // caller does, so the outcome is known and kept rather than guessed. Only `cut_exchange`
    // ends it then (an error that carries what was sent): for work whose own durable record
    // is reconciled with the gateway after a stop (audit jobs), which passes its stop here.
    ActionResult act(std::string_view action, std::string_view client_id,
                     const nlohmann::json& fields, std::stop_token stop = {},
                     std::optional<std::stop_token> cut_exchange = std::nullopt);
    // A call that may have sent `action` with `fields` at or after `since` ended without its
    // answer being kept (its process stopped, or the state store failed, between the POST and
    // storing the result): whether the gateway shows the record it made, by the same check as
    // after an ambiguous failure (actions.hpp). Sends nothing; throws Error when the read fails.
    LostAction find_lost_action(std::string_view action, std::string_view client_id,
                                const nlohmann::json& fields,
                                std::chrono::system_clock::time_point since,
                                std::stop_token stop = {});

    // The deployment's resources and actions: fetched on first use, cached for discovery_ttl.
    std::shared_ptr<const Discovery> discovery(std::stop_token stop = {});
    // Fetches discovery now; returns true when it differs from the cached one.
    bool refresh_discovery(std::stop_token stop = {});
    // Refreshes discovery every `period` on a background thread; calls on_change when it
    // differs. Stopped by the destructor.
    void start_discovery_refresh(std::chrono::milliseconds period, std::function<void()> on_change);
    // Stops and joins the refresher (before whatever on_change uses goes away).
    void stop_discovery_refresh();
    // How the gateway's discovery last went (readiness): the time since it last answered
    // (nullopt: never), and the last fetch's error when that fetch failed ("" otherwise).
    struct DiscoveryHealth {
        std::optional<std::chrono::milliseconds> since_answer;
        std::string failure;
    };
    DiscoveryHealth discovery_health() const;

    // Whether the gateway refused a POST because the key lacks the write scope (a 403 whose
    // text says so; a 403 for a client not linked to the agency is not one). Learned once, kept
    // for the life of the client: a key's scope does not grow without a new key.
    bool write_denied() const;
    // Called (from the thread whose POST learned it) when write_denied() turns true; one
    // listener, replaced by the next call; an empty function removes it.
    void on_write_denied(std::function<void()> listener);

    // Start-up check: fetches discovery and turns any failure into one clear Error{config or
    // unavailable or auth} message naming the URL (never the key). `stop` ends it early
    // (Error{cancelled}).
    void check(std::stop_token stop = {});

    // For a server that starts before its gateway can be reached (a laptop before its VPN):
    // `provisional` stands for discovery, every request fails at once with Error{unavailable}
    // saying `why` and that the server keeps trying, and a background thread runs check()
    // with backoff (1 s doubling to `max_wait`) until it passes; then discovery is the
    // gateway's, requests go through, and on_answer runs (on that thread). discovery_health()
    // reports the failure meanwhile. Stopped by the destructor.
    void serve_while_away(const std::string& why, std::shared_ptr<const Discovery> provisional,
                          std::chrono::milliseconds max_wait, std::function<void()> on_answer);
    // Whether serve_while_away's gateway has not answered yet.
    bool away() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace agency::gateway
