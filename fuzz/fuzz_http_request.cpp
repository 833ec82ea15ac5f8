// An HTTP request (head and body, or several pipelined on one connection) through the real
// Streamable HTTP transport: the input is sent as it stands over a loopback connection to an
// HttpTransport serving every tool over the in-process sample gateway, then the connection is
// half-closed and the answer read to its end. Checks that the server survives and answers a
// plain request on a fresh connection afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "transport/http_transport.hpp"

namespace {

agency::fuzz::ToolServer* g_server = nullptr;
agency::mcp::HttpTransport* g_http = nullptr;
int g_port = 0;
std::uint64_t g_runs = 0;

int connect_loopback() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) std::abort();
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(g_port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::perror("fuzz_http_request: connect");
        std::abort();
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Closes with a reset, so a million connections leave no TIME_WAIT behind on either side.
void close_hard(int fd) {
    const linger hard{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    ::close(fd);
}

// Sends `request`, half-closes, and reads the answer until the server closes (or `wait_ms` of
// silence). Returns what came back.
std::string exchange(const char* request, std::size_t size, int wait_ms) {
    const int fd = connect_loopback();
    std::size_t sent = 0;
    std::string answer;
    char buf[65536];
    while (sent < size) {
        const ssize_t n = ::send(fd, request + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // the server closed
        // The server is not reading: take what it wrote, then wait until it can take more.
        pollfd p{fd, POLLOUT | POLLIN, 0};
        if (::poll(&p, 1, wait_ms) <= 0) break;
        if (p.revents & POLLIN) {
            const ssize_t r = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (r > 0) answer.append(buf, static_cast<std::size_t>(r));
            if (r == 0) break;
        }
    }
    ::shutdown(fd, SHUT_WR);
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, wait_ms) <= 0) break;
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        answer.append(buf, static_cast<std::size_t>(r));
    }
    close_hard(fd);
    return answer;
}

void check_still_serving() {
    static const std::string body =
        R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{)"
        R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
        R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
    static const std::string ping =
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        "Mcp-Method: server/discover\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    const std::string answer = exchange(ping.data(), ping.size(), 10'000);
    if (answer.rfind("HTTP/1.1 200", 0) != 0) {
        std::fprintf(stderr, "the HTTP transport no longer answers a plain request: %.300s\n",
                     answer.c_str());
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    agency::fuzz::quiet_logs();
    g_server = agency::fuzz::start_tool_server();
    agency::mcp::HttpOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.max_body_bytes = 256 * 1024;
    options.threads = 8;
    options.workers = 4;
    g_http = new agency::mcp::HttpTransport(*g_server->server, options);
    g_port = g_http->start();
    agency::fuzz::at_exit([] {
        g_http->stop();
        delete g_http;
    });
    check_still_serving();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    exchange(reinterpret_cast<const char*>(data), size, 5'000);
    // Now and then (and in every replay of a single input), a plain request must still work.
    if (++g_runs % 1000 == 1) check_still_serving();
    return 0;
}
