// An httplib client for plain-HTTP gateways that reads the socket in large chunks.
//
// cpp-httplib 0.11 (Debian's compiled library, so CPPHTTPLIB_RECV_BUFSIZ is fixed) reads a
// body 4 KiB at a time with a poll() before every recv(): a 23 MB list_rankings scan costs
// ~11,000 system calls, half of the server's CPU (bench/findings.md). httplib lets a client
// class supply the Stream its HTTP code reads from (SSLClient does the same), so this one
// keeps all of httplib's HTTP handling and only replaces the socket I/O underneath it
// (net::BufferedStream, shared with our HTTP servers).
#pragma once

#include <string>

#include <httplib.h>

#include "net/socket_stream.hpp"

namespace agency::gateway {

class PlainClient : public httplib::ClientImpl {
public:
    PlainClient(const std::string& host, int port) : httplib::ClientImpl(host, port) {}

    // Called from a response handler: the answer's body is `length` bytes, so reading it may
    // wait for all of it at once instead of waking per segment.
    void expect_body(std::size_t length) { buffers_.expect_body(length); }
    // As expect_body, and where httplib will not decode the body (no Content-Encoding) its
    // bytes are appended straight to `sink`. Returns whether they will be: the content
    // receiver is then handed only their counts, its data pointer does not point at them and
    // must not be read.
    bool expect_body_into(const httplib::Response& res, std::size_t length, std::string& sink);

private:
    // The buffers outlive each request's stream: pooled clients reuse them instead of
    // allocating 64 KiB per request.
    net::StreamBuffers buffers_;

    bool process_socket(const Socket& socket,
                        std::function<bool(httplib::Stream& strm)> callback) override;
};

}  // namespace agency::gateway
