// The per-principal limit on what a caller costs (MCP asks servers to rate-limit tool
// invocations): a token bucket per caller, so one runaway client cannot starve the others. The
// bucket holds units: a tool call costs one, a resources/read, prompts/get or
// completion/complete what it may cost the gateway (one unit per gateway read it may make, at
// least one; docs/operations.md, "Rate limit"). Time comes from a base::Clock (tests drive a
// ManualClock); idle buckets are dropped, so memory stays bounded whatever the number of
// callers. Per process: instances behind a balancer each keep their own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.hpp"

namespace agency::mcp {

struct RateLimit {
    int per_minute = 0;  // sustained units (tool calls) per minute per principal; 0: no limit
    int burst = 0;       // units allowed at once (the bucket's size); 0: per_minute
    bool on() const { return per_minute > 0; }
};

// "off" or "0": no limit; "N" or "N/minute" (or "N/min", "N/m"): N calls a minute; "N/second"
// ("N/s"): N a second. Throws std::invalid_argument saying what is accepted.
RateLimit parse_rate_limit(std::string_view text, int burst);

class CallRateLimiter {
public:
    // `clock` must outlive the limiter. At most `max_buckets` callers are tracked: beyond, the
    // full (idle) buckets go first, then the least recently used.
    CallRateLimiter(RateLimit limit, const base::Clock& clock, std::size_t max_buckets = 10'000);

    const RateLimit& limit() const { return limit_; }
    // The bucket's size: the most units a caller may spend at once.
    int burst() const { return static_cast<int>(capacity_); }
    // Takes `units` from `principal`'s bucket: nullopt when allowed, else how long until they
    // would be (at least 1 s, whole seconds as Retry-After says them); a refusal takes nothing.
    // A request costing more than the bucket holds is allowed when the bucket is full, leaving
    // it in debt: the sustained rate holds whatever a request costs.
    std::optional<std::chrono::seconds> take(const std::string& principal, int units = 1);
    // Buckets held now (for tests: the bound on memory).
    std::size_t buckets() const;

private:
    struct Bucket {
        double tokens = 0;
        std::int64_t at_ms = 0;  // steady time of the last refill
    };
    double refilled(const Bucket& b, std::int64_t now_ms) const;
    void evict(std::int64_t now_ms);

    RateLimit limit_;
    const base::Clock& clock_;
    std::size_t max_buckets_;
    double capacity_;
    double per_ms_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Bucket> buckets_;
    std::int64_t next_sweep_ms_ = 0;
};

}  // namespace agency::mcp
