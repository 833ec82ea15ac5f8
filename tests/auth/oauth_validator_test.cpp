// auth::TokenValidator against a real issuer on a loopback port (its metadata and JWKS served by
// httplib), with tokens signed here by OpenSSL (RS256) and libcjose (ES256), and each attack the
// MCP authorization spec names refused.
#include <atomic>
#include <mutex>
#include <thread>

#include <cjose/cjose.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "auth/token_validator.hpp"
#include "base/crypto.hpp"
#include "tests/support/oauth_issuer.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

using nlohmann::json;
using agency::auth::Failure;
using agency::testing::b64;
using agency::testing::Issuer;
using agency::testing::RsaKey;
namespace crypto = agency::crypto;

constexpr const char* kResource = "https://mcp.example.com/mcp";

class OAuthValidator : public ::testing::Test {
protected:
    OAuthValidator() : key("k1") {
        issuer.publish(key.jwk());
        agency::auth::ValidatorOptions options;
        options.issuer = issuer.url();
        options.resource = kResource;
        options.clock = &clock;
        options.timeout = std::chrono::milliseconds(2000);
        validator = std::make_unique<agency::auth::TokenValidator>(options);
    }
    json claims(std::int64_t exp_in = 300) const {
        const std::int64_t now = clock.unix_s();
        return {{"iss", issuer.url()}, {"sub", "user-1"}, {"aud", kResource},
                {"exp", now + exp_in}, {"iat", now}, {"scope", "agency:read agency:write"},
                {"client_id", "c1"}};
    }
    json header(const std::string& alg = "RS256") const {
        return {{"alg", alg}, {"kid", key.kid}, {"typ", "at+jwt"}};
    }
    agency::auth::Checked check(const std::string& token) { return validator->validate(token); }

    agency::testing::ManualClock clock;
    Issuer issuer;
    RsaKey key;
    std::unique_ptr<agency::auth::TokenValidator> validator;
};

TEST_F(OAuthValidator, AcceptsASignedTokenForThisResource) {
    auto got = check(key.sign(header(), claims()));
    ASSERT_TRUE(got.ok()) << got.reason;
    EXPECT_EQ(got.claims.subject, "user-1");
    EXPECT_EQ(got.claims.issuer, issuer.url());
    EXPECT_EQ(got.claims.scopes, (std::vector<std::string>{"agency:read", "agency:write"}));
    // aud as an array holding this resource among others.
    json c = claims();
    c["aud"] = {"https://other.example.com", kResource};
    EXPECT_TRUE(check(key.sign(header(), c)).ok());
    // Keys are fetched once and kept.
    EXPECT_EQ(issuer.jwks_fetches.load(), 1);
    // The key says RS256: a PS256 token under it is refused; a key that names no alg takes it.
    EXPECT_EQ(check(key.sign(header("PS256"), c)).failure, Failure::bad_algorithm);
    RsaKey any_alg("k-any");
    json jwk = any_alg.jwk();
    jwk.erase("alg");
    issuer.publish(jwk);
    json ps = header("PS256");
    ps["kid"] = any_alg.kid;
    clock.advance(std::chrono::seconds(31));
    auto pss = check(any_alg.sign(ps, claims()));
    EXPECT_TRUE(pss.ok()) << pss.reason;
}

TEST_F(OAuthValidator, RefusesAlgNoneAndHs256WithThePublicKey) {
    const std::string unsigned_token =
        b64(json{{"alg", "none"}, {"typ", "at+jwt"}}.dump()) + "." + b64(claims().dump()) + ".";
    auto none = check(unsigned_token);
    EXPECT_FALSE(none.ok());
    // HS256 keyed with what the attacker knows: the public key, as PEM and as the JWK's text.
    for (const std::string& secret : {key.pem(), key.jwk().dump()}) {
        const std::string input =
            b64(json{{"alg", "HS256"}, {"kid", key.kid}}.dump()) + "." + b64(claims().dump());
        auto hs = check(input + "." + b64(crypto::hmac_sha256(secret, input)));
        EXPECT_EQ(hs.failure, Failure::bad_algorithm) << hs.reason;
    }
}

