// base::WorkQueue's shares (issue 33): a job queued while its owner ran on its caller's own
// thread (try_enter) runs once that place is given back, even when no worker thread exists yet.
// It waited for ever: the HTTP fuzz target found serving threads stuck behind such jobs.
#include <chrono>
#include <future>

#include <gtest/gtest.h>

#include "base/work_queue.hpp"

TEST(WorkQueueShares, AJobQueuedBehindAPlaceTakenHereRunsWhenItIsGivenBack) {
    agency::base::WorkQueue queue(4, {.running = 1, .waiting = 1});
    std::promise<void> ran;
    {
        auto here = queue.try_enter("caller");
        ASSERT_TRUE(here);
        ASSERT_TRUE(queue.offer("caller", [&] { ran.set_value(); }));  // at its share: queued
        EXPECT_FALSE(queue.offer("caller", [] {})) << "its share is one running, one waiting";
    }
    const bool done =
        ran.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    EXPECT_TRUE(done) << "the queued job never ran";
    if (done) queue.drain();
}
