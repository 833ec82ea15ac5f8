// Private to page_walk.cpp and page_scan.cpp: the walk's workspace and the vector row scans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
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
    std::size_t members_left_out = 0;  // select: members past kMaxSelectedMembers
    std::unordered_set<std::string_view> top_names;  // the page's top-level names, unescaped

    // After a walk: buffers a huge page grew are let go, so a hostile page's size is not held
    // for the life of the process (a parser holds about 6x the largest page it has read).
    void trim() {
        constexpr std::size_t kKeepBytes = 8u << 20;
        if (parser.capacity() > kKeepBytes) parser = simdjson::ondemand::parser{};
        if (reduced.capacity() > kKeepBytes) std::string().swap(reduced);
        if (selected.capacity() > kKeepBytes) std::string().swap(selected);
        if (members.capacity() * sizeof(members[0]) > kKeepBytes) decltype(members)().swap(members);
        if (rows.capacity() * sizeof(RowSpan) > kKeepBytes) decltype(rows)().swap(rows);
        if (marks.capacity() * sizeof(std::size_t) > kKeepBytes) decltype(marks)().swap(marks);
        if (top_names.bucket_count() > 4096) decltype(top_names)().swap(top_names);
    }
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

// page_walk.cpp: whether no bracket outside strings opens past `max_depth` levels (with
// AVX2 when `simd` allows).
bool within_depth(std::string_view body, int max_depth, int simd);

#if defined(__x86_64__)
// page_scan.cpp: within_depth with AVX2.
__attribute__((target("avx2,pclmul"))) bool within_depth_avx2(std::string_view body,
                                                              int max_depth);

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