TEST_F(OAuthValidator, RefusesWrongAudienceIssuerAndTime) {
    json c = claims();
    c["aud"] = "https://other.example.com/mcp";  // a token minted for another service
    EXPECT_EQ(check(key.sign(header(), c)).failure, Failure::bad_claims);
    c = claims();
    c.erase("aud");
    EXPECT_EQ(check(key.sign(header(), c)).failure, Failure::bad_claims);
    c = claims();
    c["iss"] = issuer.url() + "/";  // exact comparison: no normalization
    EXPECT_EQ(check(key.sign(header(), c)).failure, Failure::bad_claims);
    EXPECT_EQ(check(key.sign(header(), claims(-120))).failure, Failure::expired);
    EXPECT_TRUE(check(key.sign(header(), claims(-30))).ok()) << "within the 60 s leeway";
    c = claims();
    c["nbf"] = clock.unix_s() + 600;
    EXPECT_EQ(check(key.sign(header(), c)).failure, Failure::bad_claims);
    c = claims();
    c.erase("sub");
    EXPECT_EQ(check(key.sign(header(), c)).failure, Failure::bad_claims);
    json id_token_header = header();
    id_token_header["typ"] = "id_token+jwt";
    EXPECT_EQ(check(key.sign(id_token_header, claims())).failure, Failure::bad_claims);
}

TEST_F(OAuthValidator, RefusesATokenSignedByAnotherKeyWithTheSameKid) {
    RsaKey impostor("k1");
    EXPECT_EQ(check(impostor.sign(header(), claims())).failure, Failure::bad_signature);
    // Altered claims under a real signature.
    std::string token = key.sign(header(), claims());
    const auto dot = token.find('.');
    json c = claims();
    c["sub"] = "admin";
    token = token.substr(0, dot + 1) + b64(c.dump()) + token.substr(token.rfind('.'));
    EXPECT_EQ(check(token).failure, Failure::bad_signature);
}

TEST_F(OAuthValidator, UnknownKidRefetchesAtABoundedRate) {
    ASSERT_TRUE(check(key.sign(header(), claims())).ok());
    EXPECT_EQ(issuer.jwks_fetches.load(), 1);
    RsaKey stranger("k-unknown");
    json h = header();
    h["kid"] = stranger.kid;
    // Soon after a fetch, an unknown kid is refused without fetching again.
    EXPECT_EQ(check(stranger.sign(h, claims())).failure, Failure::unknown_key);
    EXPECT_EQ(check(stranger.sign(h, claims())).failure, Failure::unknown_key);
    EXPECT_EQ(issuer.jwks_fetches.load(), 1);
    // The issuer rotates in a new key; past the interval, its first token fetches the keys once.
    RsaKey rotated("k2");
    issuer.publish(rotated.jwk());
    clock.advance(std::chrono::seconds(31));
    json h2 = header();
    h2["kid"] = rotated.kid;
    EXPECT_TRUE(check(rotated.sign(h2, claims())).ok());
    EXPECT_EQ(issuer.jwks_fetches.load(), 2);
    EXPECT_EQ(check(stranger.sign(h, claims())).failure, Failure::unknown_key);
    EXPECT_EQ(issuer.jwks_fetches.load(), 2);
}

TEST_F(OAuthValidator, FailsClosedWhenTheKeysCannotBeFetched) {
    issuer.broken = true;
    auto got = check(key.sign(header(), claims()));
    EXPECT_EQ(got.failure, Failure::unavailable);
    EXPECT_NE(got.reason.find("keys cannot be fetched"), std::string::npos) << got.reason;
    // Once the issuer is back (and the interval has passed), tokens verify.
    issuer.broken = false;
    clock.advance(std::chrono::seconds(31));
    EXPECT_TRUE(check(key.sign(header(), claims())).ok());
    // Keys already held keep verifying while the issuer is down again.
    issuer.broken = true;
    clock.advance(std::chrono::minutes(11));
    EXPECT_TRUE(check(key.sign(header(), claims())).ok());
}

