// MCP over Streamable HTTP at /mcp: both protocol eras on one endpoint.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_set.hpp"
#include "server/mcp_server.hpp"
#include "transport/authenticator.hpp"
#include "transport/http_routes.hpp"
#include "transport/keys.hpp"

namespace agency::mcp {

struct HttpOptions {
    std::string host = "127.0.0.1";
    int port = 8787;  // 0: an ephemeral port
    std::string path = "/mcp";
    std::size_t max_body_bytes = 4 * 1024 * 1024;
    JsonLimits json_limits;  // nesting depth and string length, checked before parsing
    std::vector<std::string> allowed_hosts;    // Host names accepted besides loopback names
    std::vector<std::string> allowed_origins;  // full origins, e.g. "https://app.example.com"
    std::shared_ptr<const KeyStore> keys;      // null or empty: no authentication
    // Who may call (transport/authenticator.hpp: keys, OAuth); null: `keys` alone decide.
    std::shared_ptr<const Authenticator> authenticator;
    Principal anonymous;                       // the caller's scopes when there is no auth
    // Routes beside the endpoint (health, metrics, metadata): outside caller authentication.
    std::vector<HttpRoute> routes;
    std::chrono::milliseconds session_idle{30 * 60 * 1000};
    // Paces the idle-session sweep; null: the process's (base::Clock::or_system). Must outlive the transport.
    const base::Clock* clock = nullptr;
    // Threads serving requests: a call's connection waits on one (small stacks:
    // app::small_thread_stacks)
    // while a worker runs the call, and a streamed answer is written from it.
    std::size_t threads = 256;
    // Workers running calls, in two lanes: calls that may wait long on the gateway or a person
    // (actions, tasks/result: Server::may_wait_long), and the rest (reads), which so never
    // queue behind a burst of slow actions. A generation waits 10-30 s at the gateway, so the
    // long lane is wide: its workers mostly wait, each holding a thread and not a core.
    std::size_t workers = 256;
    std::size_t read_workers = 64;
    // Calls one caller (principal) may run at once in each lane, and as many more may wait
    // for a worker; beyond that its call is refused at once (rate-limited, Retry-After: 1).
    // 0: a quarter of the lane. The other workers stay for the others.
    std::size_t worker_share = 0;
    // A call that waited this long for a worker is refused (retryable) instead of run: its
    // client is about to give up on it.
    std::chrono::milliseconds max_queue_wait{10'000};
    // What clients may hold (see net::ConnectionLimits). At a bound the server answers 503
    // with Retry-After (or closes the connection) and keeps serving everyone else.
    std::size_t max_connections = 4096;          // open connections in all
    std::size_t max_connections_per_peer = 256;  // open connections from one address
    std::chrono::milliseconds head_timeout{10'000};  // to send a whole request head
    std::chrono::seconds idle_timeout{5};            // a kept-alive connection between requests
    std::size_t max_streams = 512;              // streamed (SSE) answers open at once
    std::size_t max_streams_per_session = 16;   // of them, on one legacy session
    std::size_t max_sessions = 4096;            // legacy sessions open at once
    // Of them, held by one caller (principal); at the bound its own least recently used
    // session is closed. At max_sessions the caller holding the most gives one up.
    std::size_t max_sessions_per_principal = 512;
    std::size_t max_streams_per_principal = 64;  // streamed answers one caller holds at once
    std::chrono::milliseconds keepalive{5000};  // SSE comment while a streamed call is quiet
    // A streamable call that finishes this fast without talking back is answered as plain JSON
    // (with its proper HTTP status); slower ones switch to a stream that can be cancelled.
    std::chrono::milliseconds stream_grace{20};
    // A serving thread or worker idle this long leaves (keeping a few): a burst's threads and
    // their buffers go back within it (base/thread_set.hpp).
    base::IdleThreads idle_threads;
};

class HttpTransport {
public:
    HttpTransport(Server& server, HttpOptions options);
    ~HttpTransport();
    HttpTransport(const HttpTransport&) = delete;
    HttpTransport& operator=(const HttpTransport&) = delete;

    // Binds and serves on a background thread; returns the bound port. Throws
    // std::runtime_error when it cannot bind, or when asked to listen on a non-loopback
    // address without authentication.
    int start();
    void stop();
    // SIGTERM: new calls are refused (503), the calls in flight finish within `timeout` and
    // are then cancelled; whether every call ended. stop() follows.
    bool drain(std::chrono::milliseconds timeout);
    // Blocks until stop() (from another thread or a signal handler's helper).
    void wait();
    std::string url() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

bool is_loopback_host(const std::string& host);

}  // namespace agency::mcp
