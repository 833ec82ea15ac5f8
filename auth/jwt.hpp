// OAuth access tokens as JWTs (RFC 9068) checked against an issuer's published keys: the part
// without I/O, so that the unit tests and the fuzz target reach every parser. JOSE (compact
// JWS, JWK import, signatures) is libcjose's; the JSON around it (JWKS, metadata, claims) is
// nlohmann's, read after a bound on size and nesting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "auth/client_claims.hpp"

namespace agency::auth {

struct Limits {
    std::size_t max_token_bytes = 8192;          // an access token, as presented
    std::size_t max_document_bytes = 256 * 1024;  // a JWKS, a metadata or introspection answer
    std::size_t max_keys = 64;                    // keys read from one JWKS
    int max_depth = 16;                           // JSON nesting in any of them
};

// What a token must satisfy besides its signature.
struct TokenRules {
    std::string issuer;                   // `iss`, compared exactly
    std::string audience;                 // one of `aud` must equal it (RFC 8707)
    std::vector<std::string> algorithms;  // the allow-list; never none or HS*
    std::int64_t leeway_s = 60;           // for exp, nbf and iat
    ClientClaimRules client_claims;       // the clients and budget claims (off by default)
};

// The asymmetric algorithms accepted by default.
std::vector<std::string> default_algorithms();

// A verified token's facts.
struct Claims {
    std::string issuer;
    std::string subject;
    std::string client_id;
    std::vector<std::string> scopes;
    std::int64_t expires_at = 0;
    ClientReach reach;  // the clients it may reach, its action budget (TokenRules::client_claims)
};

// Why a token was refused; the kind decides the HTTP answer (unavailable: 503, else 401).
enum class Failure {
    none,
    malformed,      // not a compact JWS, or claims that are not a JSON object
    bad_algorithm,  // alg outside the allow-list, or not the key's
    unknown_key,    // no key of the issuer's has this kid
    bad_signature,
    bad_claims,     // iss, aud, sub, nbf, iat, typ, a malformed clients/groups/budget claim
    expired,
    inactive,       // introspection: not active
    unavailable,    // the issuer's keys or introspection could not be reached
};

struct Checked {
    Failure failure = Failure::none;
    std::string reason;  // for the caller and the log; never the token
    Claims claims;
    bool ok() const { return failure == Failure::none; }
};

// A JWS header's facts, read before any key is chosen.
struct Header {
    std::string alg;
    std::string kid;
    std::string typ;
};

// The issuer's signing keys (one JWKS document). Keys that cannot sign (use other than "sig",
// symmetric, unknown kty) are left out.
class KeySet {
public:
    struct Key {
        std::string kid;
        std::string kty;   // "RSA" or "EC"
        std::string alg;   // "" when the key does not name one
        std::string crv;   // EC only
        std::string json;  // the JWK as published, imported per use
    };
    // Throws std::invalid_argument saying what is wrong with the document.
    static KeySet parse(std::string_view jwks, const Limits& limits);
    const std::vector<Key>& keys() const { return keys_; }
    bool has_kid(std::string_view kid) const;

private:
    std::vector<Key> keys_;
};

// Whether a JWK of this kty/crv may verify this alg.
bool key_fits_algorithm(const KeySet::Key& key, std::string_view alg);

// Verifies a compact JWS access token and its claims at `now_s` (Unix seconds).
Checked verify_token(std::string_view token, const KeySet& keys, const TokenRules& rules,
                     std::int64_t now_s, const Limits& limits);
// The header alone (alg, kid), or a refusal in `why`.
bool read_header(std::string_view token, const Limits& limits, Header& out, std::string& why);

// RFC 8414 / OpenID discovery metadata: the fields this server uses. Throws
// std::invalid_argument when the document is malformed or names another issuer.
struct IssuerMetadata {
    std::string issuer;
    std::string jwks_uri;
    std::string introspection_endpoint;  // "" when none
};
IssuerMetadata parse_issuer_metadata(std::string_view text, std::string_view expected_issuer,
                                     const Limits& limits);

// An RFC 7662 introspection answer, held to the same rules as a JWT's claims.
Checked read_introspection(std::string_view text, const TokenRules& rules, std::int64_t now_s,
                           const Limits& limits);

// Whether a JSON text stays within the size and nesting bounds (strings skipped).
bool within_json_limits(std::string_view text, std::size_t max_bytes, int max_depth);

// Loopback host of a URL ("http://127.0.0.1:9000/x" → true); tests and local providers only.
bool is_loopback_url(std::string_view url);
// "https://h/p" or a loopback "http://…" URL.
bool is_secure_url(std::string_view url);

}  // namespace agency::auth