TEST_F(OAuthValidator, AcceptsEs256SignedByCjose) {
    cjose_err err;
    cjose_jwk_t* ec = cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_256, &err);
    ASSERT_NE(ec, nullptr);
    char* pub_text = cjose_jwk_to_json(ec, false, &err);
    json pub = json::parse(pub_text);
    free(pub_text);
    pub["kid"] = "ec1";
    issuer.publish(pub);
    clock.advance(std::chrono::seconds(31));
    cjose_header_t* hdr = cjose_header_new(&err);
    cjose_header_set(hdr, CJOSE_HDR_ALG, CJOSE_HDR_ALG_ES256, &err);
    cjose_header_set(hdr, CJOSE_HDR_KID, "ec1", &err);
    const std::string payload = claims().dump();
    cjose_jws_t* jws = cjose_jws_sign(ec, hdr, reinterpret_cast<const uint8_t*>(payload.data()),
                                      payload.size(), &err);
    ASSERT_NE(jws, nullptr);
    const char* compact = nullptr;
    ASSERT_TRUE(cjose_jws_export(jws, &compact, &err));
    const std::string token = compact;
    cjose_jws_release(jws);
    cjose_header_release(hdr);
    cjose_jwk_release(ec);
    auto got = check(token);
    EXPECT_TRUE(got.ok()) << got.reason;
    // The EC key cannot stand in for RS256.
    const std::string input =
        b64(json{{"alg", "RS256"}, {"kid", "ec1"}}.dump()) + "." + b64(claims().dump());
    EXPECT_EQ(check(input + "." + b64("x")).failure, Failure::bad_algorithm);
}

TEST_F(OAuthValidator, ManyThreadsValidateWhileKeysRotate) {
    RsaKey next("k2");
    issuer.publish(next.jwk());
    json h2 = header();
    h2["kid"] = next.kid;
    const std::string first = key.sign(header(), claims());
    const std::string second = next.sign(h2, claims());
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i) {
                if (t == 0 && i % 5 == 0) clock.advance(std::chrono::seconds(31));
                if (check(i % 2 ? first : second).ok()) ++good;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(good.load(), 100);
}

TEST_F(OAuthValidator, RefusesOversizeAndMalformedTokens) {
    EXPECT_EQ(check(std::string(9000, 'a')).failure, Failure::malformed);
    EXPECT_EQ(check("not-a-token").failure, Failure::malformed);
    EXPECT_EQ(check("a.b.c").failure, Failure::malformed);
    EXPECT_EQ(check("").failure, Failure::malformed);
    // Parts libcjose's base64 decoder would abort the process on (found by the oauth_token
    // fuzz target): a '=' inside a part, a part of 4n+1 characters. Refused before it.
    const std::string good = key.sign(header(), claims());
    const std::string head_and_body = good.substr(0, good.rfind('.') + 1);
    EXPECT_EQ(check(head_and_body + "eXXl5eXl5eXl5eXl5=Xk").failure, Failure::malformed);
    EXPECT_EQ(check(head_and_body + "abcde").failure, Failure::malformed);
    EXPECT_EQ(check(head_and_body + "ab+/").failure, Failure::malformed);
    EXPECT_TRUE(check(good).ok());
}

