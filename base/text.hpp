// Small text helpers that several layers need, written once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agency::base {

// ASCII lower case (HTTP header names, URL schemes, hosts): locale-independent.
std::string ascii_lower(std::string_view text);
// ASCII case-insensitive equality (keywords, severities).
bool iequals(std::string_view a, std::string_view b);
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");
// Without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

}  // namespace agency::base
