#include "gateway/tls_meter.hpp"

#include <sys/socket.h>

namespace agency::gateway {

namespace {

thread_local AnswerMeter* t_tls_meter = nullptr;

#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
// Called by OpenSSL for every record header it reads or writes (and for handshake messages):
// only the records read count, by the length in their header (ciphertext: what the peer sent).
void on_tls_message(int write_p, int, int content_type, const void* buf, std::size_t len, SSL* ssl,
                    void*) {
    AnswerMeter* meter = t_tls_meter;
    if (meter == nullptr || write_p != 0 || content_type != SSL3_RT_HEADER || len < 5) return;
    const auto* header = static_cast<const unsigned char*>(buf);
    const std::uint64_t length = (std::uint64_t{header[3]} << 8) | header[4];
    const bool over = meter->hit != LimitHit::none || meter->past_deadline() || !meter->add(length);
    if (over) ::shutdown(SSL_get_fd(ssl), SHUT_RDWR);
}
#endif

}  // namespace

#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
void meter_tls_records(httplib::SSLClient& client) {
    if (SSL_CTX* ctx = client.ssl_context()) SSL_CTX_set_msg_callback(ctx, on_tls_message);
}
#endif

TlsMeterScope::TlsMeterScope(AnswerMeter& meter) : outer_(t_tls_meter) { t_tls_meter = &meter; }
TlsMeterScope::~TlsMeterScope() { t_tls_meter = outer_; }

}  // namespace agency::gateway
