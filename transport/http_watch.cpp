#include "transport/http_watch.hpp"

#include <poll.h>

#include <atomic>

namespace agency::mcp {

struct WatchSlot {
    std::mutex mutex;
    int fd = -1;
    std::uint64_t call = 0;  // counts the calls watched here: a hit applies to the same call
    std::stop_source stop{std::nostopstate};
};

namespace {
std::atomic<std::uint64_t> g_watches{0};
struct WatchThreadSlot {
    std::uint64_t watch = 0;
    WatchSlot* slot = nullptr;
};
thread_local WatchThreadSlot t_slot;
}  // namespace

DisconnectWatch::DisconnectWatch(std::chrono::milliseconds period)
    : period_(period), id_(++g_watches) {}

WatchSlot& DisconnectWatch::slot() {
    if (t_slot.watch == id_) return *t_slot.slot;
    auto fresh = std::make_shared<WatchSlot>();
    std::lock_guard lock(mutex_);
    if (!loop_.running())
        loop_ = base::Periodic({.period = period_, .at_once = false, .what = "disconnect watch"},
                               [this](std::stop_token) { look(); });
    slots_.push_back(fresh);
    t_slot = {id_, fresh.get()};
    return *fresh;
}

DisconnectWatch::Entry::Entry(DisconnectWatch& watch, int fd, std::stop_source stop) {
    if (fd < 0) return;
    slot_ = &watch.slot();
    std::lock_guard lock(slot_->mutex);
    slot_->fd = fd;
    ++slot_->call;
    slot_->stop = std::move(stop);
}

DisconnectWatch::Entry::~Entry() {
    if (slot_ == nullptr) return;
    std::lock_guard lock(slot_->mutex);
    slot_->fd = -1;
    slot_->stop = std::stop_source(std::nostopstate);
}

void DisconnectWatch::look() {
    struct Seen {
        WatchSlot* slot;
        std::uint64_t call;
    };
    std::vector<std::shared_ptr<WatchSlot>> slots;
    {
        std::lock_guard lock(mutex_);
        slots = slots_;
    }
    std::vector<pollfd> fds;
    std::vector<Seen> seen;
    for (const auto& s : slots) {
        std::lock_guard lock(s->mutex);
        if (s->fd < 0) continue;
        fds.push_back({s->fd, POLLRDHUP, 0});
        seen.push_back({s.get(), s->call});
    }
    if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return;
    for (std::size_t i = 0; i < fds.size(); ++i) {
        if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
        WatchSlot& s = *seen[i].slot;
        std::stop_source fire(std::nostopstate);
        {
            std::lock_guard lock(s.mutex);
            // Still the same call (its connection cannot close while its call runs on it).
            if (s.fd >= 0 && s.call == seen[i].call) fire = s.stop;
        }
        // Outside the slot's lock: the stop's callbacks run here, and the call's thread may be
        // leaving its Entry (which takes that lock) meanwhile.
        fire.request_stop();
    }
}

}  // namespace agency::mcp
