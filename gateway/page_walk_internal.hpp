// Private to page_walk.cpp and page_scan.cpp: the walk's workspace and the vector row scans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "gateway/page_walk.hpp"

namespace agency::gateway::page_detail {

struct RowSpan {
    std::size_t begin, end;  // a row object's text in the page: [begin, end)
};

// What one walk needs besides the page; kept between walks so the buffers are reused.
struct Workspace {
    simdjson::ondemand::parser parser;
    std::vector<std::size_t> marks;  // must_contain: where the value or an escape occurs
    bool any_backslash = false;      // must_contain: some mark is a backslash
    std::vector<RowField> fields;
    std::vector<RowSpan> rows;  // must_contain: every row of the data array
    std::string reduced;        // must_contain: the page with its data array emptied
    // select: the row's members (raw key text without quotes, raw value) and the row rewritten
    std::vector<std::pair<std::string_view, std::string_view>> members;
    std::string selected;
};

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

inline bool is_ascii_letter(char c) { return ascii_lower(c) >= 'a' && ascii_lower(c) <= 'z'; }

// Whether body[at..] starts with `needle` (lower case), ASCII case-insensitively.
inline bool matches_at(std::string_view body, std::size_t at, std::string_view needle) {
    if (at + needle.size() > body.size()) return false;
    for (std::size_t i = 0; i < needle.size(); ++i)
        if (ascii_lower(body[at + i]) != needle[i]) return false;
    return true;
}

inline std::uint8_t fold_of(char c) { return is_ascii_letter(c) ? 0x20 : 0; }

#if defined(__x86_64__)
// page_scan.cpp: the bounds of the data array and of each of its rows, from the page's
// brackets alone, 64 bytes at a time (AVX2); false for anything but a plain page.
template <bool kEscapes>
__attribute__((target("avx2,pclmul"))) bool scan_rows(std::string_view body, std::size_t& open,
                                                      std::size_t& close,
                                                      std::vector<RowSpan>& rows);

// page_scan.cpp: scan_rows with AVX-512, finding the marks in the same pass.
__attribute__((target("avx512f,avx512bw,pclmul"))) bool scan_rows_avx512(std::string_view body,
                                                                         std::string_view needle,
                                                                         std::size_t& open,
                                                                         std::size_t& close,
                                                                         Workspace& ws);
#endif

}  // namespace agency::gateway::page_detail
