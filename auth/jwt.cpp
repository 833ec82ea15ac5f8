// JWT access tokens and the issuer's documents (see jwt.hpp).
#include "auth/jwt.hpp"

#include <algorithm>
#include <stdexcept>

#include <cjose/cjose.h>
#include <jansson.h>
#include <nlohmann/json.hpp>

namespace agency::auth {

namespace {

using nlohmann::json;

struct JwsRelease {
    void operator()(cjose_jws_t* jws) const { cjose_jws_release(jws); }
};
struct JwkRelease {
    void operator()(cjose_jwk_t* jwk) const { cjose_jwk_release(jwk); }
};
using JwsPtr = std::unique_ptr<cjose_jws_t, JwsRelease>;
using JwkPtr = std::unique_ptr<cjose_jwk_t, JwkRelease>;

Checked refuse(Failure failure, std::string reason) {
    Checked out;
    out.failure = failure;
    out.reason = std::move(reason);
    return out;
}

// Unpadded base64url (RFC 7515 section 2) of a length that decodes whole. libcjose's decoder
// asserts, aborting the process, on some malformed input (a '=' inside a segment, a length of
// 4n+1), so nothing reaches it unchecked: a bearer token is outside input.
bool is_base64url(std::string_view text) {
    if (text.size() % 4 == 1) return false;
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    });
}

std::string header_string(cjose_header_t* header, const char* name) {
    cjose_err err;
    const char* value = cjose_header_get(header, name, &err);
    return value ? value : "";
}

// Parses a bounded document; nullopt-like discarded json when it is not JSON or too big/deep.
json parse_bounded(std::string_view text, std::size_t max_bytes, int max_depth) {
    if (!within_json_limits(text, max_bytes, max_depth)) return json(json::value_t::discarded);
    return json::parse(text.begin(), text.end(), nullptr, false);
}

std::string host_of(std::string_view url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos) return "";
    std::string_view rest = url.substr(scheme_end + 3);
    rest = rest.substr(0, rest.find_first_of("/?#"));
    if (rest.find('@') != std::string_view::npos) return "";  // no userinfo in these URLs
    if (!rest.empty() && rest.front() == '[') return std::string(rest.substr(0, rest.find(']') + 1));
    return std::string(rest.substr(0, rest.find(':')));
}

// The scopes of a claims object: "scope" (RFC 9068, space-separated) or "scp" (string or
// array, as Entra ID and Okta write it).
std::vector<std::string> scopes_of(const json& claims) {
    std::vector<std::string> out;
    auto split = [&](const std::string& text) {
        std::size_t at = 0;
        while (at < text.size()) {
            const auto end = std::min(text.find(' ', at), text.size());
            if (end > at) out.push_back(text.substr(at, end - at));
            at = end + 1;
        }
    };
    for (const char* name : {"scope", "scp"}) {
        auto it = claims.find(name);
        if (it == claims.end()) continue;
        if (it->is_string()) split(it->get<std::string>());
        if (it->is_array())
            for (const auto& s : *it)
                if (s.is_string()) out.push_back(s.get<std::string>());
    }
    return out;
}

bool audience_holds(const json& aud, const std::string& wanted) {
    if (aud.is_string()) return aud.get<std::string>() == wanted;
    if (!aud.is_array()) return false;
    return std::any_of(aud.begin(), aud.end(), [&](const json& a) {
        return a.is_string() && a.get<std::string>() == wanted;
    });
}

// The claims every token is held to, JWT or introspected.
Checked check_claims(const json& claims, const TokenRules& rules, std::int64_t now_s,
                     bool introspected) {
    if (!claims.is_object()) return refuse(Failure::malformed, "the token's claims are not an object");
    auto str = [&](const char* name) {
        auto it = claims.find(name);
        return it != claims.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto number = [&](const char* name, std::int64_t& out) {
        auto it = claims.find(name);
        if (it == claims.end() || !it->is_number()) return false;
        const double v = it->get<double>();
        if (!(v > -1e15 && v < 1e15)) return false;
        out = static_cast<std::int64_t>(v);
        return true;
    };
    const std::string iss = str("iss");
    if (iss != rules.issuer && !(introspected && iss.empty()))
        return refuse(Failure::bad_claims, "the token was issued by another issuer");
    if (!audience_holds(claims.value("aud", json()), rules.audience))
        return refuse(Failure::bad_claims,
                      "the token is not for this server: its audience must include " +
                          rules.audience);
    Checked out;
    out.claims.issuer = rules.issuer;
    out.claims.subject = str("sub");
    if (out.claims.subject.empty())
        return refuse(Failure::bad_claims, "the token names no subject (sub)");
    if (!number("exp", out.claims.expires_at))
        return refuse(Failure::bad_claims, "the token has no expiry (exp)");
    if (now_s >= out.claims.expires_at + rules.leeway_s)
        return refuse(Failure::expired, "the token has expired");
    std::int64_t t = 0;
    if (claims.contains("nbf") && (!number("nbf", t) || t > now_s + rules.leeway_s))
        return refuse(Failure::bad_claims, "the token is not valid yet (nbf)");
    if (claims.contains("iat") && (!number("iat", t) || t > now_s + rules.leeway_s))
        return refuse(Failure::bad_claims, "the token was issued in the future (iat)");
    out.claims.client_id = str("client_id");
    out.claims.scopes = scopes_of(claims);
    std::string why;
    if (!read_client_reach(claims, rules.client_claims, out.claims.reach, why))
        return refuse(Failure::bad_claims, why);
    return out;
}

}  // namespace

