#include "server/socket_stream.hpp"

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
            // Without zero-filling the room first: that fill was a tenth of a list_rankings
            // call's CPU (why this library is built as C++23).
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

// --- PlainServer -----------------------------------------------------------------------------

namespace {

constexpr std::size_t max_head_bytes = StreamBuffers::read_size;
constexpr int sweep_ms = 100;  // how often deadlines are looked at
// How long a thread that has just answered waits for the connection's next request before it
// hands the connection back to the epoll thread (only while no connection waits for a thread).
constexpr int linger_ms = 20;
// A connection answered without its body being read is closed after this much more of it, or
// this long.
constexpr std::size_t max_drain_bytes = 1024 * 1024;
constexpr auto drain_time = std::chrono::seconds(2);

const char* const refused_busy =
    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
    "Content-Type: application/json\r\nContent-Length: 50\r\n\r\n"
    "{\"error\":\"too many connections; try again later\"}";
const char* const refused_slow =
    "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
const char* const refused_bad =
    "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
const char* const refused_large =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n"
    "Content-Length: 0\r\n\r\n";

// A last word to a connection about to be closed; never waits.
void say_and_close(int sock, const char* text) {
    if (text != nullptr) ::send(sock, text, std::strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
}

// The length of the head at the start of `bytes` (0: not all there), looking for its end
// from where the last look stopped.
std::size_t head_size(const std::string& bytes, std::size_t from) {
    from = from > 3 ? from - 3 : 0;
    const auto end = bytes.find("\r\n\r\n", from);
    return end == std::string::npos ? 0 : end + 4;
}

// httplib reads header values as C strings: a NUL would cut a value short unseen (a session
// id "abc\0junk" would pass as "abc"). HTTP allows no NUL in a head, so such a head is
// refused whole.
bool has_nul(const char* head, std::size_t size) { return std::memchr(head, 0, size) != nullptr; }

}  // namespace

// httplib's accept loop hands each connection to its task queue; this queue admits it into
// the epoll set at once (on the accept thread) and owns the serving threads.
class PlainServer::Reactor final : public httplib::TaskQueue {
public:
    using clock = std::chrono::steady_clock;

    struct Conn {
        int sock;
        std::string peer;
        std::string pending;  // read by the epoll thread, not yet by httplib
        clock::time_point deadline;
        bool parked = false;  // in the epoll set (owned by the epoll thread) or being served
        bool head_started = false;
        // Answered without its body being read, and closing: what the peer still sends is
        // read and dropped for a while, so that closing does not reset the connection (and
        // lose the answer) under a client still sending.
        bool draining = false;
        std::size_t drained = 0;
        bool evicted = false;  // shut down to make room; the epoll thread closes it
    };

    explicit Reactor(PlainServer& server) : server_(server), limits_(server.limits_) {
        idle_timeout_ = std::chrono::seconds(std::max<time_t>(1, server.keep_alive_timeout_sec_));
        epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
        wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = nullptr;
        ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
        loop_ = std::thread([this] { run_loop(); });
        server_.reactor_ = this;
    }

    ~Reactor() override {
        shutdown();
        server_.reactor_ = nullptr;
        ::close(epoll_);
        ::close(wake_);
    }

    // Runs httplib's job (PlainServer::process_and_close_socket) here: admitting a connection
    // never blocks.
    void enqueue(std::function<void()> fn) override { fn(); }

    void shutdown() override {
        {
            std::lock_guard lock(mutex_);
            if (stopped_) return;
            stopped_ = true;
        }
        std::uint64_t one = 1;
        [[maybe_unused]] auto w = ::write(wake_, &one, sizeof one);
        loop_.join();
        std::vector<std::thread> threads;
        {
            std::lock_guard lock(mutex_);
            // Idle connections go at once; connections being served finish their request.
            for (auto it = conns_.begin(); it != conns_.end();) {
                Conn* c = it->second.get();
                if (c->parked) {
                    forget_locked(c->peer);
                    ::shutdown(c->sock, SHUT_RDWR);
                    ::close(c->sock);
                    it = conns_.erase(it);
                } else {
                    ++it;
                }
            }
            threads.swap(threads_);
        }
        work_ready_.notify_all();
        for (auto& t : threads) t.join();
    }

