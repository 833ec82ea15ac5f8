#include "base/sealed_token.hpp"

#include "base/crypto.hpp"

namespace agency::base {

namespace {

// The principal is stored as a short digest: tokens stay small and carry no caller's name.
std::string digest16(std::string_view text) { return crypto::sha256_hex(text).substr(0, 16); }

// The arguments are bound by their whole SHA-256: the caller chooses them, and 64 bits would
// let a birthday search find two argument sets that share a digest (an answer given for one
// replayed with the other).
std::string arguments_digest(std::string_view text) {
    return text.empty() ? std::string() : crypto::sha256_hex(text);
}

}  // namespace

std::string_view describe(TokenRefusal refusal) {
    switch (refusal) {
        case TokenRefusal::altered: return "it was altered or was not issued by this server";
        case TokenRefusal::other_subject: return "it was issued for something else";
        case TokenRefusal::other_scope: return "it was issued for another client";
        case TokenRefusal::other_principal: return "it was issued to another caller";
        case TokenRefusal::other_arguments: return "it was issued for other arguments";
        case TokenRefusal::expired: return "it has expired";
        case TokenRefusal::spent: return "it was already used";
    }
    return "it is not valid";
}

TokenSealer::TokenSealer(std::string_view secret, std::string_view purpose, const Clock& clock)
    : clock_(clock) {
    key_ = token_key(secret.empty() ? crypto::random_bytes(32) : std::string(secret), purpose);
}

std::string token_key(std::string_view secret, std::string_view purpose) {
    return crypto::hmac_sha256(secret, "agency-mcp " + std::string(purpose) + " v2");
}

std::string TokenSealer::seal(const TokenBinding& b, std::chrono::milliseconds ttl,
                              const nlohmann::json& body) const {
    nlohmann::json payload = {{"s", b.subject},
                              {"c", b.scope},
                              {"p", digest16(b.principal)},
                              {"a", arguments_digest(b.arguments)},
                              {"e", clock_.unix_ms() + ttl.count()},
                              {"n", crypto::random_hex(12)}};
    if (!body.is_null()) payload["b"] = body;
    return crypto::seal(key_, payload);
}

std::variant<OpenedToken, TokenRefusal> TokenSealer::open(std::string_view token,
                                                          const TokenBinding& b) const {
    const auto payload = crypto::unseal(key_, token);
    if (!payload || !payload->is_object()) return TokenRefusal::altered;
    // Sealed by this server with this key, so the fields have the types seal() gave them;
    // value() still refuses rather than throws should that ever change.
    if (payload->value("s", "") != b.subject) return TokenRefusal::other_subject;
    if (payload->value("c", "") != b.scope) return TokenRefusal::other_scope;
    if (payload->value("p", "") != digest16(b.principal)) return TokenRefusal::other_principal;
    if (payload->value("a", "") != arguments_digest(b.arguments))
        return TokenRefusal::other_arguments;
    OpenedToken opened;
    opened.expires_ms = payload->value("e", std::int64_t{0});
    if (opened.expires_ms < clock_.unix_ms()) return TokenRefusal::expired;
    opened.nonce = payload->value("n", "");
    if (auto it = payload->find("b"); it != payload->end()) opened.body = *it;
    return opened;
}

bool SpentTokens::spend(const OpenedToken& token) {
    const std::int64_t now = clock_.unix_ms();
    std::lock_guard lock(mutex_);
    // Expired nonces are dropped at most once a second, not on every spend: a busy server
    // spends many tokens a second, and a sweep per spend would cost the whole set each time.
    if (now >= next_sweep_ms_) {
        for (auto it = spent_.begin(); it != spent_.end();)
            it = it->second < now ? spent_.erase(it) : std::next(it);
        next_sweep_ms_ = now + 1000;
    }
    return spent_.emplace(token.nonce, token.expires_ms).second;
}

}  // namespace agency::base
