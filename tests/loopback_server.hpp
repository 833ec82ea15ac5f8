// An httplib server (or a class built on it) on an ephemeral loopback port for a test: routes
// are added first, then start(); destruction stops and joins it. It notes the client port of
// each request it is shown, so a test can count the connections a client opened.
#pragma once

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include <httplib.h>

namespace agency::testing {

template <class ServerT = httplib::Server>
struct LoopbackServer {
    ServerT http;
    int port = 0;
    std::thread thread;
    std::mutex mu;
    std::set<int> remote_ports;

    void start() {
        port = http.bind_to_any_port("127.0.0.1");
        thread = std::thread([this] { http.listen_after_bind(); });
        while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~LoopbackServer() {
        if (!thread.joinable()) return;
        http.stop();
        thread.join();
    }
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
