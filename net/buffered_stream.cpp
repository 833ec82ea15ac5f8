// BufferedStream: httplib's Stream over a socket with whole reads and gathered writes.
#include "net/socket_stream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace agency::net {

namespace {

// Waits for `events` on `sock`; false on timeout or error.
bool wait_for(int sock, short events, int timeout) {
    pollfd p{sock, events, 0};
    int r;
    do {
        r = ::poll(&p, 1, timeout);
    } while (r < 0 && errno == EINTR);
    return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
}

// A complete header block whose body follows at once: httplib writes the block, then the
// body with the next write. A chunked message (no Content-Length) is not held.
bool is_held_header_block(std::string_view text) {
    if (text.size() < 4 || text.substr(text.size() - 4) != "\r\n\r\n") return false;
    constexpr std::string_view name = "\ncontent-length:";
    auto it = std::search(text.begin(), text.end(), name.begin(), name.end(), [](char a, char b) {
        return a == b || (b >= 'a' && b <= 'z' && (a | 0x20) == b);
    });
    return it != text.end();
}

}  // namespace

int timeout_ms(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

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
    } else {
        port = 0;
    }
    ip = text;
}

BufferedStream::BufferedStream(int sock, int read_timeout_ms, int write_timeout_ms,
                               StreamBuffers& buffers)
    : sock_(sock), read_timeout_(read_timeout_ms), write_timeout_(write_timeout_ms),
      buffers_(buffers) {
    buffers_.ensure();
    buffers_.held.clear();
}

BufferedStream::~BufferedStream() { flush(); }

bool BufferedStream::is_readable() const {
    if (!buffers_.held.empty()) const_cast<BufferedStream*>(this)->flush();
    return wait_readable(read_wait_ms());
}

int BufferedStream::read_wait_ms() const {
    if (deadline_ == std::chrono::steady_clock::time_point::max()) return read_timeout_;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline_ - std::chrono::steady_clock::now())
                          .count();
    return static_cast<int>(std::clamp<long long>(left, 0, read_timeout_));
}

void BufferedStream::preload(std::string_view bytes) {
    buffers_.ensure(std::max(StreamBuffers::read_size, bytes.size()));
    std::memcpy(buffers_.read.get(), bytes.data(), bytes.size());
    begin_ = 0;
    end_ = bytes.size();
}

ssize_t BufferedStream::read_now() {
    if (begin_ == end_) begin_ = end_ = 0;
    if (end_ == buffers_.read_capacity) {
        if (begin_ == 0) return -1;  // a full buffer and still no head: too large
        std::memmove(buffers_.read.get(), buffers_.read.get() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    for (;;) {
        const ssize_t n =
            ::recv(sock_, buffers_.read.get() + end_, buffers_.read_capacity - end_, MSG_DONTWAIT);
        if (n > 0) {
            end_ += static_cast<std::size_t>(n);
            return n;
        }
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? -2 : -1;
    }
}

std::size_t BufferedStream::complete_head_size() const {
    const char* start = buffers_.read.get() + begin_;
    const void* end = ::memmem(start, end_ - begin_, "\r\n\r\n", 4);
    return end == nullptr ? 0 : static_cast<std::size_t>(static_cast<const char*>(end) - start) + 4;
}

bool BufferedStream::input_has_nul(std::size_t size) const {
    return std::memchr(buffers_.read.get() + begin_, 0, std::min(size, end_ - begin_)) != nullptr;
}

std::string BufferedStream::take_input() {
    std::string out(buffers_.read.get() + begin_, end_ - begin_);
    begin_ = end_ = 0;
    return out;
}

bool BufferedStream::wait_readable(int timeout_ms) const {
    return begin_ < end_ || wait_for(sock_, POLLIN, timeout_ms);
}

bool BufferedStream::is_writable() const { return wait_for(sock_, POLLOUT, write_timeout_); }

ssize_t BufferedStream::read(char* ptr, size_t size) {
    // What was held is a request or an answer's head: the peer needs it before it replies.
    if (!buffers_.held.empty() && !flush()) return -1;
    if (buffers_.sink != nullptr && buffers_.consumed < buffers_.body_end)
        return read_into_sink(size);
    if (begin_ == end_) {
        const ssize_t n = fill();
        if (n <= 0) return n;
    }
    const std::size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffers_.read.get() + begin_, n);
    begin_ += n;
    buffers_.consumed += n;
    return static_cast<ssize_t>(n);
}

ssize_t BufferedStream::write(const char* ptr, size_t size) {
    const bool head = message_start_;
    message_start_ = false;
    // A head is the first write since a read, or any write of a status line (after an interim
    // "100 Continue", the final answer's head follows without a read between).
    if ((head || (size > 7 && std::memcmp(ptr, "HTTP/1.", 7) == 0)) &&
        ::memmem(ptr, size, "\r\nConnection: close\r\n", 21) != nullptr)
        close_requested_ = true;
    if (buffers_.held.empty()) {
        if (head && is_held_header_block({ptr, size})) {
            buffers_.held.assign(ptr, size);
            return static_cast<ssize_t>(size);
        }
        return send_all(ptr, size, nullptr, 0) ? static_cast<ssize_t>(size) : -1;
    }
    const bool ok = send_all(buffers_.held.data(), buffers_.held.size(), ptr, size);
    buffers_.held.clear();
    return ok ? static_cast<ssize_t>(size) : -1;
}

bool BufferedStream::flush() {
    if (buffers_.held.empty()) return true;
    const bool ok = send_all(buffers_.held.data(), buffers_.held.size(), nullptr, 0);
    buffers_.held.clear();
    return ok;
}

// One sendmsg for both parts when the socket takes them; waits (up to the write timeout) only
// when it is full.
bool BufferedStream::send_all(const char* a, std::size_t a_size, const char* b,
                              std::size_t b_size) {
    iovec parts[2] = {{const_cast<char*>(a), a_size}, {const_cast<char*>(b), b_size}};
    iovec* next = parts;
    int count = b_size > 0 ? 2 : 1;
    while (count > 0) {
        msghdr msg{};
        msg.msg_iov = next;
        msg.msg_iovlen = static_cast<std::size_t>(count);
        const ssize_t n = ::sendmsg(sock_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
            if (!is_writable()) return false;
            continue;
        }
        auto sent = static_cast<std::size_t>(n);
        while (count > 0 && sent >= next->iov_len) {
            sent -= next->iov_len;
            ++next;
            --count;
        }
        if (count > 0) {
            next->iov_base = static_cast<char*>(next->iov_base) + sent;
            next->iov_len -= sent;
        }
    }
    return true;
}

void BufferedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    if (remote_port_ < 0) look_up(::getpeername, remote_ip_, remote_port_);
    ip = remote_ip_;
    port = remote_port_;
}

