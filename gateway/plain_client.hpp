// An httplib client for plain-HTTP gateways that reads the socket in large chunks.
//
// cpp-httplib 0.11 (Debian's compiled library, so CPPHTTPLIB_RECV_BUFSIZ is fixed) reads a
// body 4 KiB at a time with a poll() before every recv(): a 23 MB list_rankings scan costs
// ~11,000 system calls, half of the server's CPU (bench/findings.md). httplib lets a client
// class supply the Stream its HTTP code reads from (SSLClient does the same), so this one
// keeps all of httplib's HTTP handling and only replaces the socket I/O underneath it
// (net::BufferedStream, shared with our HTTP servers).
//
// The same place counts every byte of an answer: httplib 0.11 bounds neither the number of
// header lines nor a line's length while it reads it (it checks 8 KiB only once a whole line
// is in), nor a chunk-size line, so a gateway could make it buffer without end before any
// callback of ours runs. Here the head, and the answer in all, stop at their limits, and every
// read stops at the exchange's deadline (a gateway sending a byte at a time cannot hold a
// call past its budget).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <httplib.h>

#include "net/socket_stream.hpp"

namespace agency::gateway {

// What one exchange may read, set before each request (none by default: the gateway client
// sets them for every exchange).
struct AnswerLimits {
    std::uint64_t max_head_bytes = ~std::uint64_t{0};  // status line and headers
    std::uint64_t max_bytes = ~std::uint64_t{0};  // the whole answer as read: head, framing, body
    // Reads fail from this moment on (the call's deadline; none by default).
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Which limit ended an exchange, if one did.
enum class LimitHit { none, head, total, deadline };

// Counts what one exchange reads underneath httplib against its limits (PlainClient's stream;
// a TLS client's records, tls_meter.hpp).
struct AnswerMeter {
    AnswerLimits limits;
    std::uint64_t read = 0;
    bool in_head = true;  // until the response handler has the head
    LimitHit hit = LimitHit::none;

    void start(const AnswerLimits& with) {
        limits = with;
        restart();
    }
    // A new answer under the same limits.
    void restart() {
        read = 0;
        in_head = true;
        hit = LimitHit::none;
    }
    // Whether the deadline has passed (and then notes it).
    bool past_deadline() {
        if (hit == LimitHit::none && std::chrono::steady_clock::now() >= limits.deadline)
            hit = LimitHit::deadline;
        return hit == LimitHit::deadline;
    }
    // `n` more bytes came; false once a limit is passed (and then notes which).
    bool add(std::uint64_t n) {
        read += n;
        if (hit == LimitHit::none && in_head && read > limits.max_head_bytes) hit = LimitHit::head;
        if (hit == LimitHit::none && read > limits.max_bytes) hit = LimitHit::total;
        return hit == LimitHit::none;
    }
};

class PlainClient : public httplib::ClientImpl {
public:
    PlainClient(const std::string& host, int port) : httplib::ClientImpl(host, port) {}

    // What the exchange's answer is read under: start() it before each request.
    AnswerMeter& meter() { return meter_; }

    // Called from a response handler: the answer's body is `length` bytes, so reading it may
    // wait for all of it at once instead of waking per segment.
    void expect_body(std::size_t length) { buffers_.expect_body(length); }
    // As expect_body, and where httplib will not decode the body (no Content-Encoding) its
    // bytes are appended straight to `sink`. Returns whether they will be: the content
    // receiver is then handed only their counts, its data pointer does not point at them and
    // must not be read.
    bool expect_body_into(const httplib::Response& res, std::size_t length, std::string& sink);

private:
    class CountedStream;

    // The buffers outlive each request's stream: pooled clients reuse them instead of
    // allocating 64 KiB per request.
    net::StreamBuffers buffers_;
    AnswerMeter meter_;

    bool process_socket(const Socket& socket,
                        std::function<bool(httplib::Stream& strm)> callback) override;
};

}  // namespace agency::gateway
