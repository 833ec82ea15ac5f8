// The vector row scans of a must_contain page walk (AVX2 and AVX-512): row bounds from brackets.
#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gateway/page_walk_internal.hpp"

#if defined(__x86_64__)

namespace agency::gateway::page_detail {

namespace {

bool all_space(std::string_view text, std::size_t from, std::size_t to) {
    for (; from < to; ++from)
        if (!is_space(text[from])) return false;
    return true;
}

// Whether the array opened at `bracket` is the value of a member literally named "data".
bool is_data_member(std::string_view body, std::size_t bracket) {
    std::size_t i = bracket;
    while (i > 0 && is_space(body[i - 1])) --i;
    if (i == 0 || body[--i] != ':') return false;
    while (i > 0 && is_space(body[i - 1])) --i;
    if (i < 6 || body.substr(i - 6, 6) != "\"data\"") return false;
    i -= 6;
    while (i > 0 && is_space(body[i - 1])) --i;
    return i > 0 && (body[i - 1] == '{' || body[i - 1] == ',');
}

// Bit i set where an odd number of the bits 0..i of x are set: inside a string, given quotes.
// A carry-less multiply by all ones is that prefix XOR in one instruction (six shifts and XORs
// took a quarter of the scan).
__attribute__((target("pclmul"))) inline std::uint64_t prefix_xor(std::uint64_t x) {
    const __m128i product =
        _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(x)), _mm_set1_epi8(-1), 0);
    return static_cast<std::uint64_t>(_mm_cvtsi128_si64(product));
}

// The bits of a block's bytes that a backslash escapes (rare: a byte at a time); `carry`: the
// last block ended with an unpaired backslash.
inline std::uint64_t escaped_bits(std::uint64_t backslashes, bool& carry) {
    std::uint64_t out = 0;
    if (backslashes == 0 && !carry) return 0;
    for (int i = 0; i < 64; ++i) {
        if (carry) {
            out |= std::uint64_t{1} << i;
            carry = false;
        } else if ((backslashes >> i) & 1) {
            carry = true;
        }
    }
    return out;
}

// What scan_rows knows between blocks, and what it does with each block's brackets. Plain
// scalar code, inlined into each vector version of the block loop.
struct RowScan {
    static constexpr int kMaxDepth = kMaxPageDepth;  // deeper: the thorough walk refuses it
    std::string_view body;
    std::size_t& open;
    std::size_t& close;
    std::vector<RowSpan>& rows;
    char stack[kMaxDepth];
    int depth = 0;
    bool in_data = false, data_found = false, top_closed = false;
    std::size_t top_open = 0, top_close = 0, row_begin = 0;
    std::uint64_t string_carry = 0;  // all ones while a string runs on from the last block
    bool escape_carry = false;       // the last block ended with an unpaired backslash

    std::uint64_t escaped(std::uint64_t backslashes) {
        return escaped_bits(backslashes, escape_carry);
    }

    // The brackets (outside strings) of the block at `base`; false when the page is not plain.
    bool take(std::uint64_t brackets, std::size_t base) {
        for (; brackets != 0; brackets &= brackets - 1) {
            const std::size_t at = base + static_cast<std::size_t>(__builtin_ctzll(brackets));
            const char c = body[at];
            if (c == '{' || c == '[') {
                if (top_closed || depth == kMaxDepth) return false;
                if (depth == 0) {
                    if (c != '{') return false;
                    top_open = at;
                } else if (depth == 1 && c == '[' && !data_found && is_data_member(body, at)) {
                    data_found = in_data = true;
                    open = at;
                } else if (in_data && depth == 2) {
                    if (c != '{') return false;  // a row that is not an object
                    row_begin = at;
                }
                stack[depth++] = c;
            } else {
                if (depth == 0 || stack[depth - 1] != (c == '}' ? '{' : '[')) return false;
                --depth;
                if (in_data && depth == 2) {
                    rows.push_back({row_begin, at + 1});
                } else if (in_data && depth == 1) {
                    in_data = false;
                    close = at;
                } else if (depth == 0) {
                    top_closed = true;
                    top_close = at;
                }
            }
        }
        return true;
    }

