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

    void advance(std::chrono::milliseconds by) {
        wall_.store(wall_.load() + by);
        steady_.store(steady_.load() + by);
    }

private:
    std::atomic<std::chrono::system_clock::time_point> wall_;
    std::atomic<std::chrono::steady_clock::time_point> steady_;
};

}  // namespace agency::testing
