#include "gateway/page_walk.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <simdjson.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace agency::gateway {

namespace {

struct RowSpan {
    std::size_t begin, end;  // a row object's text in the page: [begin, end)
};

// What one walk needs besides the page; kept between walks so the buffers are reused.
struct Workspace {
    simdjson::ondemand::parser parser;
    std::vector<std::size_t> marks;    // must_contain: where the value or an escape occurs
    bool any_backslash = false;        // must_contain: some mark is a backslash
    std::vector<RowField> fields;
    std::vector<RowSpan> rows;         // must_contain: every row of the data array
    std::string reduced;               // must_contain: the page with its data array emptied
};

// A parser is sized for the largest page it has seen (about 6x the page), so one per thread
// would cost a page-sized buffer per HTTP connection thread. Walks are short and CPU-bound:
// as many workspaces as cores serve any number of threads.
class WorkspacePool {
public:
    WorkspacePool() : limit_(std::max(2u, std::thread::hardware_concurrency())) {}

    std::unique_ptr<Workspace> take() {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !idle_.empty() || made_ < limit_; });
        if (!idle_.empty()) {
            auto ws = std::move(idle_.back());
            idle_.pop_back();
            return ws;
        }
        ++made_;
        lock.unlock();
        return std::make_unique<Workspace>();
    }

    void give(std::unique_ptr<Workspace> ws) {
        {
            std::lock_guard lock(mu_);
            idle_.push_back(std::move(ws));
        }
        cv_.notify_one();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::unique_ptr<Workspace>> idle_;
    std::size_t made_ = 0;
    std::size_t limit_;
};

WorkspacePool& pool() {
    static WorkspacePool p;
    return p;
}

// A walk started from a visitor (a walk inside a walk) gets a workspace of its own instead of
// waiting for the pool, which it could otherwise wait on forever.
thread_local int walks_on_this_thread = 0;

class Lease {
public:
    Lease() {
        if (walks_on_this_thread++ == 0) {
            ws_ = pool().take();
            pooled_ = true;
        } else {
            ws_ = std::make_unique<Workspace>();
        }
    }
    ~Lease() {
        --walks_on_this_thread;
        if (pooled_) pool().give(std::move(ws_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Workspace* operator->() { return ws_.get(); }
    Workspace& operator*() { return *ws_; }

private:
    std::unique_ptr<Workspace> ws_;
    bool pooled_ = false;
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// simdjson's raw views run up to the next token, so they may carry whitespace.
std::string_view trim_end(std::string_view text) {
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

bool is_ascii_letter(char c) { return ascii_lower(c) >= 'a' && ascii_lower(c) <= 'z'; }

// Whether body[at..] starts with `needle` (lower case), ASCII case-insensitively.
bool matches_at(std::string_view body, std::size_t at, std::string_view needle) {
    if (at + needle.size() > body.size()) return false;
    for (std::size_t i = 0; i < needle.size(); ++i)
        if (ascii_lower(body[at + i]) != needle[i]) return false;
    return true;
}

std::uint8_t fold_of(char c) { return is_ascii_letter(c) ? 0x20 : 0; }

// The widest vector instructions a walk may use: detected once, capped by set_max_simd.
std::atomic<int> max_simd{2};

int simd_level() {
#if defined(__x86_64__)
    static const int detected = [] {
        if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("pclmul")) return 0;
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? 2 : 1;
    }();
    return std::min(detected, max_simd.load(std::memory_order_relaxed));
#else
    return 0;
#endif
}

#if defined(__x86_64__)
// The block loop of find_marks: the first and last bytes of the needle compared at every
// position of a block at once (letters folded by OR 0x20), with the block's backslashes; a
// candidate is confirmed byte by byte. Set bits come out in ascending order, so the marks are
// sorted. Returns where the blocks stopped (the rest is the caller's).
__attribute__((target("avx2"))) std::size_t find_blocks_avx2(std::string_view body,
                                                             std::string_view needle,
                                                             std::vector<std::size_t>& marks,
                                                             bool& any_backslash) {
    const std::size_t n = needle.size();
    const __m256i first = _mm256_set1_epi8(static_cast<char>(needle.front()));
    const __m256i last = _mm256_set1_epi8(static_cast<char>(needle.back()));
    const __m256i first_fold = _mm256_set1_epi8(static_cast<char>(fold_of(needle.front())));
    const __m256i last_fold = _mm256_set1_epi8(static_cast<char>(fold_of(needle.back())));
    const __m256i backslash = _mm256_set1_epi8('\\');
    std::size_t i = 0;
    for (; i + n - 1 + 32 <= body.size(); i += 32) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(body.data() + i));
        const __m256i b =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(body.data() + i + n - 1));
        const __m256i both =
            _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_or_si256(a, first_fold), first),
                             _mm256_cmpeq_epi8(_mm256_or_si256(b, last_fold), last));
        auto candidates = static_cast<std::uint32_t>(_mm256_movemask_epi8(both));
        auto escapes =
            static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, backslash)));
        if ((candidates | escapes) == 0) continue;
        any_backslash = any_backslash || escapes != 0;
        for (; candidates != 0; candidates &= candidates - 1) {
            const auto bit = static_cast<std::size_t>(__builtin_ctz(candidates));
            if (matches_at(body, i + bit, needle)) escapes |= 1u << bit;
        }
        for (; escapes != 0; escapes &= escapes - 1)
            marks.push_back(i + static_cast<std::size_t>(__builtin_ctz(escapes)));
    }
    return i;
}

