// A graceful stop of the HTTP transport (see http_drain.hpp).
#include "transport/http_drain.hpp"

#include "base/log.hpp"

#include "server/mcp_server.hpp"
#include "transport/http_replies.hpp"

namespace agency::mcp {

DrainGate::DrainGate() : state_(std::make_shared<State>()) {}

DrainGate::Ticket DrainGate::enter() {
    std::lock_guard lock(state_->mutex);
    if (state_->closed) return nullptr;
    ++state_->calls;
    // The ticket keeps the state alive: a stream may outlive the transport's own members.
    return Ticket(static_cast<void*>(state_.get()), [state = state_](void*) {
        std::lock_guard released(state->mutex);
        if (--state->calls == 0) state->idle.notify_all();
    });
}

void DrainGate::close() {
    std::lock_guard lock(state_->mutex);
    state_->closed = true;
}

bool DrainGate::draining() const {
    std::lock_guard lock(state_->mutex);
    return state_->closed;
}

std::size_t DrainGate::in_flight() const {
    std::lock_guard lock(state_->mutex);
    return state_->calls;
}

bool DrainGate::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_->mutex);
    return state_->idle.wait_for(lock, timeout, [this] { return state_->calls == 0; });
}

bool drain_calls(DrainGate& gate, Server& server, std::chrono::milliseconds timeout,
                 std::chrono::milliseconds grace) {
    gate.close();
    if (const auto n = gate.in_flight())
        log::info("draining: waiting up to {} ms for {} call(s) in flight", timeout.count(), n);
    if (gate.wait_idle(timeout)) return true;
    log::warn("draining: {} call(s) still running after {} ms: cancelling them", gate.in_flight(),
              timeout.count());
    server.cancel_calls();
    if (gate.wait_idle(grace)) return true;
    log::error("draining: {} call(s) did not end {} ms after being cancelled", gate.in_flight(),
               grace.count());
    return false;
}

void refuse_while_draining(httplib::Response& res, const json& id) {
    close_after(res);
    res.set_header("Retry-After", "5");
    send_json_error(res, 503, id, error_code::internal_error,
                    "the server is shutting down and takes no new calls: send this request "
                    "again (through a load balancer it reaches another instance)");
}

}  // namespace agency::mcp
