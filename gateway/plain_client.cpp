#include "gateway/plain_client.hpp"

namespace agency::gateway {

// The stream httplib reads an answer from, counting what each read hands over (with a sink,
// read() reports the body's bytes without copying them, so they are counted too).
class PlainClient::CountedStream final : public httplib::Stream {
public:
    CountedStream(net::BufferedStream& inner, PlainClient& owner) : inner_(inner), owner_(owner) {}

    bool is_readable() const override { return inner_.is_readable(); }
    bool is_writable() const override { return inner_.is_writable(); }
    ssize_t read(char* ptr, size_t size) override {
        auto& meter = owner_.meter_;
        if (meter.hit != LimitHit::none || meter.past_deadline()) return -1;
        const ssize_t n = inner_.read(ptr, size);
        if (n < 0) meter.past_deadline();  // a wait the deadline cut short
        if (n <= 0) return n;
        return meter.add(static_cast<std::uint64_t>(n)) ? n : -1;
    }
    ssize_t write(const char* ptr, size_t size) override { return inner_.write(ptr, size); }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        inner_.get_remote_ip_and_port(ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        inner_.get_local_ip_and_port(ip, port);
    }
    socket_t socket() const override { return inner_.socket(); }

private:
    net::BufferedStream& inner_;
    PlainClient& owner_;
};

// Like httplib's own stream, this one lives for one request on a keep-alive connection;
// HTTP/1.1 without pipelining sends nothing past the answer, so nothing read ahead is lost.
bool PlainClient::process_socket(const Socket& socket,
                                 std::function<bool(httplib::Stream& strm)> callback) {
    buffers_.clear_body();  // a body announced to an earlier request is not this one's
    meter_.restart();       // nor anything counted for it
    net::BufferedStream strm(socket.sock, net::timeout_ms(read_timeout_sec_, read_timeout_usec_),
                             net::timeout_ms(write_timeout_sec_, write_timeout_usec_), buffers_);
    // Every wait for a byte ends at the deadline, not only each read's own timeout.
    strm.set_read_deadline(meter_.limits.deadline);
    CountedStream counted(strm, *this);
    const bool ok = callback(counted);
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
