// An OAuth resource server's check of an access token: the issuer's keys found through its
// RFC 8414 (or OpenID) discovery metadata, cached, fetched again when they age or a token names
// an unknown kid (at a bounded rate), and opaque tokens through RFC 7662 introspection when
// configured. Fails closed: keys that cannot be had refuse every token (Failure::unavailable).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "auth/jwt.hpp"
#include "base/clock.hpp"

namespace agency::auth {

struct ValidatorOptions {
    std::string issuer;    // https (http only on a loopback address); compared exactly with iss
    std::string resource;  // this server's canonical URL; tokens' aud must include it
    std::vector<std::string> algorithms = default_algorithms();
    std::chrono::seconds leeway{60};
    std::chrono::seconds keys_max_age{600};     // the JWKS is fetched again after this
    std::chrono::seconds refetch_interval{30};  // at most one fetch per interval otherwise
    std::chrono::milliseconds timeout{5000};    // each fetch, connect and read
    Limits limits;
    // RFC 7662: tokens that are not JWTs are introspected with these client credentials
    // (HTTP Basic) at the metadata's introspection_endpoint. Empty: opaque tokens are refused.
    std::string introspection_client_id;
    std::string introspection_client_secret;
    // The clients an access token reaches and its action budget, from its claims (issue 35).
    ClientClaimRules client_claims;
    const base::Clock* clock = nullptr;  // null: the process's (base::Clock::or_system)
};

class TokenValidator {
public:
    // Throws std::invalid_argument when the issuer or resource is not an acceptable URL.
    explicit TokenValidator(ValidatorOptions options);
    ~TokenValidator();
    TokenValidator(const TokenValidator&) = delete;
    TokenValidator& operator=(const TokenValidator&) = delete;

    // Thread-safe. Fetches the issuer's metadata and keys when needed.
    Checked validate(std::string_view token) const;
    const ValidatorOptions& options() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A bounded HTTP(S) exchange: no redirects, the body cut at `max_bytes`. Status 0 and `error`
// set when nothing usable came back.
struct FetchResult {
    int status = 0;
    std::string body;
    std::string error;
};
FetchResult http_get(const std::string& url, std::chrono::milliseconds timeout,
                     std::size_t max_bytes);
FetchResult http_post_form(const std::string& url, const std::string& form,
                           const std::string& basic_user, const std::string& basic_password,
                           std::chrono::milliseconds timeout, std::size_t max_bytes);

}  // namespace agency::auth
