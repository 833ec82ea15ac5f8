#include "gateway/plain_client.hpp"

namespace agency::gateway {

// Like httplib's own stream, this one lives for one request on a keep-alive connection;
// HTTP/1.1 without pipelining sends nothing past the answer, so nothing read ahead is lost.
bool PlainClient::process_socket(const Socket& socket,
                                 std::function<bool(httplib::Stream& strm)> callback) {
    buffers_.body_end = 0;  // a length announced to an earlier request is not this one's
    net::BufferedStream strm(socket.sock, net::timeout_ms(read_timeout_sec_, read_timeout_usec_),
                             net::timeout_ms(write_timeout_sec_, write_timeout_usec_), buffers_);
    return callback(strm);
}

}  // namespace agency::gateway
