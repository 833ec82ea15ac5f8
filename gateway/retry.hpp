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

namespace agency::gateway {

struct RetrySchedule {
    int max_attempts = 6;                               // at least 1
    std::chrono::milliseconds backoff_base{250};        // delay = base * 2^retry, with jitter
    std::chrono::milliseconds max_retry_after{60'000};  // cap on a 429's Retry-After wait
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

// Waits `delay` unless `stop` fires first; false when it fired.
bool sleep_for(std::chrono::milliseconds delay, const std::stop_token& stop);

// "250 ms": how delays and timeouts read in messages.
std::string ms_text(std::chrono::milliseconds delay);

// An attempt that failed and may be repeated.
struct Retry {
    // What happened and what follows, for the log line: "HTTP 503; retrying" reads
    // "gateway <what>: HTTP 503; retrying in 250 ms (attempt 2 of 6)".
    std::string situation;
    // A 429's Retry-After header: when set, it replaces the backoff (if it parses).
    std::optional<std::string> retry_after{};
};

struct RetryHooks {
    std::function<void()> throw_cancelled;         // throws the caller's error when `stop` fires
    std::function<void(const std::string&)> warn;  // logs a retry (the caller redacts)
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
