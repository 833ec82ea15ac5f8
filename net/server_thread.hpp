// The one way an HTTP server of this program starts (the MCP endpoint, the metrics listener, the
// sample gateway): bind (port 0: a free port), deepen the listen backlog, run the accept loop on
// a thread of its own, and return once it accepts, so a caller can connect at once.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include <httplib.h>

namespace agency::net {

struct ListenOn {
    std::string host = "127.0.0.1";
    int port = 0;  // 0: any free port
    // How long the accept loop may take to start before start() gives up.
    std::chrono::milliseconds ready_within = std::chrono::seconds(10);
    // Who listens, said first in start()'s errors ("--metrics-listen: cannot listen on ...");
    // empty: nothing before them.
    std::string who;
};

class ServerThread {
public:
    ServerThread() = default;
    ServerThread(const ServerThread&) = delete;
    ServerThread& operator=(const ServerThread&) = delete;
    ~ServerThread() { stop(); }

    // Binds `server` where `where` says and serves it on this object's thread; returns the
    // port. httplib listens with a backlog of 5, and a burst of new connections beyond it (16
    // clients at once) loses SYNs that clients resend only a second later: the backlog becomes
    // SOMAXCONN. Throws std::runtime_error naming host and port when it cannot bind, or when the
    // accept loop did not start in time (then nothing is left running).
    int start(httplib::Server& server, const ListenOn& where);
    // Stops the server and joins its thread; nothing when it is not running.
    void stop();
    // Blocks until the server stops (another thread calls stop(), or the server's own stop()).
    void wait();

    bool started() const { return thread_.joinable(); }
    int port() const { return port_; }
    // "http://host:port" + path (an IPv6 host in brackets).
    std::string url(std::string_view path) const;

private:
    httplib::Server* server_ = nullptr;
    std::thread thread_;
    std::string host_;
    int port_ = 0;
};

}  // namespace agency::net
