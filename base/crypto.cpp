#include "base/crypto.hpp"

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>

#include <sys/random.h>

// SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, but EVP's first fetch
// of any algorithm builds the provider's name map and every EVP digest goes through the
// provider dispatch: start-up must not pay for either (docs/benchmarks.md, cold start). The
// low-level functions compute the same SHA-256 with neither.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace agency::crypto {

// The kernel's generator (getrandom): as strong as OpenSSL's, and start-up never seeds
// OpenSSL's DRBG (a large share of a cold start if it did).
std::string random_bytes(std::size_t n) {
    std::string out(n, '\0');
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::getrandom(out.data() + done, n - done, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) throw std::runtime_error("the system random generator failed");
        done += static_cast<std::size_t>(got);
    }
    return out;
}

static std::string to_hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0xF]);
    }
    return out;
}

std::string random_hex(std::size_t n) { return to_hex(random_bytes(n)); }

namespace {

// SHA-256 of the concatenation of `parts` into `out` (32 bytes).
void sha256_into(std::initializer_list<std::string_view> parts, unsigned char* out) {
    SHA256_CTX ctx;
    bool ok = SHA256_Init(&ctx) == 1;
    for (auto part : parts) ok = ok && SHA256_Update(&ctx, part.data(), part.size()) == 1;
    ok = ok && SHA256_Final(out, &ctx) == 1;
    OPENSSL_cleanse(&ctx, sizeof ctx);  // holds the HMAC key's pads mid-computation
    if (!ok) throw std::runtime_error("SHA-256 failed");
}

}  // namespace

std::string sha256_hex(std::string_view data) {
    unsigned char digest[32];
    sha256_into({data}, digest);
    return to_hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

// HMAC (RFC 2104) over SHA-256, block size 64.
std::string hmac_sha256(std::string_view key, std::string_view data) {
    constexpr std::size_t kBlock = 64;
    unsigned char key_block[kBlock] = {};
    if (key.size() > kBlock) {
        sha256_into({key}, key_block);
    } else {
        std::memcpy(key_block, key.data(), key.size());
    }
    char inner_pad[kBlock];
    char outer_pad[kBlock];
    for (std::size_t i = 0; i < kBlock; ++i) {
        inner_pad[i] = static_cast<char>(key_block[i] ^ 0x36);
        outer_pad[i] = static_cast<char>(key_block[i] ^ 0x5c);
    }
    unsigned char inner[32];
    sha256_into({std::string_view(inner_pad, kBlock), data}, inner);
    std::string out(32, '\0');
    sha256_into({std::string_view(outer_pad, kBlock),
                 std::string_view(reinterpret_cast<const char*>(inner), 32)},
                reinterpret_cast<unsigned char*>(out.data()));
    // The pads are the key in disguise: leave none of it on the stack (as HMAC() did).
    OPENSSL_cleanse(key_block, sizeof key_block);
    OPENSSL_cleanse(inner_pad, sizeof inner_pad);
    OPENSSL_cleanse(outer_pad, sizeof outer_pad);
    return out;
}

static constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url_encode(std::string_view data) {
    std::string out;
    out.reserve((data.size() + 2) / 3 * 4);
    std::size_t i = 0;
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(data[k]); };
    for (; i + 2 < data.size(); i += 3) {
        unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
        out.push_back(kAlphabet[(v >> 18) & 63]);
        out.push_back(kAlphabet[(v >> 12) & 63]);
        out.push_back(kAlphabet[(v >> 6) & 63]);
        out.push_back(kAlphabet[v & 63]);
    }
    if (i + 1 == data.size()) {
        unsigned v = byte(i) << 16;
        out.push_back(kAlphabet[(v >> 18) & 63]);
        out.push_back(kAlphabet[(v >> 12) & 63]);
    } else if (i + 2 == data.size()) {
        unsigned v = (byte(i) << 16) | (byte(i + 1) << 8);
        out.push_back(kAlphabet[(v >> 18) & 63]);
        out.push_back(kAlphabet[(v >> 12) & 63]);
        out.push_back(kAlphabet[(v >> 6) & 63]);
    }
    return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '-') return 62;
        if (c == '_') return 63;
        return -1;
    };
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() * 3 / 4);
    unsigned buffer = 0;
    int bits = 0;
    for (char c : text) {
        int v = value(c);
        if (v < 0) return std::nullopt;
        buffer = (buffer << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
        }
    }
    return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string seal(std::string_view key, const nlohmann::json& payload) {
    std::string body = base64url_encode(payload.dump());
    return body + "." + base64url_encode(hmac_sha256(key, body));
}

std::optional<nlohmann::json> unseal(std::string_view key, std::string_view token) {
    auto dot = token.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    auto body = token.substr(0, dot);
    auto mac = base64url_decode(token.substr(dot + 1));
    if (!mac || !constant_time_equal(*mac, hmac_sha256(key, body))) return std::nullopt;
    auto raw = base64url_decode(body);
    if (!raw) return std::nullopt;
    auto parsed = nlohmann::json::parse(*raw, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
    return parsed;
}

}  // namespace agency::crypto
