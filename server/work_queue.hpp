// A fixed set of worker threads draining a FIFO of jobs. Used by the transports so that a slow
// tool call never blocks ping, cancellation or other calls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace agency::mcp {

class WorkQueue {
public:
    explicit WorkQueue(std::size_t workers);
    ~WorkQueue();  // finishes queued jobs, then joins
    WorkQueue(const WorkQueue&) = delete;
    WorkQueue& operator=(const WorkQueue&) = delete;

    void post(std::function<void()> job);
    // Blocks until every posted job has finished.
    void drain();
    // As drain, but gives up after `timeout`; returns whether everything finished.
    bool drain_for(std::chrono::milliseconds timeout);

private:
    void run();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::condition_variable idle_;
    std::deque<std::function<void()>> jobs_;
    std::size_t busy_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace agency::mcp
