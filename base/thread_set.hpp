// Worker threads that come for a burst and go after it (issue 45, finding 10: 600 dripping
// connections left 607 threads, and under a task limit a server that answered every call with
// HTTP 500 until restart). A pool started on demand (the HTTP serving threads, the call lanes)
// keeps its threads in a ThreadSet; a thread idle past the pool's idle time leaves it, and the
// one that left before it is joined then, so at most one finished thread is ever unjoined and
// a burst's stacks and buffers return within that idle time.
//
// A thread that cannot be started (the process's or the service's thread limit) is noted for
// the whole process: readiness says so while it lasts (app/health.cpp), and the request that
// needed it is refused (503) rather than failed, the server recovering as threads leave.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace agency::base {

// How long a pool's thread waits idle before it leaves, and how many stay however idle.
struct IdleThreads {
    std::chrono::milliseconds after{10'000};
    std::size_t keep = 2;
};

// Not thread-safe: the owning pool calls it with its own mutex held.
class ThreadSet {
public:
    // Starts a thread running `fn`. Throws std::system_error as std::thread does, after noting
    // the shortage (thread_start_failed).
    void start(std::function<void()> fn);
    std::size_t size() const { return running_.size(); }
    // Whether a thread idle past `idle.after` should leave: more than `idle.keep` run.
    bool may_leave(const IdleThreads& idle) const { return running_.size() > idle.keep; }
    // Called by a thread of the set as it leaves: it is taken out of the set, and the thread
    // that left before it is handed back, to be joined once the pool's lock is released.
    std::thread leave();
    // Every thread (those running and the last to leave), for the pool's destructor to join.
    std::vector<std::thread> take_all();

private:
    std::vector<std::thread> running_;
    std::thread left_;
};

// Joins `t` when it is joinable (a thread that has left, or an empty handle).
inline void join_left(std::thread t) {
    if (t.joinable()) t.join();
}

// The process could not start a thread just now (its thread limit): noted with the time.
void thread_start_failed();
// How long ago a thread last failed to start, when that was within `recent`.
std::optional<std::chrono::milliseconds> thread_shortage(std::chrono::milliseconds recent);
// Forgets the last failure (tests: the note is process-wide).
void forget_thread_shortage();

}  // namespace agency::base