    // After the last block: the outline is whole and nothing but spaces and commas lies between.
    bool finish() const {
        if (!top_closed || !data_found || string_carry != 0 || escape_carry) return false;
        if (!all_space(body, 0, top_open) || !all_space(body, top_close + 1, body.size()))
            return false;
        // Between rows only a comma (and spaces): anything else is a row that is not an object.
        std::size_t from = open + 1;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            std::size_t to = rows[i].begin;
            if (i > 0) {
                while (to > from && is_space(body[to - 1])) --to;
                if (to == from || body[--to] != ',') return false;
            }
            if (!all_space(body, from, to)) return false;
            from = rows[i].end;
        }
        return all_space(body, from, close);
    }
};

// Bit i set where byte i of the 64 (lo, hi) is c.
__attribute__((target("avx2"))) inline std::uint64_t eq(__m256i lo, __m256i hi, char c) {
    const __m256i v = _mm256_set1_epi8(c);
    const auto low = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
    const auto high = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
    return static_cast<std::uint64_t>(low) | static_cast<std::uint64_t>(high) << 32;
}

// eq for a bracket with its square twin: '[' | 0x20 is '{' and ']' | 0x20 is '}', and no other
// byte ORs to either.
__attribute__((target("avx2"))) inline std::uint64_t eq_folded(__m256i lo, __m256i hi, char c) {
    const __m256i fold = _mm256_set1_epi8(0x20);
    return eq(_mm256_or_si256(lo, fold), _mm256_or_si256(hi, fold), c);
}

// The 64 bytes of body at `base` (< body.size()) as two registers; bytes past its end read as
// spaces.
__attribute__((target("avx2"))) inline void load_block_avx2(std::string_view body, std::size_t base,
                                                            __m256i& lo, __m256i& hi) {
    alignas(32) char tail[64];
    const char* p = body.data() + base;
    if (body.size() - base < 64) {
        std::memset(tail, ' ', sizeof tail);
        std::memcpy(tail, p, body.size() - base);
        p = tail;
    }
    lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
}

}  // namespace

// The bounds of the data array and of each of its rows, from the page's brackets alone
// (outside strings, escapes honoured), 64 bytes at a time: what a must_contain walk needs to
// pass over a row without simdjson reading it. Returns false for anything but a plain
// {..., "data":[{...}, ...], ...} page; the caller then walks the page the thorough way, which
// names what is wrong. Rows are not validated inside; the ones that are read are, by simdjson.
// kEscapes false: the caller knows the page holds no backslash (the marks pass saw none), so
// the scan need not look for escapes (an eighth of its work).
template <bool kEscapes>
__attribute__((target("avx2,pclmul"))) bool scan_rows(std::string_view body, std::size_t& open,
                                                      std::size_t& close,
                                                      std::vector<RowSpan>& rows) {
    rows.clear();
    RowScan scan{body, open, close, rows};
    for (std::size_t base = 0; base < body.size(); base += 64) {
        __m256i lo, hi;
        load_block_avx2(body, base, lo, hi);
        const std::uint64_t escaped = kEscapes ? scan.escaped(eq(lo, hi, '\\')) : 0;
        const std::uint64_t in_string = prefix_xor(eq(lo, hi, '"') & ~escaped) ^ scan.string_carry;
        scan.string_carry = in_string >> 63 ? ~std::uint64_t{0} : 0;
        const std::uint64_t brackets =
            (eq_folded(lo, hi, '{') | eq_folded(lo, hi, '}')) & ~in_string;
        if (!scan.take(brackets, base)) return false;
    }
    return scan.finish();
}

// Whether no bracket outside strings opens past `max_depth` levels: the same blocks as
// scan_rows, counting depth only (a closer without an opener is left to the parser).
__attribute__((target("avx2,pclmul"))) bool within_depth_avx2(std::string_view body,
                                                              int max_depth) {
    int depth = 0;
    bool escape_carry = false;
    std::uint64_t string_carry = 0;
    for (std::size_t base = 0; base < body.size(); base += 64) {
        __m256i lo, hi;
        load_block_avx2(body, base, lo, hi);
        const std::uint64_t escaped = escaped_bits(eq(lo, hi, '\\'), escape_carry);
        const std::uint64_t in_string = prefix_xor(eq(lo, hi, '"') & ~escaped) ^ string_carry;
        string_carry = in_string >> 63 ? ~std::uint64_t{0} : 0;
        std::uint64_t opens = eq_folded(lo, hi, '{') & ~in_string;
        std::uint64_t closes = eq_folded(lo, hi, '}') & ~in_string;
        // A block that only opens or only closes moves the depth by its count at once.
        if (closes == 0) {
            depth += __builtin_popcountll(opens);
            if (depth > max_depth) return false;
            continue;
        }
        if (opens == 0) {
            depth = std::max(0, depth - __builtin_popcountll(closes));
            continue;
        }
        for (std::uint64_t brackets = opens | closes; brackets != 0; brackets &= brackets - 1) {
            const std::uint64_t bit = brackets & (~brackets + 1);
            if (opens & bit) {
                if (++depth > max_depth) return false;
            } else if (depth > 0) {
                --depth;
            }
        }
    }
    return true;
}

