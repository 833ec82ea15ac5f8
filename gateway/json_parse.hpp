// nlohmann::json from JSON text, several times faster than nlohmann's own parser: simdjson
// reads and validates the text, and the tree is built from its DOM. Text simdjson refuses
// (a number beyond 64 bits, nesting past 1024) goes to nlohmann, which decides.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace agency::gateway {

// Like nlohmann::json::parse(text, nullptr, allow_exceptions): invalid text gives a discarded
// value, or throws nlohmann::json::parse_error when allow_exceptions.
nlohmann::json parse_json(std::string_view text, bool allow_exceptions = false);
// The same, without copying the text when its buffer already has simdjson's padding.
nlohmann::json parse_json(const std::string& text, bool allow_exceptions = false);

}  // namespace agency::gateway
