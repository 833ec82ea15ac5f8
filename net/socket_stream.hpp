// Socket I/O under cpp-httplib, for our HTTP servers and the plain-HTTP gateway client.
//
// Debian's httplib 0.11 is a compiled library, so its buffer sizes are fixed: its stream reads
// 4 KiB per recv() with a poll() before each, polls before every send(), and writes a message's
// header block and its body with two send() calls (on loopback each send also runs the
// receiver's TCP input). httplib lets a client or server class supply the Stream its HTTP code
// runs on (its own SSLClient/SSLServer do), so these keep all of httplib's HTTP handling and
// only replace the system calls underneath it (bench/findings.md, entries 14 and 17).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <httplib.h>

#include "base/thread_set.hpp"

namespace agency::net {

// Buffers a stream uses, owned by whoever outlives it (a connection, a pooled client), so a
// request does not allocate them again.
struct StreamBuffers {
    static constexpr std::size_t read_size = 64 * 1024;
    // A body announced larger than read_size gets a buffer up to this size, so that one wake-up
    // takes in a whole gateway page (entry 20 of bench/findings.md).
    static constexpr std::size_t max_read_size = 256 * 1024;
    std::unique_ptr<char[]> read;
    std::size_t read_capacity = 0;
    std::string held;  // a header block waiting for its body (see BufferedStream::write)
    // Bytes read() has handed out, and the count at which the body being read ends (0 when
    // no length was announced): what is certain to arrive, so a wait can be for all of it.
    std::uint64_t consumed = 0;
    std::uint64_t body_end = 0;
    // Where the announced body goes instead of through read()'s caller (see expect_body), and
    // how many of its bytes are there that read() has not yet reported.
    std::string* sink = nullptr;
    std::size_t sink_ready = 0;
    // The SO_RCVLOWAT last set, and on which socket.
    int lowat_sock = -1;
    int lowat = 1;
    void ensure(std::size_t size = read_size) {
        if (read_capacity >= size) return;
        read = std::make_unique<char[]>(size);
        read_capacity = size;
    }
    // The next `length` bytes read() hands out are a body that the peer has announced. With a
    // sink, those bytes are appended to *sink (received straight into it where they are not
    // buffered yet) and read() only reports how many there were: its caller's buffer is left
    // as it was, so the caller must take the body from the sink. This saves the two copies of
    // every byte through httplib's 4 KiB buffer (bench/findings.md, entry 24).
    void expect_body(std::size_t length, std::string* into = nullptr) {
        body_end = consumed + length;
        sink = into;
        sink_ready = 0;
    }
    // Forgets the announced body (at the start and end of each exchange).
    void clear_body() { expect_body(0); }
};

// Reads up to 64 KiB per recv (a body announced through StreamBuffers::expect_body: up to
// 256 KiB, waiting for all of it at once), trying the recv before polling; writes without
// polling first.
// The head of a message (its first write since a read) is held back when it announces a
// Content-Length, and sent with the body that follows it in one sendmsg; anything held goes
// out before the next read, with the next write, or at flush(). A chunked answer (an SSE
// stream) is never held: its events are written as they come.
class BufferedStream final : public httplib::Stream {
public:
    BufferedStream(int sock, int read_timeout_ms, int write_timeout_ms, StreamBuffers& buffers);
    ~BufferedStream() override;

    bool is_readable() const override;
    bool is_writable() const override;
    ssize_t read(char* ptr, size_t size) override;
    // Writes all of [ptr, ptr+size) (httplib treats a short write of a body as a failure).
    ssize_t write(const char* ptr, size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return sock_; }

    bool flush();
    // The next write starts a message (a server calls this before each request it answers).
    void start_message() {
        message_start_ = true;
        close_requested_ = false;
    }
    bool has_buffered_input() const { return begin_ < end_; }
    void discard_input() { begin_ = end_ = 0; }
    // Waits up to timeout_ms for a byte to read; false on timeout, error or end of stream.
    bool wait_readable(int timeout_ms) const;

