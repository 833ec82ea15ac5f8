// Small wrappers over OpenSSL used for sealed tokens (requestState, cursors, confirmations),
// session ids and key hashing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agency::crypto {

std::string random_bytes(std::size_t n);
// n random bytes as lowercase hex (2n characters).
std::string random_hex(std::size_t n);
std::string sha256_hex(std::string_view data);
std::string hmac_sha256(std::string_view key, std::string_view data);  // raw 32 bytes
std::string base64url_encode(std::string_view data);
std::optional<std::string> base64url_decode(std::string_view text);
bool constant_time_equal(std::string_view a, std::string_view b);

// A tamper-evident token: base64url(payload JSON) "." base64url(HMAC-SHA256). Not secret: the
// payload is readable by whoever holds the token, so never seal secrets in it.
std::string seal(std::string_view key, const nlohmann::json& payload);
// The payload when the MAC is valid, nullopt otherwise.
std::optional<nlohmann::json> unseal(std::string_view key, std::string_view token);

}  // namespace agency::crypto
