// The program's one source of time. Everything that stamps, expires or waits asks a Clock, so a
// test can drive time through a constructor parameter (tests/support/manual_clock.hpp) instead
// of sleeping; production code uses Clock::system().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace agency::base {

class Clock {
public:
    virtual ~Clock() = default;
    // Wall time: what is stored, shown, or compared across processes (expiry, created_at).
    virtual std::chrono::system_clock::time_point wall() const = 0;
    // Monotonic time: deadlines and intervals inside this process.
    virtual std::chrono::steady_clock::time_point steady() const = 0;

    std::int64_t unix_ms() const;
    std::int64_t unix_s() const;
    std::int64_t steady_ms() const;

    // The real clocks; lives for the whole program.
    static const Clock& system();
};

// RFC 3339 UTC with milliseconds: "2026-11-23T10:00:00.123Z".
std::string iso8601_ms(std::int64_t unix_ms);

// "YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]" (UTC) or "YYYY-MM-DD"; nullopt when it is neither
// (times the gateway stamps its records with).
std::optional<std::chrono::sys_seconds> parse_utc_time(std::string_view text);
// "YYYY-MM-DDTHH:MM:SSZ", to the second.
std::string format_utc_time(std::chrono::system_clock::time_point at);

}  // namespace agency::base
