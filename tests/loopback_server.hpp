// An httplib server (or a class built on it) on an ephemeral loopback port for a test: routes
// are added first, then start(); destruction stops and joins it. It notes the client port of
// each request it is shown, so a test can count the connections a client opened.
#pragma once

#include <mutex>
#include <set>

#include <httplib.h>

#include "net/server_thread.hpp"

namespace agency::testing {

template <class ServerT = httplib::Server>
struct LoopbackServer {
    ServerT http;
    int port = 0;
    net::ServerThread serving;  // after http: stopped before http is destroyed
    std::mutex mu;
    std::set<int> remote_ports;

    void start() { port = serving.start(http, {}); }
    void note(const httplib::Request& req) {
        std::lock_guard lock(mu);
        remote_ports.insert(req.remote_port);
    }
    std::size_t connections() {
        std::lock_guard lock(mu);
        return remote_ports.size();
    }
};

}  // namespace agency::testing
