#include "server/work_queue.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace agency::mcp {

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
        if (jobs_.size() > waiting_ && threads_.size() < max_workers_ && !stopping_)
            threads_.emplace_back([this] { run(); });
    }
    ready_.notify_one();
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
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock lock(mutex_);
            ++waiting_;
            ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            --waiting_;
            if (jobs_.empty()) return;  // stopping and nothing left
            job = std::move(jobs_.front());
            jobs_.pop_front();
            ++busy_;
        }
        try {
            job();
        } catch (const std::exception& e) {
            spdlog::error("worker job failed: {}", e.what());
        }
        {
            std::lock_guard lock(mutex_);
            --busy_;
        }
        idle_.notify_all();
    }
}

}  // namespace agency::mcp
