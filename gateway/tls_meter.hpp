// The answer limits for an https gateway. httplib 0.11 reads a TLS answer through its own
// stream (SSLClient::process_socket is private: no class of ours can wrap it as PlainClient
// wraps the plain one), so the head it buffers without bound would escape the count. OpenSSL
// reports every TLS record's header to a message callback, whatever reads it: the callback
// counts each record the exchange on this thread receives, and at a limit or past the
// deadline shuts the socket down, which fails httplib's read at once.
#pragma once

#include "gateway/plain_client.hpp"

namespace agency::gateway {

#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
// Installs the record counter on an SSLClient's context (once, when the client is made).
void meter_tls_records(httplib::SSLClient& client);
#endif

// While it lives, the TLS records this thread receives count against `meter`.
class TlsMeterScope {
public:
    explicit TlsMeterScope(AnswerMeter& meter);
    ~TlsMeterScope();
    TlsMeterScope(const TlsMeterScope&) = delete;
    TlsMeterScope& operator=(const TlsMeterScope&) = delete;

private:
    AnswerMeter* outer_;
};

}  // namespace agency::gateway