void BufferedStream::get_local_ip_and_port(std::string& ip, int& port) const {
    if (local_port_ < 0) look_up(::getsockname, local_ip_, local_port_);
    ip = local_ip_;
    port = local_port_;
}

void BufferedStream::look_up(int (*query)(int, sockaddr*, socklen_t*), std::string& ip,
                             int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (query(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) describe_address(addr, ip, port);
}

// One recv into the empty buffer, waiting (up to the read timeout) only when nothing is there
// yet. Returns what recv returned: 0 at end of stream, -1 on error or timeout.
//
// While a body of known length is read, the wait is for the rest of it (up to the buffer's
// size): without that, a reader faster than its peer wakes for each segment the peer sends
// (~3 wake-ups per 230 KB gateway page on loopback).
ssize_t BufferedStream::fill() {
    begin_ = end_ = 0;
    message_start_ = true;
    const std::uint64_t due =
        buffers_.body_end > buffers_.consumed ? buffers_.body_end - buffers_.consumed : 0;
    if (due > buffers_.read_capacity)
        buffers_.ensure(std::min<std::size_t>(due, StreamBuffers::max_read_size));
    const std::size_t capacity = buffers_.read_capacity;
    set_low_water(static_cast<int>(std::clamp<std::uint64_t>(due, 1, capacity)));
    while (true) {
        const ssize_t n = ::recv(sock_, buffers_.read.get(), capacity, MSG_DONTWAIT);
        if (n >= 0) {
            end_ = static_cast<std::size_t>(n);
            return n;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (!wait_for(sock_, POLLIN, read_wait_ms())) return -1;
    }
}

// The announced body's next bytes into the sink: first what the buffer holds (what came with
// the head), then straight from the socket, at most max_read_size at a time (the sink grows
// with what arrives, not with what was announced), never past the body's end.
ssize_t BufferedStream::read_into_sink(std::size_t size) {
    if (buffers_.sink_ready == 0) {
        message_start_ = true;
        std::string& sink = *buffers_.sink;
        const std::uint64_t due = buffers_.body_end - buffers_.consumed;
        if (begin_ < end_) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(due, end_ - begin_));
            sink.append(buffers_.read.get() + begin_, n);
            begin_ += n;
            buffers_.sink_ready = n;
        } else {
            const auto want =
                static_cast<std::size_t>(std::min<std::uint64_t>(due, StreamBuffers::max_read_size));
            set_low_water(static_cast<int>(want));
            const std::size_t old = sink.size();
            ssize_t n = -1;
            const auto receive = [&](char* data, std::size_t) {
                while ((n = ::recv(sock_, data + old, want, MSG_DONTWAIT)) < 0) {
                    if (errno == EINTR) continue;
                    if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
                        !wait_for(sock_, POLLIN, read_wait_ms()))
                        break;
                }
                return old + static_cast<std::size_t>(std::max<ssize_t>(n, 0));
            };
#if defined(__cpp_lib_string_resize_and_overwrite)
            // Without zero-filling the room first: a page is written once, by the socket
            // (why this library is built as C++23).
            sink.resize_and_overwrite(old + want, receive);
#else
            sink.resize(old + want);
            sink.resize(receive(sink.data(), old + want));
#endif
            if (n <= 0) return n < 0 ? -1 : 0;
            buffers_.sink_ready = static_cast<std::size_t>(n);
        }
    }
    const std::size_t n = std::min(size, buffers_.sink_ready);
    buffers_.sink_ready -= n;
    buffers_.consumed += n;
    return static_cast<ssize_t>(n);
}

void BufferedStream::set_low_water(int bytes) {
    // A socket not seen before has the default of 1. (If a closed socket's number came back,
    // the worst case is one wait per segment again, never a wait for bytes that will not come:
    // the mark is only ever set to bytes already announced.)
    if (buffers_.lowat_sock != sock_) {
        buffers_.lowat_sock = sock_;
        buffers_.lowat = 1;
    }
    if (buffers_.lowat == bytes) return;
    if (::setsockopt(sock_, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0)
        buffers_.lowat = bytes;
}

}  // namespace agency::net
