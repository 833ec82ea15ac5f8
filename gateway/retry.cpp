#include "gateway/retry.hpp"

#include <algorithm>
#include <charconv>
#include <random>
#include <stdexcept>

#include "base/log.hpp"

namespace agency::gateway {

namespace {

using std::chrono::milliseconds;

constexpr auto kMaxBackoff = milliseconds(30'000);

thread_local const DeadlineScope* t_deadline = nullptr;

[[noreturn]] void cancel(const RetryHooks& hooks) {
    hooks.throw_cancelled();
    throw std::logic_error("RetryHooks::throw_cancelled returned");
}

// "HTTP 503: boom; retrying" -> "gateway answered 503"; a failure without an answer keeps its
// own words up to the first ';' ("gateway: no answer within 10 s").
std::string retry_note(const Retry& retry) {
    if (retry.http_status != 0) return "gateway answered " + std::to_string(retry.http_status);
    return "gateway: " + retry.situation.substr(0, retry.situation.find(';'));
}

}  // namespace

DeadlineScope::DeadlineScope(const base::Clock& clock, milliseconds budget)
    : DeadlineScope(clock, clock.steady() + budget, budget) {}

DeadlineScope::DeadlineScope(const base::Clock& clock, SteadyTime deadline, milliseconds budget)
    : clock_(&clock), deadline_(deadline), budget_(budget), outer_(t_deadline) {
    if (outer_ != nullptr && outer_->deadline_ <= deadline_) {
        clock_ = outer_->clock_;
        deadline_ = outer_->deadline_;
        budget_ = outer_->budget_;
    }
    t_deadline = this;
}

DeadlineScope::~DeadlineScope() {
    t_deadline = outer_;
}

const DeadlineScope* DeadlineScope::current() {
    return t_deadline;
}

milliseconds DeadlineScope::left() const {
    return std::chrono::duration_cast<milliseconds>(deadline_ - clock_->steady());
}

milliseconds DeadlineScope::cap(milliseconds timeout, milliseconds floor) const {
    return std::max(std::min(timeout, left()), std::min(floor, timeout));
}

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

std::string ms_text(milliseconds delay) {
    if (delay < milliseconds(1000)) return std::to_string(delay.count()) + " ms";
    const long long tenths = (delay.count() + 50) / 100;
    if (tenths % 10 == 0) return std::to_string(tenths / 10) + " s";
    return log::format("{}.{} s", tenths / 10, tenths % 10);
}

void run_with_retries(const RetrySchedule& schedule, std::string_view what,
                      const std::stop_token& stop,
                      const std::function<std::optional<Retry>(int attempt, bool last)>& attempt,
                      const RetryHooks& hooks) {
    const DeadlineScope* deadline = schedule.deadline;
    // The deadline's clock, for reading the time and for the backoff (a test's clock steps).
    const base::Clock& clock =
        base::Clock::or_system(deadline != nullptr ? &deadline->clock() : nullptr);
    const auto now = [&] { return clock.steady(); };
    const auto started = now();
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
        // No attempt may start past the deadline: one that would is not made at all.
        if (deadline != nullptr && now() + delay + kMinAttemptTime > deadline->deadline()) {
            const RetryEnd end{
                .attempts = n + 1,
                .elapsed = std::chrono::duration_cast<milliseconds>(now() - started),
                .budget = deadline->budget(),
                .wait = delay};
            if (hooks.throw_out_of_time) hooks.throw_out_of_time(*retry, end);
            throw std::logic_error("RetryHooks::throw_out_of_time returned");
        }
        hooks.warn(log::format("gateway {}: {} in {} (attempt {} of {})", what, retry->situation,
                               ms_text(delay), n + 2, schedule.max_attempts));
        if (hooks.on_retry) {
            hooks.on_retry(log::format("{}; attempt {} of {} in {}", retry_note(*retry), n + 2,
                                       schedule.max_attempts, ms_text(delay)));
        }
        if (!clock.sleep_for(delay, stop)) cancel(hooks);
    }
}

}  // namespace agency::gateway
