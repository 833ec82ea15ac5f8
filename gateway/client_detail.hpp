// Internals of the gateway client that are pure functions (no network), kept apart so the
// tests can check them directly. Not part of the public interface.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gateway/actions.hpp"

namespace agency::gateway::detail {

struct BaseUrl {
    bool https = false;
    std::string host;  // without IPv6 brackets
    int port = 0;
    std::string path;     // "/api", or "/" when the URL had none
    std::string display;  // the URL as given, for messages (never carries credentials)
};

// Parses http(s)://host[:port][/path]. Throws Error{config} with one clear message.
BaseUrl parse_base_url(std::string_view url);

// RFC 3986 percent-encoding of a query component (unreserved characters kept).
void append_query_escaped(std::string& out, std::string_view value);

// "YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]" (UTC) or "YYYY-MM-DD"; nullopt when it is neither.
std::optional<std::chrono::sys_seconds> parse_utc_time(std::string_view text);
std::string format_utc_time(std::chrono::system_clock::time_point at);

// String rendering used to compare a request field with a row field: strings as-is, numbers
// and booleans as JSON text; nullopt for null, objects and arrays (not comparable).
std::optional<std::string> scalar_text(const nlohmann::json& value);

// Whether the body carries every value the spec needs to find the record it would create.
bool can_verify(const ActionSpec& spec, const nlohmann::json& body);

// Whether `row` is the record an attempt sent at or after `not_before` would have written.
bool row_matches(const ActionSpec& spec, const nlohmann::json& body, const nlohmann::json& row,
                 std::chrono::sys_seconds not_before);

// Replaces every occurrence of `secret` in `text` (no-op for an empty secret).
std::string redact(std::string text, std::string_view secret);

}  // namespace agency::gateway::detail