TEST_F(OAuthValidator, IntrospectsOpaqueTokensWhenConfigured) {
    json active = claims();
    active["active"] = true;
    json other = active;
    other["aud"] = "https://other.example.com/mcp";
    {
        std::lock_guard lock(issuer.mu);
        issuer.opaque_tokens["opaque-good"] = active;
        issuer.opaque_tokens["opaque-other"] = other;
    }
    // Without introspection configured, an opaque token is refused without asking anyone.
    EXPECT_EQ(check("opaque-good").failure, Failure::malformed);
    EXPECT_EQ(issuer.introspections.load(), 0);

    agency::auth::ValidatorOptions options;
    options.issuer = issuer.url();
    options.resource = kResource;
    options.clock = &clock;
    options.introspection_client_id = "rs";
    options.introspection_client_secret = "s3cret";
    agency::auth::TokenValidator introspecting(options);
    auto got = introspecting.validate("opaque-good");
    ASSERT_TRUE(got.ok()) << got.reason;
    EXPECT_EQ(got.claims.subject, "user-1");
    EXPECT_EQ(introspecting.validate("opaque-other").failure, Failure::bad_claims);
    EXPECT_EQ(introspecting.validate("opaque-unknown").failure, Failure::inactive);
    EXPECT_EQ(issuer.introspections.load(), 3);
    // JWTs still go to the keys, not the endpoint.
    EXPECT_TRUE(introspecting.validate(key.sign(header(), claims())).ok());
    EXPECT_EQ(issuer.introspections.load(), 3);
    // Wrong client credentials: the endpoint refuses, and so does the server (fail closed).
    options.introspection_client_secret = "wrong";
    agency::auth::TokenValidator misconfigured(options);
    EXPECT_EQ(misconfigured.validate("opaque-good").failure, Failure::unavailable);
}

TEST(OAuthValidatorOptions, IssuerMustBeHttpsUnlessLoopback) {
    agency::auth::ValidatorOptions options;
    options.resource = kResource;
    options.issuer = "http://auth.example.com";
    EXPECT_THROW(agency::auth::TokenValidator{options}, std::invalid_argument);
    options.issuer = "http://127.0.0.1:9000";
    EXPECT_NO_THROW(agency::auth::TokenValidator{options});
    options.issuer = "https://auth.example.com";
    options.algorithms = {"RS256", "HS256"};
    EXPECT_THROW(agency::auth::TokenValidator{options}, std::invalid_argument);
}

TEST(OAuthDocuments, JwksKeepsOnlyPublicSigningKeys) {
    agency::auth::Limits limits;
    RsaKey rsa("r");
    json priv = rsa.jwk();
    priv["d"] = "private-member";
    json doc = {{"keys",
                 {priv, {{"kty", "oct"}, {"k", "c2VjcmV0"}, {"kid", "h"}},
                  {{"kty", "RSA"}, {"kid", "enc"}, {"use", "enc"}, {"n", "x"}, {"e", "AQAB"}},
                  {{"kty", "RSA"}, {"kid", "short"}, {"n", "AQAB"}, {"e", "AQAB"}}}}};
    // A member that is not whole base64url never reaches cjose's decoder (it may abort).
    json bad_e = RsaKey("bad-e").jwk();
    bad_e["e"] = "AQ=AB";
    doc["keys"].push_back(bad_e);
    auto set = agency::auth::KeySet::parse(doc.dump(), limits);
    ASSERT_EQ(set.keys().size(), 1u);
    EXPECT_EQ(set.keys()[0].kid, "r");
    EXPECT_EQ(set.keys()[0].json.find("private-member"), std::string::npos);
    EXPECT_THROW(agency::auth::KeySet::parse(std::string(40, '[') + std::string(40, ']'), limits),
                 std::invalid_argument);
    EXPECT_THROW(agency::auth::KeySet::parse(R"({"keys":{}})", limits), std::invalid_argument);
    // Metadata must name the issuer it was fetched for, and https URLs.
    EXPECT_THROW(agency::auth::parse_issuer_metadata(
                     R"({"issuer":"https://evil.example.com","jwks_uri":"https://evil.example.com/k"})",
                     "https://auth.example.com", limits),
                 std::invalid_argument);
    EXPECT_THROW(agency::auth::parse_issuer_metadata(
                     R"({"issuer":"https://auth.example.com","jwks_uri":"http://auth.example.com/k"})",
                     "https://auth.example.com", limits),
                 std::invalid_argument);
}

}  // namespace
