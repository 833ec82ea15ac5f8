// Up to a fixed number of worker threads draining a FIFO of jobs. Used by the transports so that
// a slow tool call never blocks ping, cancellation or other calls. Workers start when a job finds
// none idle (not all up front): start-up then creates no threads it may never use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace agency::base {

class WorkQueue {
public:
    explicit WorkQueue(std::size_t max_workers);
    ~WorkQueue();  // finishes queued jobs, then joins
    WorkQueue(const WorkQueue&) = delete;
    WorkQueue& operator=(const WorkQueue&) = delete;

    // Throws std::system_error, dropping the job, only when no worker exists nor can be started
    // (the process's thread limit); with workers, the job waits for one of them.
    void post(std::function<void()> job);
    // Blocks until every posted job has finished.
    void drain();
    // As drain, but gives up after `timeout`; returns whether everything finished.
    bool drain_for(std::chrono::milliseconds timeout);

    // Held by a job while it waits on something outside the process (a client's answer): the
    // job's queue may run one more job meanwhile, so waiting jobs never take the workers
    // others need. A no-op on a thread that is not one of a WorkQueue's workers.
    class Waiting {
    public:
        Waiting();
        ~Waiting();
        Waiting(const Waiting&) = delete;
        Waiting& operator=(const Waiting&) = delete;

    private:
        WorkQueue* queue_;
    };

private:
    void run();
    // One more worker thread (mutex_ held); false when none could be created (logged).
    bool add_worker_locked();
    // Jobs may run at once: the bound plus those waiting outside.
    std::size_t limit() const { return max_workers_ + outside_; }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::condition_variable idle_;
    std::deque<std::function<void()>> jobs_;
    std::size_t busy_ = 0;
    std::size_t waiting_ = 0;  // workers waiting for a job
    std::size_t outside_ = 0;  // jobs inside a Waiting
    std::size_t max_workers_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace agency::base
