// Up to a fixed number of worker threads draining a FIFO of jobs. Used by the transports so that
// a slow tool call never blocks ping, cancellation or other calls. Workers start when a job finds
// none idle (not all up front): start-up then creates no threads it may never use; and a worker
// idle past IdleThreads::after leaves (base/thread_set.hpp), so a burst's threads do not stay.
//
// Jobs offered for an owner (a caller) share the workers fairly: one owner runs `Share::running`
// jobs at once and holds `Share::running + Share::waiting` running and queued together, in the
// order offered, so one owner's burst leaves the other workers to the others. Capacity nobody
// else wants is lent: past its share an owner's job still runs while workers beyond a small
// reserve are idle (borrow_limit), and an owner under its share is always served first, so a
// lender gets its workers back as the borrowed jobs finish. offer() refuses at once only a job
// past the share that cannot run now.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/thread_set.hpp"

namespace agency::base {

// What one owner may hold in a WorkQueue (0: no bound beyond the workers).
struct WorkShare {
    std::size_t running = 0;
    std::size_t waiting = 0;
};

class WorkQueue {
public:
    using Share = WorkShare;

    explicit WorkQueue(std::size_t max_workers, Share share = {}, IdleThreads idle = {});
    ~WorkQueue();  // finishes queued jobs, then joins
    WorkQueue(const WorkQueue&) = delete;
    WorkQueue& operator=(const WorkQueue&) = delete;

    // Throws std::system_error, dropping the job, only when no worker exists nor can be started
    // (the process's thread limit); with workers, the job waits for one of them.
    void post(std::function<void()> job);
    // As post, for `owner`: false (nothing queued) when the owner already holds its share of
    // running and waiting jobs together.
    bool offer(const std::string& owner, std::function<void()> job);
    const Share& share() const { return share_; }

    // A place in the queue's bound taken by a job that runs on the caller's own thread (no
    // hand-off): counted as running, for its owner too, until destroyed. Empty when no worker
    // place is free, jobs are queued, or the owner holds its running share.
    class Slot {
    public:
        Slot() = default;
        Slot(Slot&& other) noexcept : queue_(other.queue_), owner_(std::move(other.owner_)) {
            other.queue_ = nullptr;
        }
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;
        Slot& operator=(Slot&&) = delete;
        ~Slot();
        explicit operator bool() const { return queue_ != nullptr; }

    private:
        friend class WorkQueue;
        Slot(WorkQueue* queue, std::string owner) : queue_(queue), owner_(std::move(owner)) {}
        WorkQueue* queue_ = nullptr;
        std::string owner_;
    };
    Slot try_enter(const std::string& owner);
    // Worker threads alive now (they leave when idle past IdleThreads::after).
    std::size_t workers();
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
    struct Job {
        std::function<void()> run;
        std::string owner;
    };
    struct Held {
        std::size_t running = 0;
        std::size_t waiting = 0;
    };
    void run();
    // Queues a job (mutex_ held) and starts a worker when none is idle; throws as post().
    void push_locked(Job job);
    // The first queued job whose owner is under its running share, else (while workers beyond
    // the reserve are idle) the first queued job; jobs_.end() when none may run.
    std::deque<Job>::iterator next_locked();
    // Workers an owner past its running share may keep busy (borrowing idle capacity): all
    // but a reserve of a quarter of a share (at least one) for owners under theirs.
    std::size_t borrow_limit() const;
    bool runnable_locked() { return next_locked() != jobs_.end(); }
    // Drops an owner's entry once it holds nothing (mutex_ held).
    void forget_if_idle_locked(std::unordered_map<std::string, Held>::iterator it);
    // One more worker thread (mutex_ held); false when none could be created (logged).
    bool add_worker_locked();
    // Jobs may run at once: the bound plus those waiting outside.
    std::size_t limit() const { return max_workers_ + outside_; }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::condition_variable idle_;
    std::deque<Job> jobs_;
    std::unordered_map<std::string, Held> held_;  // owners with jobs running or queued
    std::size_t busy_ = 0;
    std::size_t waiting_ = 0;  // workers waiting for a job
    std::size_t outside_ = 0;  // jobs inside a Waiting
    std::size_t max_workers_;
    Share share_;
    IdleThreads idle_threads_;
    bool stopping_ = false;
    ThreadSet threads_;
};

}  // namespace agency::base
