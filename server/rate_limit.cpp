#include "server/rate_limit.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace agency::mcp {

RateLimit parse_rate_limit(std::string_view text, int burst) {
    const auto refuse = [&] {
        return std::invalid_argument(
            "rate limit \"" + std::string(text.substr(0, 64)) +
            "\": want off, 0, or calls per minute as N or N/minute (or N/second), N a whole "
            "number up to 1000000");
    };
    if (text == "off" || text == "0") return {};
    const auto slash = text.find('/');
    const std::string_view number = text.substr(0, slash);
    const std::string_view unit =
        slash == std::string_view::npos ? std::string_view("minute") : text.substr(slash + 1);
    int n = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || end != number.data() + number.size() || n < 0 || n > 1'000'000)
        throw refuse();
    int per_minute = 0;
    if (unit == "minute" || unit == "min" || unit == "m")
        per_minute = n;
    else if (unit == "second" || unit == "sec" || unit == "s")
        per_minute = n > 1'000'000 / 60 ? 1'000'000 : n * 60;
    else
        throw refuse();
    if (burst < 0 || burst > 1'000'000)
        throw std::invalid_argument("rate limit burst: want a whole number from 0 to 1000000");
    return {.per_minute = per_minute, .burst = burst};
}

CallRateLimiter::CallRateLimiter(RateLimit limit, const base::Clock& clock,
                                 std::size_t max_buckets)
    : limit_(limit),
      clock_(clock),
      max_buckets_(std::max<std::size_t>(1, max_buckets)),
      capacity_(limit.burst > 0 ? limit.burst : std::max(1, limit.per_minute)),
      per_ms_(limit.per_minute / 60'000.0) {}

double CallRateLimiter::refilled(const Bucket& b, std::int64_t now_ms) const {
    return std::min(capacity_, b.tokens + static_cast<double>(now_ms - b.at_ms) * per_ms_);
}

// A bucket refilled to the top holds nothing a new one would not: it can go.
void CallRateLimiter::evict(std::int64_t now_ms) {
    std::erase_if(buckets_, [&](const auto& entry) {
        return refilled(entry.second, now_ms) >= capacity_;
    });
    while (buckets_.size() >= max_buckets_) {
        auto oldest = std::min_element(buckets_.begin(), buckets_.end(), [](const auto& a,
                                                                            const auto& b) {
            return a.second.at_ms < b.second.at_ms;
        });
        buckets_.erase(oldest);
    }
}

std::optional<std::chrono::seconds> CallRateLimiter::take(const std::string& principal,
                                                          int units) {
    if (!limit_.on() || units <= 0) return std::nullopt;
    const std::int64_t now = clock_.steady_ms();
    std::lock_guard lock(mutex_);
    // Swept once a minute, or at the bound: full buckets cost nothing to drop.
    if (now >= next_sweep_ms_ || buckets_.size() >= max_buckets_) {
        if (buckets_.size() >= max_buckets_ || now >= next_sweep_ms_) evict(now);
        next_sweep_ms_ = now + 60'000;
    }
    auto [it, fresh] = buckets_.try_emplace(principal, Bucket{capacity_, now});
    Bucket& b = it->second;
    b.tokens = refilled(b, now);
    b.at_ms = now;
    // What must be in the bucket: the cost, or a full bucket for a cost beyond its size.
    const double need = std::min(capacity_, static_cast<double>(units));
    if (b.tokens >= need) {
        b.tokens -= units;
        return std::nullopt;
    }
    const double wait_ms = (need - b.tokens) / per_ms_;
    return std::chrono::seconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(
                                                              std::ceil(wait_ms / 1000.0))));
}

std::size_t CallRateLimiter::buckets() const {
    std::lock_guard lock(mutex_);
    return buckets_.size();
}

}  // namespace agency::mcp
