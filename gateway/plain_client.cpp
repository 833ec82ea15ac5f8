#include "gateway/plain_client.hpp"

namespace agency::gateway {

// Like httplib's own stream, this one lives for one request on a keep-alive connection;
// HTTP/1.1 without pipelining sends nothing past the answer, so nothing read ahead is lost.
bool PlainClient::process_socket(const Socket& socket,
                                 std::function<bool(httplib::Stream& strm)> callback) {
    buffers_.clear_body();  // a body announced to an earlier request is not this one's
    net::BufferedStream strm(socket.sock, net::timeout_ms(read_timeout_sec_, read_timeout_usec_),
                             net::timeout_ms(write_timeout_sec_, write_timeout_usec_), buffers_);
    const bool ok = callback(strm);
    buffers_.clear_body();  // the sink belongs to the caller's exchange
    return ok;
}

bool PlainClient::expect_body_into(const httplib::Response& res, std::size_t length,
                                   std::string& sink) {
    // httplib decodes a compressed body through the buffer it hands to read(), so such a body
    // must pass through that buffer.
    if (res.has_header("Content-Encoding")) {
        buffers_.expect_body(length);
        return false;
    }
    buffers_.expect_body(length, &sink);
    return true;
}

}  // namespace agency::gateway
