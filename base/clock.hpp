// The program's one source of time. Everything that stamps, expires or waits asks a Clock, so a
// test can drive time through a constructor parameter (tests/support/manual_clock.hpp) instead
// of sleeping; production code uses Clock::system().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stop_token>
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

    // Waits `duration`, or less when `stop` is requested; false when it was. The real clock
    // blocks; a test's clock (tests/support/manual_clock.hpp) moves itself on instead, so that a
    // backoff waited on it costs no real time. Waits that tests step go through here (issue 50).
    virtual bool sleep_for(std::chrono::milliseconds duration,
                           const std::stop_token& stop = {}) const;

    // The clock a part was given, or the process's when it was given none (tests give a
    // ManualClock; only app/ and base/ name the system's clock itself).
    static const Clock& or_system(const Clock* given) { return given ? *given : system(); }

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
