// `keys import`'s reader (transport/keys_import.hpp) on any bytes: a CSV or JSON file an
// operator wrote, or a spreadsheet exported. Whatever it accepts is within its limits: at least
// one row, at most 10,000, every name non-empty and unique, every cell within 4096 characters;
// what it refuses, it refuses with a message naming where and saying nothing was imported.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "transport/keys_import.hpp"

namespace {

[[noreturn]] void fail(const char* what, std::string_view input) {
    std::fprintf(stderr, "keys import: %s\ninput (%zu bytes): %.*s\n", what, input.size(),
                 static_cast<int>(std::min<std::size_t>(input.size(), 400)), input.data());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<agency::mcp::NewKey> rows;
    try {
        rows = agency::mcp::parse_key_rows(input);
    } catch (const std::runtime_error& e) {
        const std::string_view why = e.what();
        if (!why.starts_with("keys import: ") || why.find("nothing was imported") == why.npos)
            fail("a refusal that does not say where and that nothing was imported", input);
        return 0;
    }
    if (rows.empty() || rows.size() > agency::mcp::kMaxImportRows) fail("row count", input);
    std::set<std::string> names;
    for (const auto& row : rows) {
        if (row.name.empty()) fail("a row without a name", input);
        if (!names.insert(row.name).second) fail("a name twice", input);
        if (row.name.size() > 128) fail("a name past the limit", input);
        for (const unsigned char c : row.name)
            if (c < 0x20 || c == 0x7f) fail("a control character in a name", input);
        if (row.monthly_actions && *row.monthly_actions < 0) fail("a negative budget", input);
    }
    return 0;
}
