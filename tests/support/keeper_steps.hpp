// Stepping the lease keepers of several instances on one ManualClock (Sleeps::until_advanced):
// each step advances the clock by the keepers' period (lease / 3) once every one of them is
// asleep in its wait, so a step is one round of each keeper, in no real time. The clock's waits
// must be the keepers' only (what else waits gets a clock of its own).
#pragma once

#include <chrono>

#include <gtest/gtest.h>

#include "tests/support/manual_clock.hpp"
#include "tests/support/wait.hpp"

namespace agency::testing {

class KeeperSteps {
public:
    // `waits_before`: the waits of keepers that have stopped since (a dead instance's).
    KeeperSteps(const ManualClock& clock, int keepers, int waits_before = 0)
        : clock_(clock), keepers_(keepers), waits_before_(waits_before) {}

    void run(std::chrono::milliseconds period, int steps) {
        for (int i = 0; i < steps; ++i, ++taken_) {
            settle();
            if (::testing::Test::HasFatalFailure()) return;
            clock_.advance(period);
        }
    }
    // Returns once every keeper waits again: at its start, or after its round of the last step.
    void settle() {
        ASSERT_TRUE(eventually([&] { return clock_.waits_begun() >= asleep(); },
                               std::chrono::seconds(8), std::chrono::milliseconds(2)))
            << "step " << taken_ << ": " << clock_.waits_begun() << " waits, not " << asleep();
    }
    // The waits begun on the clock once every keeper is asleep after the steps taken.
    int asleep() const { return waits_before_ + keepers_ * (taken_ + 1); }

private:
    const ManualClock& clock_;
    const int keepers_;
    const int waits_before_;
    int taken_ = 0;
};

}  // namespace agency::testing
