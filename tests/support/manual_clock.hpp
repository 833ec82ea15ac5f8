// A Clock the test moves by hand: expiry and deadlines without sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/clock.hpp"

namespace agency::testing {

class ManualClock final : public base::Clock {
public:
    // What a wait on this clock does.
    enum class Sleeps {
        // It moves the clock on at once (userver's MockSleep): a backoff waited on it takes no
        // real time, and the time read afterwards is as if it had waited.
        advance,
        // It blocks until the test has advanced the clock past its end (go-sdk's synctest): for
        // the periodic loops (discovery refresh, waiting for a gateway that is away), which on
        // an advancing clock would run again at once and spin. Note that every wait of the part
        // given this clock then blocks, its backoffs included.
        until_advanced,
    };

    // Starts at the real time, so that what it stamps looks like a real stamp.
    explicit ManualClock(Sleeps sleeps = Sleeps::advance)
        : wall_(std::chrono::system_clock::now()),
          steady_(std::chrono::steady_clock::now()),
          sleeps_(sleeps) {}
    // Starts at `wall` (a fixed "today" for answers that say how old their data is).
    explicit ManualClock(std::chrono::system_clock::time_point wall)
        : wall_(wall), steady_(std::chrono::steady_clock::now()), sleeps_(Sleeps::advance) {}

    std::chrono::system_clock::time_point wall() const override { return wall_.load(); }
    std::chrono::steady_clock::time_point steady() const override { return steady_.load(); }

    void advance(std::chrono::milliseconds by) const {
        {
            std::lock_guard lock(mu_);
            wall_.store(wall_.load() + by);
            steady_.store(steady_.load() + by);
        }
        moved_.notify_all();
    }

    bool sleep_for(std::chrono::milliseconds duration,
                   const std::stop_token& stop = {}) const override {
        if (stop.stop_requested()) return false;
        if (duration.count() <= 0) return true;
        if (sleeps_ == Sleeps::advance) {
            advance(duration);
            return !stop.stop_requested();
        }
        std::unique_lock lock(mu_);
        const auto until = steady_.load() + duration;
        ++waits_begun_;
        return moved_.wait(lock, stop, [&] { return steady_.load() >= until; });
    }

    // How many waits have begun on this clock (Sleeps::until_advanced). A test waits for the
    // loop's n-th wait to begin before it advances the clock, so that the step ends that wait
    // rather than passing before it began (the count moves under the lock advance() takes).
    int waits_begun() const {
        std::lock_guard lock(mu_);
        return waits_begun_;
    }

private:
    mutable std::atomic<std::chrono::system_clock::time_point> wall_;
    mutable std::atomic<std::chrono::steady_clock::time_point> steady_;
    const Sleeps sleeps_;
    mutable std::mutex mu_;
    mutable std::condition_variable_any moved_;
    mutable int waits_begun_ = 0;
};

}  // namespace agency::testing
