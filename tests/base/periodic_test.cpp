// base::Periodic, the one loop of the lease keepers and the discovery refresh: a round per
// period of the clock it was given, a round that throws does not end it, and stopping ends the
// wait at once rather than after a period.
#include <atomic>
#include <chrono>
#include <stdexcept>

#include <gtest/gtest.h>

#include "base/periodic.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/wait.hpp"

namespace {

using agency::base::Periodic;
using agency::testing::eventually;
using agency::testing::ManualClock;
using namespace std::chrono_literals;

TEST(Periodic, RunsARoundAtOnceAndThenOncePerPeriodOfItsClock) {
    const ManualClock clock(ManualClock::Sleeps::until_advanced);
    std::atomic<int> rounds{0};
    Periodic loop({.period = 10s, .clock = &clock}, [&](std::stop_token) { ++rounds; });
    ASSERT_TRUE(eventually([&] { return clock.waits_begun() == 1; }));
    EXPECT_EQ(rounds.load(), 1) << "the first round runs when the loop starts";
    for (int period = 2; period <= 4; ++period) {
        clock.advance(9s);  // not yet a period: the same wait goes on
        EXPECT_EQ(clock.waits_begun(), period - 1);
        EXPECT_EQ(rounds.load(), period - 1);
        clock.advance(1s);
        ASSERT_TRUE(eventually([&] { return clock.waits_begun() == period; }));
        EXPECT_EQ(rounds.load(), period);
    }
}

TEST(Periodic, AtOnceFalseWaitsAPeriodFirst) {
    const ManualClock clock(ManualClock::Sleeps::until_advanced);
    std::atomic<int> rounds{0};
    Periodic loop({.period = 5s, .at_once = false, .clock = &clock},
                  [&](std::stop_token) { ++rounds; });
    ASSERT_TRUE(eventually([&] { return clock.waits_begun() == 1; }));
    EXPECT_EQ(rounds.load(), 0);
    clock.advance(5s);
    ASSERT_TRUE(eventually([&] { return clock.waits_begun() == 2; }));
    EXPECT_EQ(rounds.load(), 1);
}

TEST(Periodic, ARoundThatThrowsDoesNotEndTheLoop) {
    const ManualClock clock(ManualClock::Sleeps::until_advanced);
    std::atomic<int> rounds{0};
    Periodic loop({.period = 1s, .what = "test round", .clock = &clock}, [&](std::stop_token) {
        if (++rounds == 1) throw std::runtime_error("the store is away");
    });
    ASSERT_TRUE(eventually([&] { return clock.waits_begun() == 1; }));
    clock.advance(1s);
    ASSERT_TRUE(eventually([&] { return clock.waits_begun() == 2; }));
    EXPECT_EQ(rounds.load(), 2) << "the round after the one that threw ran on time";
}

TEST(Periodic, StoppingEndsTheWaitRatherThanAPeriodLater) {
    // The process's clock and a period no test waits out: stop() returns only if it ends the
    // wait; a replaced loop (move-assigned) is stopped the same way.
    std::atomic<int> rounds{0};
    Periodic loop({.period = 1h}, [&](std::stop_token) { ++rounds; });
    ASSERT_TRUE(eventually([&] { return rounds.load() == 1; }));
    loop = Periodic({.period = 1h}, [&](std::stop_token) { ++rounds; });
    ASSERT_TRUE(eventually([&] { return rounds.load() == 2; }));
    EXPECT_TRUE(loop.running());
    loop.stop();
    EXPECT_FALSE(loop.running());
    EXPECT_EQ(rounds.load(), 2);
}

}  // namespace
