// Waiting in a test for what another thread or process does: one poll loop with a deadline, the
// one place such a wait sleeps (issue 50). Time the code under test reads from a Clock is a
// ManualClock's instead, stepped (tests/support/manual_clock.hpp).
#pragma once

#include <chrono>
#include <thread>

namespace agency::testing {

// Polls `done` every `step` until it holds or `limit` has passed; whether it held. A test
// asserts the result, so that a wait that timed out fails where it waited.
template <class Done>
bool eventually(Done&& done, std::chrono::milliseconds limit = std::chrono::seconds(10),
                std::chrono::milliseconds step = std::chrono::milliseconds(5)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= until) return static_cast<bool>(done());
        std::this_thread::sleep_for(step);
    }
    return true;
}

}  // namespace agency::testing