#endif

std::string lower_ascii(std::string_view value) {
    std::string out(value);
    std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
    return out;
}

// Offsets, in order, of every occurrence of `value` (ASCII case-insensitively) and of every
// backslash in `body`: a row holding neither cannot hold the value in any field.
void find_marks(std::string_view body, std::string_view value, Workspace& ws) {
    ws.marks.clear();
    ws.any_backslash = false;
    const std::string needle = lower_ascii(value);
    std::size_t i = 0;
#if defined(__x86_64__)
    // Without AVX2 (rare on x86-64 servers now) the byte loop below does it all, slower.
    if (simd_level() >= 1) i = find_blocks_avx2(body, needle, ws.marks, ws.any_backslash);
#endif
    for (; i < body.size(); ++i) {
        const bool backslash = body[i] == '\\';
        ws.any_backslash = ws.any_backslash || backslash;
        if (backslash || matches_at(body, i, needle)) ws.marks.push_back(i);
    }
}

// Fills `out` from one field value of any type (consumes containers). A row naming the field
// twice ends with the last value, wholly: nothing of the first (its string text) stays.
simdjson::error_code read_field(simdjson::ondemand::value value, RowField& out) {
    using simdjson::ondemand::json_type;
    out = RowField{};
    json_type type;
    if (auto e = value.type().get(type)) return e;
    std::string_view raw;
    if (type == json_type::object) {
        simdjson::ondemand::object object;
        if (auto e = value.get_object().get(object)) return e;
        if (auto e = object.raw_json().get(raw)) return e;
    } else if (type == json_type::array) {
        simdjson::ondemand::array array;
        if (auto e = value.get_array().get(array)) return e;
        if (auto e = array.raw_json().get(raw)) return e;
    } else {
        raw = value.raw_json_token();
        if (type == json_type::string) {
            out.is_string = true;
            if (auto e = value.get_string().get(out.text)) return e;
        }
    }
    out.raw = trim_end(raw);
    return simdjson::SUCCESS;
}

// Integers as sent; a number written as a double (1e3) is taken when it fits in an int64.
simdjson::error_code read_int(simdjson::ondemand::value value, std::int64_t& out) {
    if (value.get_int64().get(out) == simdjson::SUCCESS) return simdjson::SUCCESS;
    double d = 0;
    if (auto e = value.get_double().get(d)) return e;
    if (!(d >= -9.2e18 && d <= 9.2e18)) return simdjson::NUMBER_OUT_OF_RANGE;
    out = static_cast<std::int64_t>(d);
    return simdjson::SUCCESS;
}

