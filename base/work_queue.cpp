#include "base/work_queue.hpp"

#include <algorithm>
#include <system_error>

#include "base/log.hpp"

namespace agency::base {

namespace {
thread_local WorkQueue* current_queue = nullptr;  // the queue whose worker this thread is
}  // namespace

WorkQueue::Waiting::Waiting() : queue_(current_queue) {
    if (queue_ == nullptr) return;
    {
        std::lock_guard lock(queue_->mutex_);
        ++queue_->outside_;
        if (queue_->jobs_.size() > queue_->waiting_ && queue_->threads_.size() < queue_->limit() &&
            !queue_->stopping_)
            queue_->add_worker_locked();
    }
    queue_->ready_.notify_one();
}

WorkQueue::Waiting::~Waiting() {
    if (queue_ == nullptr) return;
    std::lock_guard lock(queue_->mutex_);
    --queue_->outside_;
}

WorkQueue::WorkQueue(std::size_t max_workers) : max_workers_(std::max<std::size_t>(1, max_workers)) {
    threads_.reserve(max_workers_);
}

WorkQueue::~WorkQueue() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        threads.swap(threads_);
    }
    ready_.notify_all();
    for (auto& t : threads) t.join();
}

void WorkQueue::post(std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(job));
        // More waiting jobs than idle workers: one more worker, as long as the cap allows.
        if (jobs_.size() > waiting_ && threads_.size() < limit() && !stopping_ &&
            !add_worker_locked() && threads_.empty()) {
            // No worker at all to run it: the caller hears so instead of waiting for ever.
            jobs_.pop_back();
            throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                    "no thread could be started to run the call");
        }
    }
    ready_.notify_one();
}

bool WorkQueue::add_worker_locked() {
    try {
        threads_.emplace_back([this] { run(); });
        return true;
    } catch (const std::system_error& e) {
        // At the process's thread limit: the workers there are carry on with the queue.
        log::warn("could not start a worker thread ({} running): {}", threads_.size(), e.what());
        return false;
    }
}

void WorkQueue::drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return jobs_.empty() && busy_ == 0; });
}

bool WorkQueue::drain_for(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return idle_.wait_for(lock, timeout, [this] { return jobs_.empty() && busy_ == 0; });
}

void WorkQueue::run() {
    current_queue = this;
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            ++waiting_;
            // Threads started while jobs waited outside stay, but no more jobs run at once
            // than the bound allows.
            ready_.wait(lock, [this] {
                return (stopping_ && jobs_.empty()) || (!jobs_.empty() && busy_ < limit());
            });
            --waiting_;
            if (jobs_.empty()) return;  // stopping and nothing left
            job = std::move(jobs_.front());
            jobs_.pop_front();
            ++busy_;
        }
        try {
            job();
        } catch (const std::exception& e) {
            log::error("worker job failed: {}", e.what());
        }
        // What the job captured goes before the job counts as done: drain() returning means
        // nothing of it is left to touch its owner (a transport being destroyed).
        job = nullptr;
        {
            std::lock_guard lock(mutex_);
            --busy_;
        }
        ready_.notify_one();
        idle_.notify_all();
    }
}

}  // namespace agency::base
