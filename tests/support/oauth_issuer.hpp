// A test's OAuth authorization server: RFC 8414 metadata and a JWKS on a loopback port, and RSA
// keys made here that sign tokens with OpenSSL alone (independent of the libcjose under test).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "base/crypto.hpp"
#include "tests/loopback_server.hpp"

namespace agency::testing {

using nlohmann::json;

inline std::string b64(const std::string& raw) { return agency::crypto::base64url_encode(raw); }

// An RSA key made here, its public JWK, and RS256/PS256 signatures by OpenSSL alone.
struct RsaKey {
    EVP_PKEY* pkey = nullptr;
    std::string kid;
    explicit RsaKey(std::string id) : pkey(EVP_RSA_gen(2048)), kid(std::move(id)) {}
    ~RsaKey() { EVP_PKEY_free(pkey); }
    RsaKey(const RsaKey&) = delete;
    RsaKey& operator=(const RsaKey&) = delete;

    std::string bn(const char* name) const {
        BIGNUM* value = nullptr;
        EVP_PKEY_get_bn_param(pkey, name, &value);
        std::string raw(static_cast<std::size_t>(BN_num_bytes(value)), '\0');
        BN_bn2bin(value, reinterpret_cast<unsigned char*>(raw.data()));
        BN_free(value);
        return raw;
    }
    json jwk() const {
        return {{"kty", "RSA"}, {"kid", kid}, {"use", "sig"}, {"alg", "RS256"},
                {"n", b64(bn(OSSL_PKEY_PARAM_RSA_N))}, {"e", b64(bn(OSSL_PKEY_PARAM_RSA_E))}};
    }
    std::string pem() const {
        BIO* bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PUBKEY(bio, pkey);
        char* data = nullptr;
        const long n = BIO_get_mem_data(bio, &data);
        std::string out(data, static_cast<std::size_t>(n));
        BIO_free(bio);
        return out;
    }
    std::string sign(const json& header, const json& claims) const {
        const std::string input = b64(header.dump()) + "." + b64(claims.dump());
        EVP_MD_CTX* ctx = EVP_MD_CTX_new();
        EVP_PKEY_CTX* pctx = nullptr;
        EVP_DigestSignInit(ctx, &pctx, EVP_sha256(), nullptr, pkey);
        if (header.value("alg", "") == "PS256") {
            EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32);
        }
        std::size_t len = 0;
        EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()),
                       input.size());
        std::string sig(len, '\0');
        EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size());
        EVP_MD_CTX_free(ctx);
        sig.resize(len);
        return input + "." + b64(sig);
    }
};

// The authorization server: RFC 8414 metadata and a JWKS that a test may change or break.
struct Issuer {
    agency::testing::LoopbackServer<> server;
    std::mutex mu;
    json keys = json::array();
    std::atomic<int> jwks_fetches{0};
    std::atomic<bool> broken{false};
    std::atomic<int> introspections{0};
    std::map<std::string, json> opaque_tokens;

    Issuer() {
        server.http.Get("/.well-known/oauth-authorization-server",
                        [this](const httplib::Request&, httplib::Response& res) {
                            if (broken) return void(res.status = 503);
                            res.set_content(json{{"issuer", url()},
                                                 {"jwks_uri", url() + "/jwks"},
                                                 {"introspection_endpoint", url() + "/introspect"}}
                                                .dump(),
                                            "application/json");
                        });
        // RFC 7662 for client "rs" (secret "s3cret"): `opaque_tokens` maps a token to its answer.
        server.http.Post("/introspect", [this](const httplib::Request& req, httplib::Response& res) {
            ++introspections;
            if (req.get_header_value("Authorization") !=
                "Basic " + std::string("cnM6czNjcmV0")) {  // base64("rs:s3cret")
                res.status = 401;
                return;
            }
            std::lock_guard lock(mu);
            const std::string token = req.get_param_value("token");
            auto it = opaque_tokens.find(token);
            res.set_content(it == opaque_tokens.end() ? json{{"active", false}}.dump()
                                                      : it->second.dump(),
                            "application/json");
        });
        server.http.Get("/jwks", [this](const httplib::Request&, httplib::Response& res) {
            ++jwks_fetches;
            if (broken) return void(res.status = 503);
            std::lock_guard lock(mu);
            res.set_content(json{{"keys", keys}}.dump(), "application/json");
        });
        server.start();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(server.port); }
    void publish(const json& jwk) {
        std::lock_guard lock(mu);
        keys.push_back(jwk);
    }
};

}  // namespace agency::testing
