// A graceful stop of the HTTP transport: the calls in flight, and the refusal of new ones
// once it drains (SIGTERM). Only requests count: a client's answer to the server's own
// request (elicitation) and a notification (a cancellation) still reach the calls they
// belong to while those finish.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>

#include <httplib.h>

#include "server/json_rpc.hpp"

namespace agency::mcp {

class Server;

class DrainGate {
public:
    // Held while a call runs (its inline answer, or its worker and SSE stream): the last copy
    // going away ends the call's count.
    using Ticket = std::shared_ptr<void>;

    DrainGate();
    // A ticket for a new call; null once draining (the caller answers 503).
    Ticket enter();
    // From now on enter() refuses.
    void close();
    bool draining() const;
    std::size_t in_flight() const;
    // Waits until no ticket is held, up to `timeout`; whether none is.
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    struct State {
        mutable std::mutex mutex;
        std::condition_variable idle;
        std::size_t calls = 0;
        bool closed = false;
    };
    std::shared_ptr<State> state_;
};

// Closes the gate and lets the calls in flight finish within `timeout`; those still running
// then are cancelled (each answers as a cancelled call, its stream ending properly) and given
// `grace` more. Returns whether every call ended.
bool drain_calls(DrainGate& gate, Server& server, std::chrono::milliseconds timeout,
                 std::chrono::milliseconds grace = std::chrono::seconds(5));

// A call refused while draining: 503 with Retry-After, and the connection closes (through a
// load balancer, the retry reaches another instance).
void refuse_while_draining(httplib::Response& res, const json& id);

}  // namespace agency::mcp
