// What an OAuth resource server reads from outside (auth/jwt.hpp): a bearer token as presented,
// the issuer's JWKS and discovery metadata, an introspection answer, and the claims inside a
// token whose signature verifies. Input: one selector byte, then the text.
// Checked besides "no crash": a token from the input never verifies unless the harness signed it,
// and what it signed verifies only when its claims hold the rules.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <cjose/cjose.h>
#include <nlohmann/json.hpp>

#include "auth/jwt.hpp"
#include "fuzz/fuzz_common.hpp"

namespace {

using agency::auth::KeySet;

struct Harness {
    cjose_jwk_t* key = nullptr;
    KeySet keys;
    agency::auth::TokenRules rules;
    agency::auth::Limits limits;

    Harness() {
        cjose_err err;
        key = cjose_jwk_create_EC_random(CJOSE_JWK_EC_P_256, &err);
        char* pub = cjose_jwk_to_json(key, false, &err);
        nlohmann::json jwk = nlohmann::json::parse(pub);
        free(pub);
        jwk["kid"] = "k1";
        keys = KeySet::parse(nlohmann::json{{"keys", {jwk}}}.dump(), limits);
        rules.issuer = "https://issuer.example";
        rules.audience = "https://mcp.example/mcp";
        rules.algorithms = agency::auth::default_algorithms();
        // The client claims (issue 35) are read from every token that passes the rest.
        rules.client_claims.clients_claim = "clients";
        rules.client_claims.group_clients = {{"g", {"demo-law"}}, {"all", {"*"}}};
        rules.client_claims.budget_claim = "budget";
        if (keys.keys().size() != 1) std::abort();
    }

    // Signs `claims` (the input) with the harness's key: the claims parser behind a signature.
    std::string sign(std::string_view claims) const {
        cjose_err err;
        cjose_header_t* hdr = cjose_header_new(&err);
        cjose_header_set(hdr, CJOSE_HDR_ALG, CJOSE_HDR_ALG_ES256, &err);
        cjose_header_set(hdr, CJOSE_HDR_KID, "k1", &err);
        cjose_jws_t* jws = cjose_jws_sign(key, hdr, reinterpret_cast<const uint8_t*>(claims.data()),
                                          claims.size(), &err);
        std::string out;
        const char* compact = nullptr;
        if (jws && cjose_jws_export(jws, &compact, &err)) out = compact;
        cjose_jws_release(jws);
        cjose_header_release(hdr);
        return out;
    }
};

Harness& harness() {
    static Harness h;
    return h;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    agency::fuzz::quiet_logs();
    harness();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    Harness& h = harness();
    const std::string_view text = agency::fuzz::as_text(data + 1, size - 1);
    const std::int64_t now = 1'800'000'000;
    switch (data[0] % 5) {
        case 0: {  // a bearer token as presented: nothing the harness did not sign verifies
            auto got = agency::auth::verify_token(text, h.keys, h.rules, now, h.limits);
            if (got.ok()) {
                std::fprintf(stderr, "an unsigned input verified\n");
                std::abort();
            }
            break;
        }
        case 1:
            try {
                (void)KeySet::parse(text, h.limits);
            } catch (const std::invalid_argument&) {
            }
            break;
        case 2:
            try {
                (void)agency::auth::parse_issuer_metadata(text, h.rules.issuer, h.limits);
            } catch (const std::invalid_argument&) {
            }
            break;
        case 3:
            (void)agency::auth::read_introspection(text, h.rules, now, h.limits);
            break;
        default: {  // claims behind a good signature
            const std::string token = h.sign(text);
            if (token.empty()) break;
            auto got = agency::auth::verify_token(token, h.keys, h.rules, now, h.limits);
            if (got.ok() && (got.claims.subject.empty() || got.claims.expires_at + 60 <= now)) {
                std::fprintf(stderr, "claims without a subject or expired were accepted\n");
                std::abort();
            }
            // A scoped caller's clients are named ones: never "" nor "*" (every client).
            for (const auto& id : got.claims.reach.clients)
                if (id.empty() || id == "*" || !got.claims.reach.scoped) {
                    std::fprintf(stderr, "a client claim gave an empty or wildcard client\n");
                    std::abort();
                }
            break;
        }
    }
    return 0;
}
