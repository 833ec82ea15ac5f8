// net::PlainServer (httplib's server on net::BufferedStream, which holds an answer's head back
// to send it with the body) on a loopback port, driven by httplib's own client and by a raw
// socket: answers of every shape on one kept-alive connection, request bodies larger than the
// read buffer, a body a handler left unread, SSE events that must go out while the handler
// still runs, stop() with an idle connection open, and an idle connection closed while a child
// process holds its socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server/mcp_server.hpp"
#include "tests/loopback_server.hpp"
#include "net/socket_stream.hpp"
#include "tests/support/wait.hpp"

namespace {

using namespace std::chrono_literals;

std::string pattern(std::size_t size) {
    std::string out(size, '\0');
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return out;
}

struct Server : agency::testing::LoopbackServer<agency::net::PlainServer> {
    std::atomic<bool> event_seen{false};
    std::atomic<bool> handler_saw_event_read{false};

    Server() {
        http.set_keep_alive_timeout(5);
        http.set_keep_alive_max_count(100);  // httplib's default closes after 5 requests
        http.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
            if (req.path != "/refuse") return httplib::Server::HandlerResponse::Unhandled;
            res.status = 403;
            res.set_content("refused", "text/plain");
            return httplib::Server::HandlerResponse::Handled;
        });
        http.Get("/small", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_content(R"({"ok":true})", "application/json");
        });
        http.Get("/big", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_content(pattern(300'001), "application/json");
        });
        http.Get("/empty", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.status = 202;
        });
        http.Post("/echo", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_content(req.body, "application/octet-stream");
        });
        // An SSE stream whose second event waits until the client has read the first: held
        // bytes would leave both sides waiting until the timeout.
        http.Get("/events", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_chunked_content_provider("text/event-stream", [this](std::size_t offset,
                                                                         httplib::DataSink& sink) {
                if (offset == 0) return sink.write("data: one\n\n", 11);
                (void)agency::testing::eventually([this] { return event_seen.load(); }, 3000ms,
                                                  1ms);
                handler_saw_event_read = event_seen.load();
                sink.write("data: two\n\n", 11);
                sink.done();
                return true;
            });
        });
        start();
    }
};

