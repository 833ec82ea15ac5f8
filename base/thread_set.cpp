#include "base/thread_set.hpp"

#include <algorithm>
#include <atomic>
#include <system_error>

namespace agency::base {

namespace {

using steady = std::chrono::steady_clock;

// steady_clock's count at the last failure; 0: never.
std::atomic<steady::rep> last_failure{0};

}  // namespace

void ThreadSet::start(std::function<void()> fn) {
    try {
        running_.emplace_back(std::move(fn));
    } catch (const std::system_error&) {
        thread_start_failed();
        throw;
    }
}

std::thread ThreadSet::leave() {
    const auto self = std::this_thread::get_id();
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const std::thread& t) { return t.get_id() == self; });
    std::thread before = std::move(left_);
    if (it != running_.end()) {
        left_ = std::move(*it);
        running_.erase(it);
    }
    return before;
}

std::vector<std::thread> ThreadSet::take_all() {
    std::vector<std::thread> all = std::move(running_);
    running_.clear();
    if (left_.joinable()) all.push_back(std::move(left_));
    return all;
}

void thread_start_failed() {
    last_failure.store(std::max<steady::rep>(1, steady::now().time_since_epoch().count()),
                       std::memory_order_relaxed);
}

void forget_thread_shortage() { last_failure.store(0, std::memory_order_relaxed); }

std::optional<std::chrono::milliseconds> thread_shortage(std::chrono::milliseconds recent) {
    const steady::rep at = last_failure.load(std::memory_order_relaxed);
    if (at == 0) return std::nullopt;
    const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(
        steady::now().time_since_epoch() - steady::duration(at));
    if (ago > recent) return std::nullopt;
    return ago;
}

}  // namespace agency::base
