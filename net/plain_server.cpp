// PlainServer: httplib's server with its connections parked in an epoll set between requests.
#include "net/socket_stream.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "base/log.hpp"
#include "net/request_head.hpp"

namespace agency::net {

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

// A refusal's whole text: the head, a Content-Length counted from the body, the body.
std::string refusal(std::string_view head, std::string_view body) {
    std::string text(head);
    text += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    text += body;
    return text;
}

// The answer to a connection over the bounds; made at the first refusal and never destroyed
// (the accept thread may refuse one while the process exits).
const char* refused_busy() {
    static const auto* text =
        new std::string(refusal("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                                "Connection: close\r\nContent-Type: application/json\r\n",
                                R"({"error":"too many connections; try again later"})"));
    return text->c_str();
}

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

thread_local int serving_socket = -1;  // the connection this thread serves a request of

// Sets serving_socket for one request.
struct ServingSocket {
    explicit ServingSocket(int sock) { serving_socket = sock; }
    ~ServingSocket() { serving_socket = -1; }
    ServingSocket(const ServingSocket&) = delete;
    ServingSocket& operator=(const ServingSocket&) = delete;
};

}  // namespace

int request_socket() { return serving_socket; }

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
        // The request being read by the epoll thread: its head's length once whole (0 before),
        // and the body it announced when that is read here too (reserved of
        // max_buffered_bodies, from body_at).
        std::size_t head_bytes = 0;
        std::size_t reserved = 0;
        clock::time_point body_at;
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
            threads = threads_.take_all();
        }
        work_ready_.notify_all();
        for (auto& t : threads) t.join();
    }

    // Serving threads alive now (they leave when idle).
    std::size_t threads() {
        std::lock_guard lock(mutex_);
        return threads_.size();
    }

    void admit(int sock) {
        // Not into a child process this one starts (httplib accepts without SOCK_CLOEXEC): a
        // child holding the socket would keep the connection open after it is closed here.
        ::fcntl(sock, F_SETFD, ::fcntl(sock, F_GETFD) | FD_CLOEXEC);
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
            say_and_close(sock, refused_busy());
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
        // Out of the epoll set before the close: closing the descriptor alone leaves an armed
        // entry behind while another reference to the socket lives (a child process between
        // fork and exec holds one), and its next event would carry the freed connection.
        ::epoll_ctl(epoll_, EPOLL_CTL_DEL, sock, nullptr);
        if (c->evicted) --evicted_;
        buffered_bodies_ -= c->reserved;
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
                if (c->head_bytes == 0) {
                    const std::size_t size = head_size(c->pending, before);
                    if (size == 0) {
                        if (c->pending.size() > max_head_bytes) return close(c, refused_large);
                        continue;
                    }
                    if (has_nul(c->pending.data(), size)) return close(c, refused_bad);
                    c->head_bytes = size;
                    plan_body(c);
                }
                if (c->pending.size() >= c->head_bytes + c->reserved) {
                    complete = true;
                    break;
                }
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            return close(c);  // end of stream or error, without a whole request
        }
        std::lock_guard lock(mutex_);
        if (!complete) {
            park_locked(c);  // the deadline stands: trickling bytes do not extend it
            return;
        }
        buffered_bodies_ -= c->reserved;
        c->reserved = 0;
        c->head_bytes = 0;
        c->parked = false;
        ready_.push_back(c);
        ++queued_;
        if (ready_.size() > waiting_ && threads_.size() < limits_.threads && !stopped_) {
            try {
                threads_.start([this] { serve_loop(); });
            } catch (const std::system_error& e) {
                // At the process's thread limit: the serving threads there are take it in turn
                // (readiness says so meanwhile: base::thread_shortage).
                log::warn("could not start a serving thread ({} running): {}",
                          threads_.size(), e.what());
            }
        }
        work_ready_.notify_one();
    }

    // A body announced small enough (and within what all connections may hold) is read here
    // before a thread takes the request: its deadline is body_timeout from now, and the sweep
    // holds it to min_body_rate.
    void plan_body(Conn* c) {
        const auto length = announced_length(std::string_view(c->pending.data(), c->head_bytes));
        if (!length || *length == 0 || *length > limits_.max_buffered_body) return;
        std::lock_guard lock(mutex_);
        if (buffered_bodies_ + *length > limits_.max_buffered_bodies) return;
        buffered_bodies_ += *length;
        c->reserved = *length;
        c->body_at = clock::now();
        c->deadline = c->body_at + limits_.body_timeout;
    }

    // Whether a body read here has fallen behind min_body_rate (after the grace).
    bool body_too_slow(const Conn* c, clock::time_point now) const {
        if (c->reserved == 0 || now - c->body_at <= limits_.body_rate_grace) return false;
        const double seconds =
            std::chrono::duration<double>(now - c->body_at - limits_.body_rate_grace).count();
        const std::size_t due = std::min(
            c->reserved, static_cast<std::size_t>(seconds * static_cast<double>(limits_.min_body_rate)));
        return c->pending.size() - c->head_bytes < due;
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
            if (c->parked && (c->deadline <= now || body_too_slow(c.get(), now)))
                expired.push_back(c.get());
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
                const bool woke = work_ready_.wait_for(
                    lock, limits_.idle_threads.after, [this] { return stopped_ || !ready_.empty(); });
                --waiting_;
                if (!woke && threads_.may_leave(limits_.idle_threads)) {
                    // Idle after a burst: this thread and its buffers go.
                    std::thread before = threads_.leave();
                    lock.unlock();
                    base::join_left(std::move(before));
                    return;
                }
                if (!woke) continue;
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
                ServingSocket serving(c->sock);
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
    base::ThreadSet threads_;
    std::size_t buffered_bodies_ = 0;  // bodies read by the epoll thread, reserved (mutex_)
    std::size_t waiting_ = 0;
    std::atomic<std::size_t> busy_{0};
    std::atomic<std::size_t> queued_{0};  // ready_.size(), read without the lock
};

PlainServer::PlainServer() {
    new_task_queue = [this] { return new Reactor(*this); };
}

PlainServer::~PlainServer() = default;

std::size_t PlainServer::serving_threads() {
    Reactor* reactor = reactor_.load();
    return reactor != nullptr ? reactor->threads() : 0;
}

bool PlainServer::process_and_close_socket(socket_t sock) {
    if (Reactor* reactor = reactor_.load()) {
        reactor->admit(sock);
        return true;
    }
    say_and_close(sock, nullptr);
    return false;
}

}  // namespace agency::net
