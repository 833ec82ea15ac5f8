// A call's serving thread is busy running it, or waiting for it, so it cannot see its client
// go: one thread looks at the sockets of every call in flight every `period` (one poll for
// them all) and cancels the call of a connection its client has closed (or half-closed).
// Each serving thread has a slot of its own, registered once (it serves one request at a
// time), so watching a call costs an uncontended lock, not a shared map.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

#include "base/periodic.hpp"

namespace agency::mcp {

class DisconnectWatch {
public:
    explicit DisconnectWatch(std::chrono::milliseconds period);
    ~DisconnectWatch() = default;  // the loop (the last member) stops and joins
    DisconnectWatch(const DisconnectWatch&) = delete;
    DisconnectWatch& operator=(const DisconnectWatch&) = delete;

    // Watches `fd` while alive; requests `stop` when its client has gone. fd < 0: nothing.
    class Entry {
    public:
        Entry(DisconnectWatch& watch, int fd, std::stop_source stop);
        ~Entry();
        Entry(const Entry&) = delete;
        Entry& operator=(const Entry&) = delete;

    private:
        struct WatchSlot* slot_ = nullptr;
    };

private:
    // This thread's slot (registered at its first call).
    WatchSlot& slot();
    // One look at every watched socket (the loop's round, every `period`).
    void look();

    std::chrono::milliseconds period_;
    std::uint64_t id_;  // tells this watch's slots from an earlier one's at the same address
    std::mutex mutex_;
    std::vector<std::shared_ptr<WatchSlot>> slots_;
    base::Periodic loop_;  // started with the first slot
};

}  // namespace agency::mcp