TEST(PlainServer, AnswersOfEveryShapeOnOneKeptAliveConnection) {
    Server server;
    httplib::Client client("127.0.0.1", server.port);
    client.set_keep_alive(true);
    for (int round = 0; round < 3; ++round) {
        auto small = client.Get("/small");
        ASSERT_TRUE(small) << httplib::to_string(small.error());
        EXPECT_EQ(small->status, 200);
        EXPECT_EQ(small->body, R"({"ok":true})");

        auto big = client.Get("/big");
        ASSERT_TRUE(big);
        EXPECT_EQ(big->body, pattern(300'001));

        auto empty = client.Get("/empty");
        ASSERT_TRUE(empty);
        EXPECT_EQ(empty->status, 202);
        EXPECT_TRUE(empty->body.empty());

        const std::string sent = pattern(200'003);
        auto echo = client.Post("/echo", sent, "application/octet-stream");
        ASSERT_TRUE(echo);
        EXPECT_EQ(echo->body, sent);
    }
    EXPECT_EQ(server.connections(), 1u);

    // httplib's client drops its connection after these, so they come last.
    auto head = client.Head("/big");
    ASSERT_TRUE(head);
    EXPECT_EQ(head->get_header_value("Content-Length"), "300001");
    EXPECT_TRUE(head->body.empty());
    auto missing = client.Get("/missing");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    auto after = client.Get("/small");
    ASSERT_TRUE(after);
    EXPECT_EQ(after->body, R"({"ok":true})");
}

TEST(PlainServer, StreamsEventsWhileTheHandlerRuns) {
    Server server;
    httplib::Client client("127.0.0.1", server.port);
    std::string received;
    auto res = client.Get("/events", [&](const char* data, std::size_t size) {
        received.append(data, size);
        if (received.find("data: one\n\n") != std::string::npos) server.event_seen = true;
        return true;
    });
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(received, "data: one\n\ndata: two\n\n");
    EXPECT_TRUE(server.handler_saw_event_read.load());
}

// A request refused before its body is read leaves the body in the stream; it must not be
// taken for the next request on the connection.
TEST(PlainServer, ABodyLeftUnreadDoesNotBecomeTheNextRequest) {
    Server server;
    const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(sock, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(server.port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    auto exchange = [&](const std::string& request, const std::string& wanted) {
        EXPECT_EQ(::send(sock, request.data(), request.size(), 0),
                  static_cast<ssize_t>(request.size()));
        std::string got;
        char buf[4096];
        pollfd p{sock, POLLIN, 0};
        while (got.find(wanted) == std::string::npos && ::poll(&p, 1, 3000) > 0) {
            const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
            if (n <= 0) break;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return got;
    };
    const std::string body = R"({"refused":"before this body is read"})";
    std::string first = exchange("POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                                     std::to_string(body.size()) + "\r\n\r\n" + body,
                                 "refused");
    EXPECT_EQ(first.rfind("HTTP/1.1 403", 0), 0u) << first;
    std::string second =
        exchange("GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", R"({"ok":true})");
    ::close(sock);
    EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
    EXPECT_NE(second.find(R"({"ok":true})"), std::string::npos) << second;
}

TEST(PlainServer, StopDoesNotWaitForIdleConnections) {
    auto server = std::make_unique<Server>();
    httplib::Client client("127.0.0.1", server->port);
    client.set_keep_alive(true);
    ASSERT_TRUE(client.Get("/small"));
    // The connection is now idle, with 5 s of keep-alive left.
    const auto started = std::chrono::steady_clock::now();
    server.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
}

// A process that starts a child (the tests start agency-mcp, the server starts nothing yet, an
// operator's hook might) shares every socket with it between fork and exec. The sweep that
// closes an idle connection then leaves the socket alive in the child: its epoll entry must go
// with the connection, or the hang-up it just caused comes back carrying the freed connection
// (AddressSanitizer: heap-use-after-free in on_readable, met in ServeCli's tests).
TEST(PlainServer, AnIdleConnectionClosedWhileAChildHoldsItsSocketIsForgotten) {
    struct Short : agency::testing::LoopbackServer<agency::net::PlainServer> {
        Short() {
            http.set_keep_alive_timeout(1);
            http.Get("/small", [](const httplib::Request&, httplib::Response& res) {
                res.set_content(R"({"ok":true})", "application/json");
            });
            start();
        }
    } server;
    const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(server.port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string request = "GET /small HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(::send(sock, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    char buffer[4096];
    const ssize_t got = ::recv(sock, buffer, sizeof buffer, 0);
    ASSERT_GT(got, 0);
    EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(got)).rfind("HTTP/1.1 200", 0), 0u);

    // The connection is parked: a child now holds every descriptor, the server's side too.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Gone with this process, or after 10 s, and holding no pipe a runner waits on.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::close(STDOUT_FILENO);
        ::close(STDERR_FILENO);
        ::alarm(10);
        ::pause();
        ::_exit(0);
    }
    // Past the 1 s keep-alive the sweep closes the connection: the client reads its end.
    pollfd pfd{sock, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 5000);
    ssize_t end = -1;
    if (ready == 1) end = ::recv(sock, buffer, sizeof buffer, 0);
    // The server goes on: a second connection is answered (the epoll thread is alive).
    httplib::Client client("127.0.0.1", server.port);
    const auto answer = client.Get("/small");
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::close(sock);
    EXPECT_EQ(ready, 1) << "the idle connection was not closed within 5 s";
    EXPECT_EQ(end, 0) << "the idle connection ends with a close, not an error";
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
}

}  // namespace
