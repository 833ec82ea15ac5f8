// A Clock the test moves by hand: expiry and deadlines without sleeping.
#pragma once

#include <atomic>
#include <chrono>

#include "base/clock.hpp"

namespace agency::testing {

class ManualClock final : public base::Clock {
public:
    // Starts at the real time, so that what it stamps looks like a real stamp.
    ManualClock()
        : wall_(std::chrono::system_clock::now()), steady_(std::chrono::steady_clock::now()) {}
    // Starts at `wall` (a fixed "today" for answers that say how old their data is).
    explicit ManualClock(std::chrono::system_clock::time_point wall)
        : wall_(wall), steady_(std::chrono::steady_clock::now()) {}

    std::chrono::system_clock::time_point wall() const override { return wall_.load(); }
    std::chrono::steady_clock::time_point steady() const override { return steady_.load(); }

    void advance(std::chrono::milliseconds by) const {
        wall_.store(wall_.load() + by);
        steady_.store(steady_.load() + by);
    }
    // A wait on this clock moves it on at once (userver's MockSleep): what waits a backoff on
    // it takes no real time, and the time it reads afterwards is as if it had waited.
    bool sleep_for(std::chrono::milliseconds duration,
                   const std::stop_token& stop = {}) const override {
        if (stop.stop_requested()) return false;
        if (duration.count() > 0) advance(duration);
        return !stop.stop_requested();
    }

private:
    mutable std::atomic<std::chrono::system_clock::time_point> wall_;
    mutable std::atomic<std::chrono::steady_clock::time_point> steady_;
};

}  // namespace agency::testing
