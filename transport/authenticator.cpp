// The authenticator seam and the key-only authenticator (see authenticator.hpp).
#include "transport/authenticator.hpp"

#include "base/log_summary.hpp"
#include "base/text.hpp"

namespace agency::mcp {

AuthDecision Authenticator::refuse_scope(const Principal&, std::string_view scope) const {
    AuthDecision out;
    out.status = 403;
    out.message = "this call needs the '" + std::string(scope) + "' scope, which this caller lacks";
    return out;
}

std::string presented_credential(const HttpRequestView& request) {
    std::string key = request.header("X-API-Key");
    if (!key.empty()) return key;
    const std::string auth = request.header("Authorization");
    if (auth.size() > 7 && base::ascii_lower(auth.substr(0, 7)) == "bearer ") return auth.substr(7);
    return "";
}

std::string quoted_header_text(std::string_view text) {
    std::string out(text.substr(0, 200));
    for (char& c : out)
        if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 ||
            static_cast<unsigned char>(c) > 0x7e)
            c = '?';
    return out;
}

namespace {

class KeyAuthenticator final : public Authenticator {
public:
    KeyAuthenticator(std::shared_ptr<const KeyStore> keys, bool read_only,
                     const base::Clock& clock)
        : keys_(std::move(keys)), read_only_(read_only), refused_(clock) {}
    bool required() const override { return keys_ && !keys_->empty(); }

    AuthDecision authenticate(const HttpRequestView& request) const override {
        AuthDecision out;
        const std::string key = presented_credential(request);
        if (auto principal = keys_->authenticate(key)) {
            if (read_only_) std::erase(principal->scopes, std::string("write"));
            out.principal = std::move(principal);
            return out;
        }
        // The key itself is never logged; one line, then a summary per interval.
        if (!key.empty())
            refused_.write(log::Level::info, "API key refused", request.remote_addr,
                           "unknown API key from {}", request.remote_addr);
        out.www_authenticate = key.empty() ? R"(Bearer realm="agency-mcp")"
                                           : R"(Bearer realm="agency-mcp", error="invalid_token")";
        out.message = key.empty() ? "authentication required: send your agency-mcp key as "
                                    "X-API-Key or Authorization: Bearer"
                                  : "unknown API key";
        return out;
    }

private:
    std::shared_ptr<const KeyStore> keys_;
    bool read_only_;
    mutable log::RepeatedLines refused_;
};

}  // namespace

std::shared_ptr<const Authenticator> key_authenticator(std::shared_ptr<const KeyStore> keys,
                                                       bool read_only, const base::Clock* clock) {
    return std::make_shared<KeyAuthenticator>(std::move(keys), read_only,
                                              base::Clock::or_system(clock));
}

}  // namespace agency::mcp
