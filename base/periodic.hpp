// The one loop for work a part repeats in the background on a clock: the lease keepers of audit
// jobs (tools/pipeline/jobs.cpp) and of tasks (server/task_sharing.cpp), which renew this
// instance's leases and take over the work of instances that died, and the gateway's discovery
// refresh. Waiting on a base::Clock rather than a condition variable of its own, a loop is
// stepped by a test's ManualClock (Sleeps::until_advanced) instead of spending real periods.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <thread>

#include "base/clock.hpp"

namespace agency::base {

class Periodic {
public:
    struct Options {
        std::chrono::milliseconds period{1000};
        // The first round runs when the loop starts; otherwise one period later.
        bool at_once = true;
        // Names the loop in the warning logged when a round throws ("<what>: <error>"); the
        // next round runs on time all the same (a store away for a moment).
        std::string what = "background round";
        // Waited on between rounds; the process's when null. Must outlive the loop.
        const Clock* clock = nullptr;
    };
    using Round = std::function<void(std::stop_token)>;

    Periodic() = default;  // no loop
    // Starts a thread running `round` every `options.period` until stop().
    Periodic(Options options, Round round);
    Periodic(Periodic&&) = default;
    Periodic& operator=(Periodic&&) = default;  // stops and joins the loop it replaces
    ~Periodic() = default;                      // stops and joins (the round in progress ends)

    void stop();
    bool running() const { return thread_.joinable(); }

private:
    std::jthread thread_;
};

}  // namespace agency::base