simdjson::error_code read_pagination(simdjson::ondemand::value value, Pagination& out) {
    simdjson::ondemand::object object;
    if (auto e = value.get_object().get(object)) return e;
    out.present = true;
    for (auto field : object) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return e;
        simdjson::error_code e = simdjson::SUCCESS;
        if (key == "total") e = read_int(field.value(), out.total);
        else if (key == "limit") e = read_int(field.value(), out.limit);
        else if (key == "offset") e = read_int(field.value(), out.offset);
        else if (key == "has_more") e = field.value().get_bool().get(out.has_more);
        if (e) return e;
    }
    return simdjson::SUCCESS;
}

// The wanted fields of one row into ws.fields; false when the row is not valid.
bool read_fields(simdjson::ondemand::object& row, std::span<const std::string_view> names,
                 Workspace& ws) {
    std::fill(ws.fields.begin(), ws.fields.end(), RowField{});
    for (auto field : row) {
        // Keys are compared as they stand in the page (names are plain ASCII), not unescaped
        // first: this loop runs for every field of every row read.
        simdjson::ondemand::raw_json_string key;
        if (field.key().get(key)) return false;
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (!key.unsafe_is_equal(names[i])) continue;
            if (read_field(field.value(), ws.fields[i])) return false;
            break;
        }
    }
    return true;
}

// The rows of one "data" array.
void walk_data(simdjson::ondemand::array data, const char* body, const WalkOptions& options,
               const RowVisitor& on_row, Workspace& ws, WalkResult& result) {
    const auto names = options.fields;
    ws.fields.assign(names.size(), RowField{});
    const bool filtering = !options.must_contain.empty();
    std::size_t next_mark = 0;
    for (auto element : data) {
        simdjson::ondemand::object row;
        std::string_view raw;
        if (element.get_object().get(row) || row.raw_json().get(raw)) {
            result.problem = WalkProblem::bad_row;
            return;
        }
        raw = trim_end(raw);
        const std::size_t index = result.rows++;
        if (filtering) {
            const auto begin = static_cast<std::size_t>(raw.data() - body);
            while (next_mark < ws.marks.size() && ws.marks[next_mark] < begin) ++next_mark;
            if (next_mark == ws.marks.size() || ws.marks[next_mark] >= begin + raw.size())
                continue;  // neither the value nor an escape: it cannot match
        }
        if (!names.empty() && (row.reset().error() || !read_fields(row, names, ws))) {
            result.problem = WalkProblem::bad_row;
            return;
        }
        if (!on_row(Row{raw, ws.fields, index})) {
            result.stopped = true;
            return;
        }
    }
}

// The whole page through simdjson: its top-level members, the rows of its data array.
void walk_document(simdjson::padded_string_view view, const WalkOptions& options,
                   const RowVisitor& on_row, Workspace& ws, WalkResult& result) {
    simdjson::ondemand::document doc;
    simdjson::ondemand::object top;
    if (ws.parser.iterate(view).get(doc) || doc.get_object().get(top)) {
        result.problem = WalkProblem::not_json;
        return;
    }
    bool has_data = false;
    for (auto field : top) {
        std::string_view key;
        if (field.unescaped_key().get(key)) {
            result.problem = WalkProblem::not_json;
            return;
        }
        if (key == "pagination") {
            if (read_pagination(field.value(), result.pagination)) {
                result.problem = WalkProblem::bad_pagination;
                return;
            }
        } else if (key == "data" && !has_data) {
            simdjson::ondemand::array data;
            if (field.value().get_array().get(data)) {
                result.problem = WalkProblem::no_data;
                return;
            }
            has_data = true;
            walk_data(data, view.data(), options, on_row, ws, result);
            if (result.problem != WalkProblem::none) return;
        }
    }
    if (!has_data) result.problem = WalkProblem::no_data;
}

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

#if defined(__x86_64__)
// Bit i set where an odd number of the bits 0..i of x are set: inside a string, given quotes.
// A carry-less multiply by all ones is that prefix XOR in one instruction (six shifts and XORs
// took a quarter of the scan).
__attribute__((target("pclmul"))) inline std::uint64_t prefix_xor(std::uint64_t x) {
    const __m128i product = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(x)),
                                                 _mm_set1_epi8(-1), 0);
    return static_cast<std::uint64_t>(_mm_cvtsi128_si64(product));
}
#endif

// What scan_rows knows between blocks, and what it does with each block's brackets. Plain
// scalar code, inlined into each vector version of the block loop.
struct RowScan {
    static constexpr int kMaxDepth = 64;
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

