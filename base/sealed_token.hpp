// Every sealed token the server hands out and takes back (list cursors, requestState,
// tasks/list cursors) is made and opened here, one way (confirmation ids are not sealed: they
// are random ids whose record, bound to caller, tool and arguments, lives in the state store):
//   - tamper-evident: base64url(payload) "." base64url(HMAC-SHA256), under a key derived from
//     the server's secret and the token's purpose, so a cursor never opens as a requestState;
//   - bound: to what it is for (a tool, a client, a call) and to whom it was issued, and
//     optionally to the SHA-256 of the arguments it was issued with;
//   - expiring: it carries its own expiry, checked against the Clock it was sealed with;
//   - single use where it must be: each token carries a random nonce that a SpentTokens
//     records once the token has acted.
// Not secret: whoever holds a token can read its payload, so nothing secret is sealed in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"

namespace agency::base {

// What a token is bound to. Opening it with any other value of these is refused.
struct TokenBinding {
    std::string_view subject;    // what it is for: a tool name, a method and its target
    std::string_view scope;      // narrower than the subject where it applies: a client_id
    std::string_view principal;  // who it was issued to
    std::string_view arguments;  // text whose digest it binds (serialised arguments); "" none
};

// Why a token was refused; each caller words it for its own token (describe() is the default).
enum class TokenRefusal {
    altered,  // not sealed by this server under this purpose, or changed since
    other_subject,
    other_scope,
    other_principal,
    other_arguments,
    expired,
    spent,  // single use, already used
};
std::string_view describe(TokenRefusal refusal);

struct OpenedToken {
    nlohmann::json body;  // what the issuer sealed in (null when nothing)
    std::string nonce;    // random, unique per token: the key for SpentTokens
    std::int64_t expires_ms = 0;
};

// The key a TokenSealer of `purpose` derives from a non-empty `secret` (the fuzz targets seal
// payloads of their own with it, to reach what a holder of the key could send).
std::string token_key(std::string_view secret, std::string_view purpose);

class TokenSealer {
public:
    // `purpose` names the kind of token ("cursor", "confirmation", "request-state"...): the
    // key is derived from `secret` and it. A random secret is drawn when `secret` is empty
    // (tokens then die with the process). `clock` must outlive the sealer.
    TokenSealer(std::string_view secret, std::string_view purpose,
                const Clock& clock = Clock::system());

    std::string seal(const TokenBinding& binding, std::chrono::milliseconds ttl,
                     const nlohmann::json& body = nullptr) const;
    std::variant<OpenedToken, TokenRefusal> open(std::string_view token,
                                                 const TokenBinding& expected) const;


private:
    std::string key_;
    const Clock& clock_;
};

// Remembers the nonces of tokens that have acted, until they expire (after which the token is
// refused as expired anyway). In memory: for tokens that live within one process.
class SpentTokens {
public:
    explicit SpentTokens(const Clock& clock = Clock::system()) : clock_(clock) {}
    // True the first time for a nonce; false when it was spent before.
    bool spend(const OpenedToken& token);

private:
    const Clock& clock_;
    std::mutex mutex_;
    std::unordered_map<std::string, std::int64_t> spent_;  // nonce -> expiry (unix ms)
    std::int64_t next_sweep_ms_ = 0;
};

}  // namespace agency::base
