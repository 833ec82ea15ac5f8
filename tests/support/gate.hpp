// A signal a test gives to a thread it started (a tool's handler, a fake server's route): that
// thread waits on the gate's state, not on time (issue 50: tests wait on state). Once opened it
// stays open.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace agency::testing {

class Gate {
public:
    Gate() = default;
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;

    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        changed_.notify_all();
    }
    // Until it opens.
    void wait() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return open_; });
    }
    // Until it opens or `stop` is requested; whether it opened.
    bool wait(std::stop_token stop) {
        std::unique_lock lock(mutex_);
        return changed_.wait(lock, stop, [this] { return open_; });
    }
    // Until it opens, at most `limit`; whether it opened.
    bool wait_for(std::chrono::milliseconds limit) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, limit, [this] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable_any changed_;
    bool open_ = false;
};

// Until `stop` is requested, at most `limit`: a tool that runs until it is cancelled. Whether
// the stop came.
inline bool wait_for_stop(const std::stop_token& stop, std::chrono::milliseconds limit) {
    std::mutex mutex;
    std::condition_variable_any changed;  // nothing else notifies it: the stop wakes it
    std::unique_lock lock(mutex);
    (void)changed.wait_for(lock, stop, limit, [] { return false; });
    return stop.stop_requested();
}

}  // namespace agency::testing
