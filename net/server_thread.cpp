// ServerThread (net/server_thread.hpp).
#include "net/server_thread.hpp"

#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <stdexcept>

namespace agency::net {

int ServerThread::start(httplib::Server& server, const ListenOn& where) {
    if (thread_.joinable()) throw std::logic_error("ServerThread: already started");
    auto listen_fd = std::make_shared<std::atomic<socket_t>>(INVALID_SOCKET);
    // SO_REUSEADDR alone: httplib's default adds SO_REUSEPORT, which lets a second server take
    // a port already served (both then get connections), and lets binding port 0 hand out a
    // port another process serves: parallel tests met each other's servers.
    server.set_socket_options([listen_fd](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        listen_fd->store(sock);
    });
    const int port = where.port == 0
                         ? server.bind_to_any_port(where.host)
                         : (server.bind_to_port(where.host, where.port) ? where.port : -1);
    const std::string who = where.who.empty() ? std::string() : where.who + ": ";
    if (port <= 0)
        throw std::runtime_error(who + "cannot listen on " + where.host + ":" +
                                 std::to_string(where.port) +
                                 " (in use, or not an address of this host)");
    if (listen_fd->load() != INVALID_SOCKET) ::listen(listen_fd->load(), SOMAXCONN);
    thread_ = std::thread([&server] { server.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + where.ready_within;
    while (!server.is_running()) {
        if (std::chrono::steady_clock::now() > deadline) {
            server.stop();
            thread_.join();
            throw std::runtime_error(who + "the server on " + where.host + ":" +
                                     std::to_string(port) + " did not start accepting");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server_ = &server;
    host_ = where.host;
    port_ = port;
    return port;
}

void ServerThread::stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    thread_.join();
}

void ServerThread::wait() {
    if (thread_.joinable()) thread_.join();
}

std::string ServerThread::url(std::string_view path) const {
    const std::string host = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
    return "http://" + host + ":" + std::to_string(port_) + std::string(path);
}

}  // namespace agency::net
