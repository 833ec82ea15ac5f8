// The lean structuredContent (server/lean_answer.cpp): any bytes (a tool's answer carries
// gateway rows, whose members the gateway chooses). Never crashes or reads past its input (ASan),
// text that is not a JSON object comes back as it was, and rows of objects come back as columns
// and arrays that hold every non-null member of every row, in the same order of rows.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/lean_answer.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& text) {
    std::fprintf(stderr, "lean answer: %s: %.*s\n", what,
                 static_cast<int>(std::min<std::size_t>(text.size(), 2000)), text.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using ordered = nlohmann::ordered_json;
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::string lean = agency::mcp::lean_structured(text);
    const ordered in = ordered::parse(text, nullptr, false);
    if (in.is_discarded() || !in.is_object()) {
        if (lean != text) fail("not an object, yet rewritten", text);
        return 0;
    }
    const ordered out = ordered::parse(lean, nullptr, false);
    if (out.is_discarded() || !out.is_object()) fail("the lean answer is not a JSON object", text);
    const auto rows = in.find("rows");
    if (rows == in.end() || !rows->is_array() || rows->empty()) return 0;
    for (const auto& row : *rows)
        if (!row.is_object()) return 0;
    const ordered& columns = out["columns"];
    const ordered& table = out["rows"];
    if (!columns.is_array() || !table.is_array() || table.size() != rows->size())
        fail("the rows did not become columns and arrays", text);
    for (std::size_t r = 0; r < rows->size(); ++r) {
        std::size_t kept = 0;
        for (const auto& [member, value] : (*rows)[r].items()) {
            if (value.is_null()) continue;
            ++kept;
            bool found = false;
            for (std::size_t c = 0; c < columns.size() && !found; ++c)
                found = columns[c] == member && table[r][c] == value;
            if (!found) fail("a member was lost", text);
        }
        std::size_t valued = 0;
        for (const auto& cell : table[r]) valued += cell.is_null() ? 0 : 1;
        if (valued != kept) fail("a row gained a value", text);
    }
    return 0;
}
