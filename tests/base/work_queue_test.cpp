// base::WorkQueue's shares (issue 33): a job queued while its owner ran on its caller's own
// thread (try_enter) runs once that place is given back, even when no worker thread exists yet.
// It waited for ever: the HTTP fuzz target found serving threads stuck behind such jobs.
#include <chrono>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "base/work_queue.hpp"
#include "tests/support/wait.hpp"

TEST(WorkQueueShares, AJobQueuedBehindAPlaceTakenHereRunsWhenItIsGivenBack) {
    // One worker: nothing to lend beyond the reserve, so the job waits for the place.
    agency::base::WorkQueue queue(1, {.running = 1, .waiting = 1});
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

// Issue 45, finding 5: a lone owner past its share borrows the workers nobody else wants (all
// but the reserve), is refused only what cannot run now, and another owner's job runs at once
// on the reserve. Once idle, the burst's workers leave (base/thread_set.hpp).
TEST(WorkQueueShares, ALoneOwnerBorrowsIdleWorkersAndTheBurstsThreadsLeave) {
    using namespace std::chrono_literals;
    agency::base::WorkQueue queue(8, {.running = 2, .waiting = 2}, {.after = 100ms, .keep = 1});
    std::mutex m;
    std::condition_variable cv;
    int running = 0;
    bool release = false;
    auto job = [&] {
        std::unique_lock lock(m);
        ++running;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
        --running;
    };
    const auto wait_running = [&](int n) {
        std::unique_lock lock(m);
        return cv.wait_for(lock, 10s, [&] { return running == n; });
    };
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(queue.offer("lone", job)) << "job " << i;
    EXPECT_TRUE(wait_running(7)) << "seven of eight workers lent to the lone owner";
    EXPECT_FALSE(queue.offer("lone", job)) << "past its share, and nothing left to lend";
    ASSERT_TRUE(queue.offer("other", job));
    EXPECT_TRUE(wait_running(8)) << "the reserve runs another owner's job at once";
    EXPECT_EQ(queue.workers(), 8u);
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    queue.drain();
    std::size_t left = queue.workers();
    (void)agency::testing::eventually(
        [&] {
            left = queue.workers();
            return left <= 1;
        },
        5000ms, 50ms);
    EXPECT_LE(left, 1u) << "idle workers leave";
}