    void admit(int sock) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        std::string peer;
        int port = 0;
        if (::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
            describe_address(addr, peer, port);
        std::unique_lock lock(mutex_);
        if (stopped_) {
            lock.unlock();
            say_and_close(sock, nullptr);
            return;
        }
        auto known = per_peer_.find(peer);
        if ((known != per_peer_.end() && known->second >= limits_.max_connections_per_peer) ||
            (conns_.size() - evicted_ >= limits_.max_connections && !evict_idle_locked())) {
            lock.unlock();
            say_and_close(sock, refused_busy);
            return;
        }
        ++per_peer_[peer];
        auto conn = std::make_unique<Conn>();
        Conn* c = conn.get();
        c->sock = sock;
        c->peer = std::move(peer);
        conns_[sock] = std::move(conn);
        server_.open_ = conns_.size();
        // A new connection has the idle time to start its first request.
        c->deadline = clock::now() + idle_timeout_;
        park_locked(c);
    }

private:
    // The longest-idle kept-alive connection (no request begun) is closed to make room. This
    // runs on the accept thread while the epoll thread may be about to read the connection, so
    // it is only shut down here: the epoll thread sees the hang-up and closes it.
    bool evict_idle_locked() {
        Conn* oldest = nullptr;
        for (auto& [sock, c] : conns_)
            if (c->parked && !c->head_started && !c->evicted &&
                (!oldest || c->deadline < oldest->deadline))
                oldest = c.get();
        if (!oldest) return false;
        oldest->evicted = true;
        ++evicted_;
        ::shutdown(oldest->sock, SHUT_RDWR);
        return true;
    }

    void forget_locked(const std::string& peer) {
        auto it = per_peer_.find(peer);
        if (it != per_peer_.end() && --it->second == 0) per_peer_.erase(it);
    }

    // Only on the thread that owns the connection: the epoll thread for a parked one (events
    // hold its address), its serving thread otherwise.
    void close_locked(Conn* c, const char* last_word) {
        const int sock = c->sock;
        if (c->evicted) --evicted_;
        forget_locked(c->peer);
        conns_.erase(sock);  // frees c
        server_.open_ = conns_.size();
        say_and_close(sock, last_word);
    }

    void close(Conn* c, const char* last_word = nullptr) {
        std::lock_guard lock(mutex_);
        close_locked(c, last_word);
    }

    // Into the epoll set until its next bytes (c->deadline set by the caller).
    void park_locked(Conn* c) {
        c->parked = true;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
        ev.data.ptr = c;
        if (::epoll_ctl(epoll_, EPOLL_CTL_MOD, c->sock, &ev) != 0 &&
            ::epoll_ctl(epoll_, EPOLL_CTL_ADD, c->sock, &ev) != 0)
            close_locked(c, nullptr);
    }

    void park(Conn* c) {
        std::lock_guard lock(mutex_);
        if (stopped_) {
            close_locked(c, nullptr);
            return;
        }
        // A head begun has the head time from now; otherwise the keep-alive idle time.
        c->head_started = !c->pending.empty();
        c->deadline = clock::now() + (c->head_started ? limits_.head_timeout : idle_timeout_);
        park_locked(c);
    }

    void run_loop() {
        epoll_event events[128];
        auto last_sweep = clock::now();
        for (;;) {
            const int n = ::epoll_wait(epoll_, events, 128, sweep_ms);
            if (n < 0 && errno != EINTR) break;
            for (int i = 0; i < n; ++i) {
                if (events[i].data.ptr == nullptr) return;  // shutdown
                on_readable(static_cast<Conn*>(events[i].data.ptr));
            }
            const auto now = clock::now();
            if (now - last_sweep >= std::chrono::milliseconds(sweep_ms)) {
                last_sweep = now;
                sweep(now);
            }
        }
    }