template bool scan_rows<true>(std::string_view, std::size_t&, std::size_t&, std::vector<RowSpan>&);
template bool scan_rows<false>(std::string_view, std::size_t&, std::size_t&, std::vector<RowSpan>&);

namespace {

// The 64 bytes of body at `at`; bytes past its end read as spaces, and none is loaded.
__attribute__((target("avx512f,avx512bw"))) inline __m512i load_block(std::string_view body,
                                                                      std::size_t at) {
    if (at + 64 <= body.size()) return _mm512_loadu_si512(body.data() + at);
    const __m512i spaces = _mm512_set1_epi8(' ');
    if (at >= body.size()) return spaces;
    const std::uint64_t present = (std::uint64_t{1} << (body.size() - at)) - 1;
    return _mm512_mask_loadu_epi8(spaces, present, body.data() + at);
}

}  // namespace

// scan_rows with AVX-512, and find_marks in the same pass: one register per block,
// comparisons straight into bit masks. Fills ws.marks, ws.any_backslash and ws.rows; when it
// returns false (not a plain page) the marks may stop short of the page's end.
__attribute__((target("avx512f,avx512bw,pclmul"))) bool scan_rows_avx512(std::string_view body,
                                                                         std::string_view needle,
                                                                         std::size_t& open,
                                                                         std::size_t& close,
                                                                         Workspace& ws) {
    ws.rows.clear();
    ws.marks.clear();
    ws.any_backslash = false;
    RowScan scan{body, open, close, ws.rows};
    const std::size_t n = needle.size();
    const __m512i first = _mm512_set1_epi8(static_cast<char>(needle.front()));
    const __m512i last = _mm512_set1_epi8(static_cast<char>(needle.back()));
    const __m512i first_fold = _mm512_set1_epi8(static_cast<char>(fold_of(needle.front())));
    const __m512i last_fold = _mm512_set1_epi8(static_cast<char>(fold_of(needle.back())));
    const __m512i quote = _mm512_set1_epi8('"');
    const __m512i backslash = _mm512_set1_epi8('\\');
    const __m512i fold = _mm512_set1_epi8(0x20);
    const __m512i open_brace = _mm512_set1_epi8('{');
    const __m512i close_brace = _mm512_set1_epi8('}');
    for (std::size_t base = 0; base < body.size(); base += 64) {
        const __m512i block = load_block(body, base);
        const __m512i ahead = load_block(body, base + n - 1);  // each position's last needle byte
        std::uint64_t candidates =
            _mm512_cmpeq_epi8_mask(_mm512_or_si512(block, first_fold), first) &
            _mm512_cmpeq_epi8_mask(_mm512_or_si512(ahead, last_fold), last);
        const std::uint64_t backslashes = _mm512_cmpeq_epi8_mask(block, backslash);
        if ((candidates | backslashes) != 0) {
            std::uint64_t marks = backslashes;
            ws.any_backslash = ws.any_backslash || backslashes != 0;
            for (; candidates != 0; candidates &= candidates - 1) {
                const auto bit = static_cast<std::size_t>(__builtin_ctzll(candidates));
                if (matches_at(body, base + bit, needle)) marks |= std::uint64_t{1} << bit;
            }
            for (; marks != 0; marks &= marks - 1)
                ws.marks.push_back(base + static_cast<std::size_t>(__builtin_ctzll(marks)));
        }
        const std::uint64_t escaped = scan.escaped(backslashes);
        const std::uint64_t in_string =
            prefix_xor(_mm512_cmpeq_epi8_mask(block, quote) & ~escaped) ^ scan.string_carry;
        scan.string_carry = in_string >> 63 ? ~std::uint64_t{0} : 0;
        const __m512i folded = _mm512_or_si512(block, fold);
        const std::uint64_t brackets = (_mm512_cmpeq_epi8_mask(folded, open_brace) |
                                        _mm512_cmpeq_epi8_mask(folded, close_brace)) &
                                       ~in_string;
        if (!scan.take(brackets, base)) return false;
    }
    return scan.finish();
}

}  // namespace agency::gateway::page_detail

#endif
