#include "base/work_queue.hpp"

#include <algorithm>
#include <system_error>

#include "base/log.hpp"

namespace agency::base {

namespace {
thread_local WorkQueue* current_queue = nullptr;  // the queue whose worker this thread is
thread_local const std::string* current_owner = nullptr;  // whose job it runs ("" or null: none)
}  // namespace

WorkQueue::Waiting::Waiting() : queue_(current_queue) {
    if (queue_ == nullptr) return;
    {
        std::lock_guard lock(queue_->mutex_);
        ++queue_->outside_;
        // A job waiting outside holds no worker: it does not count against its owner's share.
        if (current_owner != nullptr && !current_owner->empty())
            --queue_->held_[*current_owner].running;
        if (queue_->runnable_locked() && queue_->jobs_.size() > queue_->waiting_ &&
            queue_->threads_.size() < queue_->limit() && !queue_->stopping_)
            queue_->add_worker_locked();
    }
    queue_->ready_.notify_one();
}

WorkQueue::Waiting::~Waiting() {
    if (queue_ == nullptr) return;
    std::lock_guard lock(queue_->mutex_);
    --queue_->outside_;
    if (current_owner != nullptr && !current_owner->empty())
        ++queue_->held_[*current_owner].running;
}

WorkQueue::WorkQueue(std::size_t max_workers, Share share, IdleThreads idle)
    : max_workers_(std::max<std::size_t>(1, max_workers)), share_(share), idle_threads_(idle) {}

WorkQueue::~WorkQueue() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    ready_.notify_all();
    // Workers leave as the queue empties; each is joined (those still running finish first).
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            threads = threads_.take_all();
        }
        if (threads.empty()) break;
        for (auto& t : threads) t.join();
    }
}

std::size_t WorkQueue::workers() {
    std::lock_guard lock(mutex_);
    return threads_.size();
}

void WorkQueue::post(std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        push_locked({std::move(job), {}});
    }
    ready_.notify_one();
}

bool WorkQueue::offer(const std::string& owner, std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        auto [it, added] = held_.try_emplace(owner);
        Held& held = it->second;
        // Its share in all, running and waiting together: a caller queued behind the others'
        // calls (the workers all busy) holds no more than one running at its share would. Past
        // it, a job that can run at once on a worker nobody else wants is still taken
        // (borrowing: issue 45, finding 5).
        if (share_.running != 0 &&
            held.running + held.waiting >= share_.running + share_.waiting &&
            busy_ + jobs_.size() >= borrow_limit()) {
            forget_if_idle_locked(it);
            return false;
        }
        ++held.waiting;
        try {
            push_locked({std::move(job), owner});
        } catch (...) {
            --held.waiting;
            forget_if_idle_locked(it);
            throw;
        }
    }
    ready_.notify_one();
    return true;
}

WorkQueue::Slot WorkQueue::try_enter(const std::string& owner) {
    std::lock_guard lock(mutex_);
    // Never ahead of a queued job that could run (one whose owner is at its share waits anyway).
    if (stopping_ || runnable_locked() || busy_ >= limit()) return {};
    auto it = held_.find(owner);
    if (share_.running != 0 && it != held_.end() && it->second.running >= share_.running &&
        busy_ >= borrow_limit())
        return {};
    ++held_[owner].running;
    ++busy_;
    return Slot(this, owner);
}

WorkQueue::Slot::~Slot() {
    if (queue_ == nullptr) return;
    {
        std::lock_guard lock(queue_->mutex_);
        --queue_->busy_;
        auto it = queue_->held_.find(owner_);
        --it->second.running;
        queue_->forget_if_idle_locked(it);
        // A job queued while its owner ran here may run now, and no worker may exist yet
        // (every earlier job ran on its caller's thread).
        if (queue_->runnable_locked() && queue_->jobs_.size() > queue_->waiting_ &&
            queue_->threads_.size() < queue_->limit() && !queue_->stopping_)
            queue_->add_worker_locked();
    }
    queue_->ready_.notify_one();  // a queued job may run now
    queue_->idle_.notify_all();
}

void WorkQueue::push_locked(Job job) {
    jobs_.push_back(std::move(job));
    // More runnable jobs than idle workers: one more worker, as long as the cap allows.
    if (runnable_locked() && jobs_.size() > waiting_ && threads_.size() < limit() && !stopping_ &&
        !add_worker_locked() && threads_.size() == 0) {
        // No worker at all to run it: the caller hears so instead of waiting for ever.
        jobs_.pop_back();
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                "no thread could be started to run the call");
    }
}

void WorkQueue::forget_if_idle_locked(std::unordered_map<std::string, Held>::iterator it) {
    if (it->second.running == 0 && it->second.waiting == 0) held_.erase(it);
}

std::deque<WorkQueue::Job>::iterator WorkQueue::next_locked() {
    if (share_.running == 0) return jobs_.begin();
    const auto under_share = std::find_if(jobs_.begin(), jobs_.end(), [this](const Job& job) {
        if (job.owner.empty()) return true;
        auto it = held_.find(job.owner);
        return it == held_.end() || it->second.running < share_.running;
    });
    // No job of an owner under its share: the first may borrow a worker nobody else wants,
    // leaving the reserve free for whoever comes next.
    if (under_share == jobs_.end() && busy_ < borrow_limit()) return jobs_.begin();
    return under_share;
}

std::size_t WorkQueue::borrow_limit() const {
    if (share_.running == 0) return max_workers_;
    const std::size_t reserve = std::max<std::size_t>(1, share_.running / 4);
    return max_workers_ > reserve ? max_workers_ - reserve : 0;
}

bool WorkQueue::add_worker_locked() {
    try {
        threads_.start([this] { run(); });
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
        Job job;
        {
            std::unique_lock lock(mutex_);
            ++waiting_;
            // Threads started while jobs waited outside stay, but no more jobs run at once
            // than the bound allows. A worker idle past idle_threads_.after leaves (as long as
            // more than idle_threads_.keep remain): a burst's threads do not stay.
            const auto has_work = [this] {
                return (stopping_ && jobs_.empty()) || (busy_ < limit() && runnable_locked());
            };
            const bool woke = ready_.wait_for(lock, idle_threads_.after, has_work);
            --waiting_;
            if (!woke && !stopping_ && threads_.may_leave(idle_threads_)) {
                std::thread before = threads_.leave();
                lock.unlock();
                join_left(std::move(before));
                return;
            }
            if (!woke) continue;
            if (jobs_.empty()) {  // stopping and nothing left
                std::thread before = threads_.leave();
                lock.unlock();
                join_left(std::move(before));
                return;
            }
            auto next = next_locked();
            job = std::move(*next);
            jobs_.erase(next);
            if (!job.owner.empty()) {
                Held& held = held_[job.owner];
                --held.waiting;
                ++held.running;
            }
            ++busy_;
        }
        current_owner = &job.owner;
        try {
            job.run();
        } catch (const std::exception& e) {
            log::error("worker job failed: {}", e.what());
        }
        current_owner = nullptr;
        // What the job captured goes before the job counts as done: drain() returning means
        // nothing of it is left to touch its owner (a transport being destroyed).
        job.run = nullptr;
        {
            std::lock_guard lock(mutex_);
            --busy_;
            if (!job.owner.empty()) {
                auto it = held_.find(job.owner);
                --it->second.running;
                forget_if_idle_locked(it);
            }
        }
        ready_.notify_one();
        idle_.notify_all();
    }
}

}  // namespace agency::base