    // For a server that reads request heads itself before httplib does (PlainServer):
    // bytes already read from the socket, to be read first.
    void preload(std::string_view bytes);
    // Appends what the socket has now, without waiting: > 0 bytes read, 0 at end of stream,
    // -1 on error, -2 when nothing is there yet.
    ssize_t read_now();
    // The length of the whole request head (up to its blank line) at the start of the
    // buffered input; 0 when it is not all there yet.
    std::size_t complete_head_size() const;
    // Whether the first `size` bytes of the buffered input hold a NUL.
    bool input_has_nul(std::size_t size) const;
    // The buffered input, taken out of the stream.
    std::string take_input();
    // Reads (and waits for reads) fail after this time point (no deadline by default).
    void set_read_deadline(std::chrono::steady_clock::time_point deadline) { deadline_ = deadline; }
    // Whether a message head written since start_message() said "Connection: close": a
    // server answered without reading the request's body, so the connection cannot carry
    // another request.
    bool close_requested() const { return close_requested_; }

private:
    ssize_t fill();
    ssize_t read_into_sink(std::size_t size);
    // Sets SO_RCVLOWAT, so that a wait for the rest of a body wakes once, not per segment.
    void set_low_water(int bytes);
    // getpeername or getsockname, into a cached address.
    void look_up(int (*query)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const;
    bool send_all(const char* a, std::size_t a_size, const char* b, std::size_t b_size);
    // The read timeout, cut short by the deadline; -1 when the deadline has passed.
    int read_wait_ms() const;

    int sock_;
    int read_timeout_;
    int write_timeout_;
    StreamBuffers& buffers_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    bool message_start_ = true;  // no write since the last read: a write now is a head
    bool close_requested_ = false;
    std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
    // httplib asks for both addresses on every request; a connection's do not change.
    mutable std::string remote_ip_, local_ip_;
    mutable int remote_port_ = -1, local_port_ = -1;
};

int timeout_ms(time_t sec, time_t usec);
// The numeric address and port of `addr` ("" and 0 for a family other than IPv4 and IPv6).
void describe_address(const sockaddr_storage& addr, std::string& ip, int& port);

// What clients may hold on a PlainServer. At a bound a new connection is refused (503 with
// Retry-After, then closed) while everyone else keeps being served.
struct ConnectionLimits {
    // Open connections in all; at the bound the longest-idle kept-alive connection is closed
    // to make room, and only when none is idle is the new one refused.
    std::size_t max_connections = 4096;
    std::size_t max_connections_per_peer = 256;  // open connections from one address
    // From the first byte of a request head to its blank line (slowloris): the connection is
    // closed (408) when the head is not complete by then.
    std::chrono::milliseconds head_timeout{10'000};
    // Reading a request's body, from the end of its head.
    std::chrono::milliseconds body_timeout{60'000};
    // A body announced (Content-Length) up to this size is read by the epoll thread before the
    // request goes to a serving thread, so a body that drips holds no thread (issue 45,
    // finding 10); a larger or chunked one is read by its serving thread, within body_timeout.
    std::size_t max_buffered_body = 256 * 1024;
    // Of all the connections together, at most this much body is held that way at once.
    std::size_t max_buffered_bodies = 64u << 20;
    // A body read by the epoll thread must come at this rate, after the grace: bytes per second
    // since its head ended (a dripping body is closed with 408 within seconds, not 60).
    std::size_t min_body_rate = 1024;
    std::chrono::milliseconds body_rate_grace{2'000};
    // Threads serving requests; an answer streamed as it is produced (SSE) holds one. A thread
    // idle past idle_threads.after leaves (base/thread_set.hpp).
    std::size_t threads = 64;
    base::IdleThreads idle_threads;
};

// On a thread serving a PlainServer request (its handler, a streamed answer's writer): the
// request's socket (-1 on any other thread), for another thread to watch for the client's
// leaving while this one works or waits (transport/http_watch.hpp). Never closed by the caller.
int request_socket();

// httplib::Server on BufferedStream, with readiness-based waiting for requests.
//
// httplib's own server holds a thread per connection for as long as the connection is open
// (idle keep-alive time included) and reads a head for as long as its sender likes, so a few
// hundred idle or slow connections take every thread. Here one thread (epoll) watches every
// connection between requests and reads request heads as their bytes come; a connection goes
// to a serving thread only with a whole head in hand, and comes back after its answer. A
// thread that has just answered waits a moment for the connection's next request itself, so
// a busy client is served as before, without a hand-off per request.
class PlainServer : public httplib::Server {
public:
    PlainServer();
    ~PlainServer() override;
    // Before listening. The idle keep-alive time is httplib's set_keep_alive_timeout.
    void set_limits(const ConnectionLimits& limits) { limits_ = limits; }
    const ConnectionLimits& limits() const { return limits_; }
    // Open connections right now (for tests and logs).
    std::size_t open_connections() const { return open_.load(); }
    // Serving threads alive right now: they leave when idle (for tests and logs).
    std::size_t serving_threads();

private:
    class Reactor;
    bool process_and_close_socket(socket_t sock) override;

    ConnectionLimits limits_;
    std::atomic<Reactor*> reactor_{nullptr};
    std::atomic<std::size_t> open_{0};
};

}  // namespace agency::net
