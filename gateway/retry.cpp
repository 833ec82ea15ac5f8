#include "gateway/retry.hpp"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <random>
#include <stdexcept>

#include <spdlog/fmt/fmt.h>

namespace agency::gateway {

namespace {

using std::chrono::milliseconds;

constexpr auto kMaxBackoff = milliseconds(30'000);

[[noreturn]] void cancel(const RetryHooks& hooks) {
    hooks.throw_cancelled();
    throw std::logic_error("RetryHooks::throw_cancelled returned");
}

}  // namespace

bool is_retryable_status(int http_status) {
    return http_status == 0 || http_status == 429 || http_status >= 500;
}

milliseconds backoff_delay(milliseconds base, int retry) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    long long raw = base.count();
    for (int i = 0; i < retry && raw < kMaxBackoff.count(); ++i) raw *= 2;
    raw = std::min<long long>(raw, kMaxBackoff.count());
    if (raw <= 1) return milliseconds(raw);
    std::uniform_int_distribution<long long> jitter(raw / 2, raw + raw / 2);
    return milliseconds(jitter(rng));
}

std::optional<milliseconds> retry_after_delay(std::string_view header, milliseconds cap) {
    long long seconds = 0;
    const auto* first = header.data();
    const auto* last = header.data() + header.size();
    const auto [ptr, ec] = std::from_chars(first, last, seconds);
    if (header.empty() || ec != std::errc{} || ptr != last || seconds < 0) return std::nullopt;
    if (seconds > cap.count() / 1000) return cap;
    return std::min(milliseconds(seconds * 1000), cap);
}

bool sleep_for(milliseconds delay, const std::stop_token& stop) {
    if (delay.count() > 0) {
        std::mutex mu;
        std::condition_variable_any cv;
        std::unique_lock lock(mu);
        cv.wait_for(lock, stop, delay, [] { return false; });
    }
    return !stop.stop_requested();
}

std::string ms_text(milliseconds delay) {
    return std::to_string(delay.count()) + " ms";
}

void run_with_retries(const RetrySchedule& schedule, std::string_view what,
                      const std::stop_token& stop,
                      const std::function<std::optional<Retry>(int attempt, bool last)>& attempt,
                      const RetryHooks& hooks) {
    for (int n = 0;; ++n) {
        if (stop.stop_requested()) cancel(hooks);
        const bool last = n + 1 >= schedule.max_attempts;
        const auto retry = attempt(n, last);
        if (!retry) return;
        if (last) throw std::logic_error("a gateway request asked for a retry on its last attempt");
        auto delay = backoff_delay(schedule.backoff_base, n);
        if (retry->retry_after) {
            delay = retry_after_delay(*retry->retry_after, schedule.max_retry_after).value_or(delay);
        }
        hooks.warn(fmt::format("gateway {}: {} in {} (attempt {} of {})", what, retry->situation,
                               ms_text(delay), n + 2, schedule.max_attempts));
        if (!sleep_for(delay, stop)) cancel(hooks);
    }
}

}  // namespace agency::gateway
