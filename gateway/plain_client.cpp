#include "gateway/plain_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace agency::gateway {

namespace {

// 64 KiB per recv: a loopback or LAN socket usually holds that much of a large body already.
constexpr std::size_t kReadChunk = 64 * 1024;

int timeout_ms(time_t sec, time_t usec) {
    return static_cast<int>(sec * 1000 + usec / 1000);
}

// Waits for `events` on `sock`; false on timeout or error.
bool wait_for(int sock, short events, int timeout) {
    pollfd p{sock, events, 0};
    int r;
    do {
        r = ::poll(&p, 1, timeout);
    } while (r < 0 && errno == EINTR);
    return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
}

void describe_address(const sockaddr_storage& addr, std::string& ip, int& port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
        ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
        port = ntohs(in.sin_port);
    } else if (addr.ss_family == AF_INET6) {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
        ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
        port = ntohs(in6.sin6_port);
    }
    ip = text;
}

// Reads ahead into a 64 KiB buffer, and tries each recv/send before polling: a body that is
// already in the socket costs one system call per 64 KiB instead of two per 4 KiB. Like
// httplib's own stream, it lives for one request on a keep-alive connection; HTTP/1.1 without
// pipelining sends nothing past the answer, so nothing read ahead is lost with it.
class LargeReadStream final : public httplib::Stream {
public:
    LargeReadStream(int sock, int read_timeout, int write_timeout, char* buffer)
        : sock_(sock), read_timeout_(read_timeout), write_timeout_(write_timeout),
          buffer_(buffer) {}

    bool is_readable() const override {
        return begin_ < end_ || wait_for(sock_, POLLIN, read_timeout_);
    }

    bool is_writable() const override { return wait_for(sock_, POLLOUT, write_timeout_); }

    ssize_t read(char* ptr, size_t size) override {
        if (begin_ == end_) {
            const ssize_t n = fill();
            if (n <= 0) return n;
        }
        const std::size_t n = std::min(size, end_ - begin_);
        std::memcpy(ptr, buffer_ + begin_, n);
        begin_ += n;
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, size_t size) override {
        while (true) {
            const ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
            if (!is_writable()) return -1;
        }
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
            describe_address(addr, ip, port);
    }

    void get_local_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
            describe_address(addr, ip, port);
    }

    socket_t socket() const override { return sock_; }

private:
    // One recv into the empty buffer, waiting (up to the read timeout) only when nothing is
    // there yet. Returns what recv returned: 0 at end of stream, -1 on error or timeout.
    ssize_t fill() {
        begin_ = end_ = 0;
        while (true) {
            const ssize_t n = ::recv(sock_, buffer_, kReadChunk, MSG_DONTWAIT);
            if (n >= 0) {
                end_ = static_cast<std::size_t>(n);
                return n;
            }
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
            if (!wait_for(sock_, POLLIN, read_timeout_)) return -1;
        }
    }

    int sock_;
    int read_timeout_;
    int write_timeout_;
    char* buffer_;  // kReadChunk bytes, the client's
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

}  // namespace

bool PlainClient::process_socket(const Socket& socket,
                                 std::function<bool(httplib::Stream& strm)> callback) {
    if (!buffer_) buffer_ = std::make_unique<char[]>(kReadChunk);
    LargeReadStream strm(socket.sock, timeout_ms(read_timeout_sec_, read_timeout_usec_),
                         timeout_ms(write_timeout_sec_, write_timeout_usec_), buffer_.get());
    return callback(strm);
}

}  // namespace agency::gateway