std::vector<std::string> default_algorithms() {
    return {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"};
}

bool within_json_limits(std::string_view text, std::size_t max_bytes, int max_depth) {
    if (text.size() > max_bytes) return false;
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\0') return false;
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') {
            if (++depth > max_depth) return false;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    return true;
}

bool is_loopback_url(std::string_view url) {
    const std::string host = host_of(url);
    return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

bool is_secure_url(std::string_view url) {
    if (host_of(url).empty()) return false;
    if (url.rfind("https://", 0) == 0) return true;
    return url.rfind("http://", 0) == 0 && is_loopback_url(url);
}

KeySet KeySet::parse(std::string_view jwks, const Limits& limits) {
    const json doc = parse_bounded(jwks, limits.max_document_bytes, limits.max_depth);
    if (doc.is_discarded() || !doc.is_object())
        throw std::invalid_argument("the JWKS is not a JSON object within the limits");
    auto keys = doc.find("keys");
    if (keys == doc.end() || !keys->is_array())
        throw std::invalid_argument("the JWKS has no \"keys\" array");
    KeySet out;
    for (const auto& jwk : *keys) {
        if (out.keys_.size() >= limits.max_keys) break;
        if (!jwk.is_object()) continue;
        Key key;
        key.kty = jwk.value("kty", json()).is_string() ? jwk["kty"].get<std::string>() : "";
        if (key.kty != "RSA" && key.kty != "EC") continue;  // symmetric keys never verify here
        const json use = jwk.value("use", json());
        if (!use.is_null() && use != "sig") continue;
        if (jwk.contains("kid") && !jwk["kid"].is_string()) continue;
        key.kid = jwk.value("kid", "");
        key.alg = jwk.value("alg", json()).is_string() ? jwk["alg"].get<std::string>() : "";
        key.crv = jwk.value("crv", json()).is_string() ? jwk["crv"].get<std::string>() : "";
        // Only the public members: cjose would take a private key as readily.
        json pub = {{"kty", key.kty}};
        bool readable = true;
        for (const char* member : {"n", "e", "crv", "x", "y"}) {
            if (!jwk.contains(member) || !jwk[member].is_string()) continue;
            pub[member] = jwk[member];
            if (std::string_view(member) != "crv")
                readable = readable && is_base64url(jwk[member].get_ref<const std::string&>());
        }
        if (!readable) continue;  // a key cjose's decoder could not take whole
        // RSA under 2048 bits (n shorter than 342 base64url characters) is refused.
        if (key.kty == "RSA" && (pub.value("n", "").size() < 342 || !pub.contains("e"))) continue;
        if (key.kty == "EC" && !(pub.contains("crv") && pub.contains("x") && pub.contains("y")))
            continue;
        key.json = pub.dump();
        out.keys_.push_back(std::move(key));
    }
    return out;
}

bool KeySet::has_kid(std::string_view kid) const {
    return std::any_of(keys_.begin(), keys_.end(), [&](const Key& k) { return k.kid == kid; });
}

bool key_fits_algorithm(const KeySet::Key& key, std::string_view alg) {
    if (!key.alg.empty() && key.alg != alg) return false;
    if (alg.size() != 5) return false;
    const std::string_view family = alg.substr(0, 2);
    if (family == "RS" || family == "PS") return key.kty == "RSA";
    if (family != "ES" || key.kty != "EC") return false;
    return (alg == "ES256" && key.crv == "P-256") || (alg == "ES384" && key.crv == "P-384") ||
           (alg == "ES512" && key.crv == "P-521");
}

bool read_header(std::string_view token, const Limits& limits, Header& out, std::string& why) {
    if (token.empty() || token.size() > limits.max_token_bytes) {
        why = "the token is empty or longer than " + std::to_string(limits.max_token_bytes) +
              " bytes";
        return false;
    }
    if (std::count(token.begin(), token.end(), '.') != 2) {
        why = "the token is not a signed JWT (three dot-separated parts)";
        return false;
    }
    for (std::size_t start = 0, dot = 0; dot != std::string_view::npos; start = dot + 1) {
        dot = token.find('.', start);
        if (!is_base64url(token.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
            why = "the token's parts are not base64url";
            return false;
        }
    }
    cjose_err err;
    JwsPtr jws(cjose_jws_import(token.data(), token.size(), &err));
    if (!jws) {
        why = "the token is not a signed JWT this server can read";
        return false;
    }
    cjose_header_t* header = cjose_jws_get_protected(jws.get());
    if (!header || json_object_get(header, "crit") != nullptr) {
        why = "the token's header is missing or names critical extensions";
        return false;
    }
    out.alg = header_string(header, "alg");
    out.kid = header_string(header, "kid");
    out.typ = header_string(header, "typ");
    return true;
}

Checked verify_token(std::string_view token, const KeySet& keys, const TokenRules& rules,
                     std::int64_t now_s, const Limits& limits) {
    Header header;
    std::string why;
    if (!read_header(token, limits, header, why)) return refuse(Failure::malformed, why);
    if (std::find(rules.algorithms.begin(), rules.algorithms.end(), header.alg) ==
        rules.algorithms.end())
        return refuse(Failure::bad_algorithm,
                      "the token's algorithm '" + header.alg.substr(0, 16) + "' is not accepted");
    // RFC 9068 names at+jwt; several providers still write JWT or nothing. Anything else (an ID
    // token's "id_token+jwt", a logout token) is another kind of token.
    std::string typ = header.typ;
    std::transform(typ.begin(), typ.end(), typ.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!typ.empty() && typ != "at+jwt" && typ != "application/at+jwt" && typ != "jwt")
        return refuse(Failure::bad_claims, "the token's type is not an access token");

    cjose_err err;
    JwsPtr jws(cjose_jws_import(token.data(), token.size(), &err));
    if (!jws) return refuse(Failure::malformed, "the token is not a signed JWT this server can read");
    bool kid_known = false;
    bool fits = false;
    bool verified = false;
    for (const auto& key : keys.keys()) {
        if (!header.kid.empty() && key.kid != header.kid) continue;
        kid_known = true;
        if (!key_fits_algorithm(key, header.alg)) continue;
        fits = true;
        JwkPtr jwk(cjose_jwk_import(key.json.data(), key.json.size(), &err));
        if (jwk && cjose_jws_verify(jws.get(), jwk.get(), &err)) {
            verified = true;
            break;
        }
    }
    if (!kid_known) return refuse(Failure::unknown_key, "the token's key (kid) is not one of the issuer's");
    if (!fits) return refuse(Failure::bad_algorithm, "the token's algorithm is not its key's");
    if (!verified) return refuse(Failure::bad_signature, "the token's signature does not verify");
    uint8_t* plain = nullptr;
    std::size_t plain_len = 0;
    if (!cjose_jws_get_plaintext(jws.get(), &plain, &plain_len, &err))
        return refuse(Failure::malformed, "the token carries no claims");
    const json claims = parse_bounded(
        std::string_view(reinterpret_cast<const char*>(plain), plain_len), limits.max_token_bytes,
        limits.max_depth);
    if (claims.is_discarded()) return refuse(Failure::malformed, "the token's claims are not JSON");
    return check_claims(claims, rules, now_s, false);
}

IssuerMetadata parse_issuer_metadata(std::string_view text, std::string_view expected_issuer,
                                     const Limits& limits) {
    const json doc = parse_bounded(text, limits.max_document_bytes, limits.max_depth);
    if (doc.is_discarded() || !doc.is_object())
        throw std::invalid_argument("the issuer's metadata is not a JSON object within the limits");
    IssuerMetadata out;
    auto str = [&](const char* name) {
        auto it = doc.find(name);
        return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    out.issuer = str("issuer");
    // RFC 8414 section 3.3: the document must name the issuer it was asked for, exactly.
    if (out.issuer != expected_issuer)
        throw std::invalid_argument("the metadata names issuer '" + out.issuer.substr(0, 200) +
                                    "', not the configured one");
    out.jwks_uri = str("jwks_uri");
    out.introspection_endpoint = str("introspection_endpoint");
    if (out.jwks_uri.empty() && out.introspection_endpoint.empty())
        throw std::invalid_argument("the issuer's metadata names no jwks_uri");
    for (const std::string* url : {&out.jwks_uri, &out.introspection_endpoint})
        if (!url->empty() && !is_secure_url(*url))
            throw std::invalid_argument("the issuer's metadata names a URL that is not https");
    return out;
}

Checked read_introspection(std::string_view text, const TokenRules& rules, std::int64_t now_s,
                           const Limits& limits) {
    const json doc = parse_bounded(text, limits.max_document_bytes, limits.max_depth);
    if (doc.is_discarded() || !doc.is_object())
        return refuse(Failure::unavailable, "the introspection answer is not a JSON object");
    if (doc.value("active", json()) != true)
        return refuse(Failure::inactive, "the token is not active");
    return check_claims(doc, rules, now_s, true);
}

}  // namespace agency::auth
