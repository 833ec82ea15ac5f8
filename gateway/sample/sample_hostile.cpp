// The sample gateway's hostile answers (issue 30): what a broken or hostile gateway may send,
// so the gateway client's bounds (size, time, redirects, statuses) are tested over real HTTP.
// Every answer is produced while it is written: a 1 GiB one costs the sample nothing.
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include <httplib.h>

#include "gateway/sample/sample_internal.hpp"

namespace agency::sample {

namespace {

constexpr std::string_view kHugeHead = R"({"data":[{"id":"huge-1","text":")";
constexpr std::string_view kHugeTail =
    R"("}],"pagination":{"total":1,"limit":1,"offset":0,"has_more":false}})";
constexpr std::string_view kEndlessRow = R"({"id":"endless","keyword":"again and again"},)";
constexpr std::size_t kFill = 64 * 1024;

// From byte `offset` on, a JSON answer `size` bytes long (at least kHugeHead and kHugeTail):
// kHugeHead, a string of 'x', kHugeTail.
void write_huge(std::uint64_t size, std::size_t offset, std::size_t length,
                httplib::DataSink& sink) {
    static const std::string fill(kFill, 'x');
    const std::uint64_t tail_at = size > kHugeTail.size() ? size - kHugeTail.size() : 0;
    std::string piece;
    const std::size_t end = offset + std::min(length, kFill);
    for (std::size_t at = offset; at < end;) {
        if (at < kHugeHead.size()) {
            const auto n = std::min(end, kHugeHead.size()) - at;
            piece.append(kHugeHead.substr(at, n));
            at += n;
        } else if (at < tail_at) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(end, tail_at) - at);
            piece.append(fill, 0, n);
            at += n;
        } else {
            const auto n = end - at;
            piece.append(kHugeTail.substr(at - tail_at, n));
            at += n;
        }
    }
    sink.write(piece.data(), piece.size());
}

// The connection's socket, found by its two ports (httplib hands a handler neither the
// socket nor the stream): dripping writes the whole answer itself, head included.
int socket_of(const httplib::Request& req) {
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return -1;
    int found = -1;
    while (const dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0') continue;
        sockaddr_storage local{}, peer{};
        socklen_t local_len = sizeof local, peer_len = sizeof peer;
        if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) !=
                0 ||
            ::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
            continue;
        const auto port = [](const sockaddr_storage& a) {
            if (a.ss_family == AF_INET)
                return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
            if (a.ss_family == AF_INET6)
                return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
            return static_cast<std::uint16_t>(0);
        };
        if (port(local) == req.local_port && port(peer) == req.remote_port) {
            found = static_cast<int>(fd);
            break;
        }
    }
    ::closedir(dir);
    return found;
}

// The answer, head and body, one byte every `interval`, until it is all out or the reader
// has gone; then the connection is shut, so httplib's own answer after it goes nowhere. The
// body is chunked: a reader cannot know how much is still to come (and wait for all of it).
void drip(const httplib::Request& req, httplib::Response& res, const std::string& body,
          int status, std::chrono::milliseconds interval) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx", body.size());
    const std::string text = "HTTP/1.1 " + std::to_string(status) +
                             " OK\r\nContent-Type: application/json\r\nTransfer-Encoding: "
                             "chunked\r\nConnection: close\r\n\r\n" +
                             size + "\r\n" + body + "\r\n0\r\n\r\n";
    const int fd = socket_of(req);
    if (fd < 0) {  // not found: the body alone drips
        auto shared = std::make_shared<const std::string>(body);
        res.set_content_provider(
            body.size(), "application/json",
            [shared, interval](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                std::this_thread::sleep_for(interval);
                return sink.write(shared->data() + offset, 1);
            });
        return;
    }
    for (const char byte : text) {
        if (::send(fd, &byte, 1, MSG_NOSIGNAL) != 1) break;
        std::this_thread::sleep_for(interval);
    }
    ::shutdown(fd, SHUT_RDWR);
    res.set_header("Connection", "close");
}

}  // namespace

void make_hostile(const Fault& fault, Reply& reply) {
    switch (fault.mode) {
        case FaultMode::huge: {
            const std::uint64_t size =
                std::max<std::uint64_t>(fault.bytes, kHugeHead.size() + kHugeTail.size());
            reply.status = 200;
            reply.respond = [size](const httplib::Request&, httplib::Response& res) {
                res.set_content_provider(
                    static_cast<std::size_t>(size), "application/json",
                    [size](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                        write_huge(size, offset, length, sink);
                        return true;
                    });
            };
            break;
        }
        case FaultMode::endless:
            reply.status = 200;
            reply.respond = [](const httplib::Request&, httplib::Response& res) {
                res.set_chunked_content_provider(
                    "application/json", [](std::size_t offset, httplib::DataSink& sink) {
                        if (offset == 0) return sink.write("{\"data\":[", 9);
                        std::string rows;
                        while (rows.size() < kFill) rows.append(kEndlessRow);
                        return sink.write(rows.data(), rows.size());  // false: the reader left
                    });
            };
            break;
        case FaultMode::dripping: {
            const auto interval =
                std::chrono::milliseconds(fault.delay_ms > 0 ? fault.delay_ms : 100);
            reply.respond = [body = reply.body, status = reply.status, interval](
                                const httplib::Request& req, httplib::Response& res) {
                drip(req, res, body, status, interval);
            };
            break;
        }
        case FaultMode::redirect: {
            reply = error_reply(302, "moved (injected redirect fault)");
            const std::string host = fault.redirect_port > 0
                                         ? "127.0.0.1:" + std::to_string(fault.redirect_port)
                                         : std::string("redirected.invalid");
            reply.headers.emplace_back("Location", "http://" + host + "/api/redirected");
            break;
        }
        case FaultMode::random_status: {
            thread_local std::mt19937 rng{std::random_device{}()};
            const int status = std::uniform_int_distribution<int>(100, 999)(rng);
            reply = error_reply(
                status, "status " + std::to_string(status) + " (injected random_status fault)");
            break;
        }
        default: break;
    }
}

}  // namespace agency::sample
