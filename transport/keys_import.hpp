// `keys import`: many keys at once (a team of 20) from a CSV or JSON file an operator wrote,
// read within limits and checked whole before any key is made (KeyStore::add_many).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agency::mcp {

struct NewKey {
    std::string name;
    std::vector<std::string> scopes{"read"};
    std::vector<std::string> clients;              // empty: every client
    std::optional<std::int64_t> monthly_actions;   // nullopt: the server's default
};

inline constexpr std::size_t kMaxImportBytes = 1 << 20;
inline constexpr std::size_t kMaxImportRows = 10'000;
inline constexpr std::size_t kMaxImportCell = 4096;

// The rows of `text`: JSON (an array of {"name", "scopes", "clients", "monthly_actions"}, or
// {"keys": [...]}) when it starts with '[' or '{', else CSV with a header naming the columns
// (name first or anywhere; scopes, clients, monthly_actions optional), lists within a cell
// separated by ';', spaces or (in a quoted cell) commas, '#' lines skipped. Throws
// std::runtime_error naming the line (CSV) or entry (JSON) and what is wrong; never returns an
// empty list.
std::vector<NewKey> parse_key_rows(std::string_view text);

}  // namespace agency::mcp
