// When and how often the client repeats a request whose failure makes a repeat safe: the
// attempts, the backoff between them, a 429's Retry-After, and the caller's stop token. Every
// request the client sends (reads, discovery, the reads that check an action after an ambiguous
// failure, action POSTs) goes through run_with_retries.
//
// Not to be confused with actions.hpp's ResendRule, which decides whether an action may be sent
// again at all; the caller's attempt makes that decision and only then asks for a Retry here.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "base/clock.hpp"

namespace agency::gateway {

using SteadyTime = std::chrono::steady_clock::time_point;

// The least time an attempt is given: a retry with less left before the deadline is not made.
inline constexpr std::chrono::milliseconds kMinAttemptTime{250};

// The end of the gateway operation running on this thread: a client's public call opens one
// (reads, an action with its checks, discovery), and everything it sends, nested retry loops
// included, stays inside it. A scope opened inside another keeps the outer, earlier end.
// Thread-local, so a call's deadline never leaks into another thread's call.
class DeadlineScope {
public:
    DeadlineScope(const base::Clock& clock, std::chrono::milliseconds budget);
    // Another thread's part of a call: the same end and budget (a scan's pages read ahead).
    DeadlineScope(const base::Clock& clock, SteadyTime deadline, std::chrono::milliseconds budget);
    ~DeadlineScope();
    DeadlineScope(const DeadlineScope&) = delete;
    DeadlineScope& operator=(const DeadlineScope&) = delete;

    // The innermost scope of this thread, or null.
    static const DeadlineScope* current();

    const base::Clock& clock() const { return *clock_; }
    SteadyTime deadline() const { return deadline_; }
    std::chrono::milliseconds budget() const { return budget_; }
    // Time left before the deadline (negative once past it).
    std::chrono::milliseconds left() const;
    // `timeout` cut to the time left, never below `floor` (a request needs some time at all).
    std::chrono::milliseconds cap(std::chrono::milliseconds timeout,
                                  std::chrono::milliseconds floor = kMinAttemptTime) const;

private:
    const base::Clock* clock_;
    SteadyTime deadline_;
    std::chrono::milliseconds budget_;
    const DeadlineScope* outer_;
};

struct RetrySchedule {
    int max_attempts = 6;                               // at least 1
    std::chrono::milliseconds backoff_base{250};        // delay = base * 2^retry, with jitter
    std::chrono::milliseconds max_retry_after{60'000};  // cap on a 429's Retry-After wait
    // When set, no attempt starts and no backoff is waited past its deadline.
    const DeadlineScope* deadline = nullptr;
};

// Whether a read may be repeated after this answer: no HTTP answer (0), 429 or a 5xx. Any other
// 4xx is final.
bool is_retryable_status(int http_status);

// base * 2^retry (capped at 30 s), then a uniform jitter of +-50% so that clients which failed
// together spread out.
std::chrono::milliseconds backoff_delay(std::chrono::milliseconds base, int retry);

// A Retry-After header in seconds (the HTTP-date form is not used by the gateway), capped at
// `cap`; nullopt when absent or malformed.
std::optional<std::chrono::milliseconds> retry_after_delay(std::string_view header,
                                                           std::chrono::milliseconds cap);

// How delays and timeouts read in messages: "250 ms" under a second, else "1.2 s", "30 s".
std::string ms_text(std::chrono::milliseconds delay);

// An attempt that failed and may be repeated.
struct Retry {
    // What happened and what follows, for the log line: "HTTP 503; retrying" reads
    // "gateway <what>: HTTP 503; retrying in 250 ms (attempt 2 of 6)".
    std::string situation;
    // A 429's Retry-After header: when set, it replaces the backoff (if it parses).
    std::optional<std::string> retry_after{};
    // What the gateway answered (0: no HTTP answer), for the error when no time is left.
    int http_status = 0;
    // An action that is known not to have run (the error when no time is left says so).
    bool not_run = false;
};

// How far the attempts got when the deadline left no room for another.
struct RetryEnd {
    int attempts = 0;                    // made so far
    std::chrono::milliseconds elapsed{};  // since the first began
    std::chrono::milliseconds budget{};   // the operation's whole budget
    std::chrono::milliseconds wait{};     // the backoff (or Retry-After) that did not fit
};

struct RetryHooks {
    std::function<void()> throw_cancelled;         // throws the caller's error when `stop` fires
    std::function<void(const std::string&)> warn;  // logs a retry (the caller redacts)
    // Throws the final error when a Retry is asked for but its wait would cross the deadline.
    std::function<void(const Retry&, const RetryEnd&)> throw_out_of_time{};
    // Before each wait, for whoever follows the call: "gateway answered 503; attempt 2 of 6
    // in 1.2 s" (progress notifications). May be empty.
    std::function<void(std::string_view)> on_retry{};
};

// Calls attempt(n, last) for n = 0, 1, ... until it returns nullopt (it has its result, kept by
// the caller) or throws. On its last try (`last`) an attempt must throw its own error rather
// than ask for a Retry: the caller knows what failed (a Retry then is a logic_error). Before
// each attempt and during each wait, a fired `stop` calls hooks.throw_cancelled().
void run_with_retries(const RetrySchedule& schedule, std::string_view what,
                      const std::stop_token& stop,
                      const std::function<std::optional<Retry>(int attempt, bool last)>& attempt,
                      const RetryHooks& hooks);

}  // namespace agency::gateway
