// When the server begins the work a previous run left (Server::on_begin_work): at the first
// request that is not a probe, so that a process a client starts only for server/discover
// writes nothing and sends nothing (docs/design.md; tests/app/probe_start_test.cpp).
#include "base/log.hpp"
#include "server/protocol.hpp"
#include "server/server_impl.hpp"

namespace agency::mcp {

void Server::on_begin_work(std::function<void()> work) {
    impl_->work_hooks.push_back({std::move(work)});
}

void Server::begin_work() {
    if (impl_->work_started.load(std::memory_order_acquire)) return;
    // Concurrent first requests wait here until the work has begun: what they read (a resumed
    // task) is then there. A hook that fails (the store is locked) is tried again by the next
    // request; one that ran is never run twice.
    std::lock_guard lock(impl_->work_mutex);
    std::exception_ptr failure;
    for (auto& hook : impl_->work_hooks) {
        if (hook.done) continue;
        try {
            hook.run();
            hook.done = true;
        } catch (...) {
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
    impl_->work_started.store(true, std::memory_order_release);
}

void begin_work_unless_probe(Server& server, std::string_view method) {
    if (method == kMethodDiscover || method == kMethodPing) return;
    try {
        server.begin_work();
    } catch (const std::exception& e) {
        // The request goes on: what it needs from the store says so itself.
        log::warn("picking up the work a previous run left: {}; trying again at the next request",
                  e.what());
    }
}

}  // namespace agency::mcp