    // The bits of a block's bytes that a backslash escapes (rare: a byte at a time).
    std::uint64_t escaped(std::uint64_t backslashes) {
        std::uint64_t out = 0;
        if (backslashes == 0 && !escape_carry) return 0;
        for (int i = 0; i < 64; ++i) {
            if (escape_carry) {
                out |= std::uint64_t{1} << i;
                escape_carry = false;
            } else if ((backslashes >> i) & 1) {
                escape_carry = true;
            }
        }
        return out;
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

#if defined(__x86_64__)
// Bit i set where byte i of the 64 (lo, hi) is c.
__attribute__((target("avx2"))) inline std::uint64_t eq(__m256i lo, __m256i hi, char c) {
    const __m256i v = _mm256_set1_epi8(c);
    const auto low = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
    const auto high = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
    return static_cast<std::uint64_t>(low) | static_cast<std::uint64_t>(high) << 32;
}

// The bounds of the data array and of each of its rows, from the page's brackets alone
// (outside strings, escapes honoured), 64 bytes at a time: what a must_contain walk needs to
// pass over a row without simdjson reading it. Returns false for anything but a plain
// {..., "data":[{...}, ...], ...} page; the caller then walks the page the thorough way, which
// names what is wrong. Rows are not validated inside; the ones that are read are, by simdjson.
// kEscapes false: the caller knows the page holds no backslash (the marks pass saw none), so
// the scan need not look for escapes (an eighth of its work).
template <bool kEscapes>
__attribute__((target("avx2,pclmul"))) bool scan_rows(std::string_view body, std::size_t& open,
                                               std::size_t& close, std::vector<RowSpan>& rows) {
    rows.clear();
    RowScan scan{body, open, close, rows};
    for (std::size_t base = 0; base < body.size(); base += 64) {
        alignas(32) char tail[64];
        const char* p = body.data() + base;
        if (body.size() - base < 64) {
            std::memset(tail, ' ', sizeof tail);
            std::memcpy(tail, p, body.size() - base);
            p = tail;
        }
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
        const std::uint64_t escaped = kEscapes ? scan.escaped(eq(lo, hi, '\\')) : 0;
        const std::uint64_t in_string =
            prefix_xor(eq(lo, hi, '"') & ~escaped) ^ scan.string_carry;
        scan.string_carry = in_string >> 63 ? ~std::uint64_t{0} : 0;
        // '[' | 0x20 is '{' and ']' | 0x20 is '}'; no other byte ORs to either.
        const __m256i lo_folded = _mm256_or_si256(lo, _mm256_set1_epi8(0x20));
        const __m256i hi_folded = _mm256_or_si256(hi, _mm256_set1_epi8(0x20));
        const std::uint64_t brackets =
            (eq(lo_folded, hi_folded, '{') | eq(lo_folded, hi_folded, '}')) & ~in_string;
        if (!scan.take(brackets, base)) return false;
    }
    return scan.finish();
}

// The 64 bytes of body at `at`; bytes past its end read as spaces, and none is loaded.
__attribute__((target("avx512f,avx512bw"))) inline __m512i load_block(std::string_view body,
                                                                      std::size_t at) {
    if (at + 64 <= body.size()) return _mm512_loadu_si512(body.data() + at);
    const __m512i spaces = _mm512_set1_epi8(' ');
    if (at >= body.size()) return spaces;
    const std::uint64_t present = (std::uint64_t{1} << (body.size() - at)) - 1;
    return _mm512_mask_loadu_epi8(spaces, present, body.data() + at);
}

// scan_rows with AVX-512, and find_marks in the same pass: one register per block,
// comparisons straight into bit masks. Fills ws.marks, ws.any_backslash and ws.rows; when it
// returns false (not a plain page) the marks may stop short of the page's end.
__attribute__((target("avx512f,avx512bw,pclmul"))) bool scan_rows_avx512(
    std::string_view body, std::string_view needle, std::size_t& open, std::size_t& close,
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
#endif

// A must_contain walk that reads only the rows holding a mark: the rows' bounds come from
// scan_rows, the top-level members from simdjson over the page with its data array emptied,
// and each marked row from simdjson over that row alone. Finds the marks (ws.marks) either
// way. False when the page is not plain, or without the vector instructions for the scan:
// nothing has been handed over then, and the marks are whole for the thorough walk.
bool walk_marked_rows(simdjson::padded_string_view view, const WalkOptions& options,
                      const RowVisitor& on_row, Workspace& ws, WalkResult& result) {
    const std::string_view body(view.data(), view.length());
#if defined(__x86_64__)
    std::size_t open = 0, close = 0;
    const int simd = simd_level();
    if (simd == 2) {
        // The marks come out of the scan's own pass, whole only if it reaches the page's end.
        if (!scan_rows_avx512(body, lower_ascii(options.must_contain), open, close, ws)) {
            find_marks(body, options.must_contain, ws);
            return false;
        }
    } else {
        find_marks(body, options.must_contain, ws);
        if (simd == 0) return false;
        const bool plain = ws.any_backslash ? scan_rows<true>(body, open, close, ws.rows)
                                            : scan_rows<false>(body, open, close, ws.rows);
        if (!plain) return false;
    }

    ws.reduced.assign(body.substr(0, open + 1));
    ws.reduced.append(body.substr(close));
    ws.reduced.reserve(ws.reduced.size() + simdjson::SIMDJSON_PADDING);
    WalkResult top;
    walk_document(simdjson::padded_string_view(ws.reduced), {}, [](const Row&) { return true; },
                  ws, top);
    // Another member that simdjson takes for "data" (its name escaped): the thorough way.
    if (top.rows != 0) return false;
    result.pagination = top.pagination;
    if (top.problem != WalkProblem::none) {
        result.problem = top.problem;
        return true;
    }

    ws.fields.assign(options.fields.size(), RowField{});
    std::size_t next_mark = 0;
    for (const RowSpan& span : ws.rows) {
        const std::size_t index = result.rows++;
        while (next_mark < ws.marks.size() && ws.marks[next_mark] < span.begin) ++next_mark;
        if (next_mark == ws.marks.size() || ws.marks[next_mark] >= span.end) continue;
        const std::string_view json = body.substr(span.begin, span.end - span.begin);
        if (!options.fields.empty()) {
            // The row alone, in place: the rest of the page serves as simdjson's padding.
            simdjson::ondemand::document doc;
            simdjson::ondemand::object row;
            const simdjson::padded_string_view row_view(json.data(), json.size(),
                                                        view.capacity() - span.begin);
            if (ws.parser.iterate(row_view).get(doc) || doc.get_object().get(row) ||
                !read_fields(row, options.fields, ws)) {
                result.problem = WalkProblem::bad_row;
                return true;
            }
        }
        if (!on_row(Row{json, ws.fields, index})) {
            result.stopped = true;
            return true;
        }
    }
    return true;
#else
    (void)on_row, (void)result;
    find_marks(body, options.must_contain, ws);
    return false;
#endif
}

}  // namespace

WalkResult walk_rows(const std::string& body, const WalkOptions& options,
                     const RowVisitor& on_row) {
    WalkResult result;
    Lease ws;
    // Gateway bodies come with spare capacity for simdjson's padding; copy only if not.
    std::optional<simdjson::padded_string> copy;
    simdjson::padded_string_view view(body.data(), body.size(), body.capacity());
    if (view.padding() < simdjson::SIMDJSON_PADDING) {
        copy.emplace(body);
        view = simdjson::padded_string_view(*copy);
    }
    if (!options.must_contain.empty() && walk_marked_rows(view, options, on_row, *ws, result))
        return result;
    walk_document(view, options, on_row, *ws, result);
    return result;
}

void set_max_simd(int level) { max_simd.store(level, std::memory_order_relaxed); }

std::string_view describe(WalkProblem problem) {
    switch (problem) {
        case WalkProblem::none: return "";
        case WalkProblem::not_json: return "a body that is not a valid JSON object";
        case WalkProblem::no_data: return "JSON without a `data` array";
        case WalkProblem::bad_row: return "a `data` array whose rows are not all valid objects";
        case WalkProblem::bad_pagination: return "a `pagination` object that is not valid";
    }
    return "";
}

}  // namespace agency::gateway