    // The epoll thread reads what has come, without waiting; a whole head goes to a thread.
    void on_readable(Conn* c) {
        char chunk[16 * 1024];
        // A connection comes here from a serving thread through epoll, which orders what that
        // thread wrote (pending input, draining) before this read; ThreadSanitizer cannot see
        // that, so the mutex park_locked held orders it visibly too (uncontended: cheap).
        bool draining = false;
        {
            std::lock_guard lock(mutex_);
            draining = c->draining;
        }
        if (draining) return drain(c, chunk, sizeof chunk);
        bool complete = false;
        for (;;) {
            const ssize_t n = ::recv(c->sock, chunk, sizeof chunk, MSG_DONTWAIT);
            if (n > 0) {
                const std::size_t before = c->pending.size();
                if (before == 0) {
                    std::lock_guard lock(mutex_);
                    c->head_started = true;
                    c->deadline = clock::now() + limits_.head_timeout;
                }
                c->pending.append(chunk, static_cast<std::size_t>(n));
                if (const std::size_t size = head_size(c->pending, before)) {
                    if (has_nul(c->pending.data(), size)) return close(c, refused_bad);
                    complete = true;
                    break;
                }
                if (c->pending.size() > max_head_bytes) return close(c, refused_large);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            return close(c);  // end of stream or error, without a whole head
        }
        std::lock_guard lock(mutex_);
        if (!complete) {
            park_locked(c);  // the head's deadline stands: trickling bytes do not extend it
            return;
        }
        c->parked = false;
        ready_.push_back(c);
        ++queued_;
        if (ready_.size() > waiting_ && threads_.size() < limits_.threads && !stopped_)
            threads_.emplace_back([this] { serve_loop(); });
        work_ready_.notify_one();
    }

    void drain(Conn* c, char* chunk, std::size_t size) {
        for (;;) {
            const ssize_t n = ::recv(c->sock, chunk, size, MSG_DONTWAIT);
            if (n > 0) {
                c->drained += static_cast<std::size_t>(n);
                if (c->drained > max_drain_bytes) return close(c);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            return close(c);
        }
        std::lock_guard lock(mutex_);
        park_locked(c);
    }

    void sweep(clock::time_point now) {
        std::lock_guard lock(mutex_);
        std::vector<Conn*> expired;
        for (auto& [sock, c] : conns_)
            if (c->parked && c->deadline <= now) expired.push_back(c.get());
        for (Conn* c : expired)
            close_locked(c, c->head_started && !c->draining ? refused_slow : nullptr);
    }

    void serve_loop() {
        StreamBuffers buffers;
        for (;;) {
            Conn* c = nullptr;
            {
                std::unique_lock lock(mutex_);
                ++waiting_;
                work_ready_.wait(lock, [this] { return stopped_ || !ready_.empty(); });
                --waiting_;
                if (ready_.empty()) return;
                c = ready_.front();
                ready_.pop_front();
                --queued_;
            }
            ++busy_;
            serve(c, buffers);
            --busy_;
        }
    }

    // Answers requests on the connection while they come without a pause; then hands it back.
    void serve(Conn* c, StreamBuffers& buffers) {
        bool keep = false;
        bool answered_unread = false;
        bool bad_head = false;
        {
            BufferedStream strm(c->sock, timeout_ms(server_.read_timeout_sec_,
                                                    server_.read_timeout_usec_),
                                timeout_ms(server_.write_timeout_sec_, server_.write_timeout_usec_),
                                buffers);
            strm.preload(c->pending);
            std::string().swap(c->pending);
            for (;;) {
                const bool closing = server_.svr_sock_ == INVALID_SOCKET;
                strm.set_read_deadline(clock::now() + limits_.body_timeout);
                strm.start_message();
                bool connection_closed = false;
                bool ok = server_.process_request(strm, closing, connection_closed, nullptr);
                if (!strm.flush()) ok = false;
                if (ok && !closing && strm.close_requested()) {
                    answered_unread = true;
                    break;
                }
                if (!ok || connection_closed || closing) break;
                // httplib gives each request a new stream, so whatever a handler left unread
                // (the body of a request refused before its body was read) is dropped, not
                // taken for the next request. Do the same.
                strm.discard_input();
                if (threads_scarce() || !strm.wait_readable(linger_ms)) {
                    keep = true;
                    break;
                }
                const ssize_t n = strm.read_now();
                if (n == 0 || n == -1) break;
                const std::size_t head = strm.complete_head_size();
                if (head == 0) {
                    keep = true;
                    break;
                }
                if (strm.input_has_nul(head)) {
                    bad_head = true;
                    break;
                }
            }
            if (keep) c->pending = strm.take_input();
        }
        if (keep)
            park(c);
        else if (answered_unread)
            start_draining(c);
        else
            close(c, bad_head ? refused_bad : nullptr);
    }

    void start_draining(Conn* c) {
        ::shutdown(c->sock, SHUT_WR);  // the answer is complete: the peer sees its end
        std::lock_guard lock(mutex_);
        if (stopped_) return close_locked(c, nullptr);
        c->draining = true;
        c->deadline = clock::now() + drain_time;
        park_locked(c);
    }

    // Connections are waiting for a thread, or this is the last one: no waiting here then.
    // (Threads held by open streams do not count: they are not wanted elsewhere.)
    bool threads_scarce() const {
        return queued_.load(std::memory_order_relaxed) > 0 ||
               busy_.load(std::memory_order_relaxed) >= limits_.threads;
    }

    PlainServer& server_;
    ConnectionLimits limits_;
    std::chrono::milliseconds idle_timeout_;
    int epoll_ = -1;
    int wake_ = -1;
    std::thread loop_;
    std::mutex mutex_;
    bool stopped_ = false;
    std::unordered_map<int, std::unique_ptr<Conn>> conns_;
    std::unordered_map<std::string, std::size_t> per_peer_;
    std::size_t evicted_ = 0;  // shut down, not yet closed
    std::deque<Conn*> ready_;
    std::condition_variable work_ready_;
    std::vector<std::thread> threads_;
    std::size_t waiting_ = 0;
    std::atomic<std::size_t> busy_{0};
    std::atomic<std::size_t> queued_{0};  // ready_.size(), read without the lock
};

PlainServer::PlainServer() {
    new_task_queue = [this] { return new Reactor(*this); };
}

PlainServer::~PlainServer() = default;

bool PlainServer::process_and_close_socket(socket_t sock) {
    if (Reactor* reactor = reactor_.load()) {
        reactor->admit(sock);
        return true;
    }
    say_and_close(sock, nullptr);
    return false;
}

}  // namespace agency::net
