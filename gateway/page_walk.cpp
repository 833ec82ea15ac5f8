// The page walker (page_walk.hpp): one pass of simdjson On Demand over a gateway page, with
// the depth check before it, the row fields and the selection written as the page holds them,
// and the reasons a page is refused. The file is long because the walk is one idea whose steps
// share the pooled workspace and its marks; split, each part would need the others' internals.
#include "gateway/page_walk.hpp"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <simdjson.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gateway/page_walk_internal.hpp"
#include "gateway/raw_json.hpp"

namespace agency::gateway {

namespace {

using namespace page_detail;

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
        ws_->trim();
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

using raw_json::trim_end;

// The widest vector instructions a walk may use: what the CPU has (detected once), capped by
// WalkOptions::max_simd.
int simd_level(const WalkOptions& options) {
#if defined(__x86_64__)
    static const int detected = [] {
        if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("pclmul")) return 0;
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? 2 : 1;
    }();
    return std::min(detected, options.max_simd);
#else
    (void)options;
    return 0;
#endif
}

}  // namespace

bool page_detail::within_depth(std::string_view body, int max_depth, int simd) {
#if defined(__x86_64__)
    if (simd >= 1) return within_depth_avx2(body, max_depth);
#endif
    (void)simd;
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max_depth) return false;
        } else if ((c == '}' || c == ']') && depth > 0) {
            --depth;
        }
    }
    return true;
}

namespace {

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
void find_marks(std::string_view body, const WalkOptions& options, Workspace& ws) {
    const std::string_view value = options.must_contain;
    ws.marks.clear();
    ws.any_backslash = false;
    const std::string needle = lower_ascii(value);
    std::size_t i = 0;
#if defined(__x86_64__)
    // Without AVX2 (rare on x86-64 servers now) the byte loop below does it all, slower.
    if (simd_level(options) >= 1) i = find_blocks_avx2(body, needle, ws.marks, ws.any_backslash);
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
    out = RowField{};
    simdjson::ondemand::json_type type;
    if (auto e = value.type().get(type)) return e;
    if (type != simdjson::ondemand::json_type::string)
        return raw_json::raw_value(value, type, out.raw);
    out.raw = trim_end(value.raw_json_token());
    out.is_string = true;
    return value.get_string().get(out.text);
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
        if (key == "total")
            e = read_int(field.value(), out.total);
        else if (key == "limit")
            e = read_int(field.value(), out.limit);
        else if (key == "offset")
            e = read_int(field.value(), out.offset);
        else if (key == "has_more")
            e = field.value().get_bool().get(out.has_more);
        if (e) return e;
    }
    return simdjson::SUCCESS;
}

// A key's text as the page holds it, escapes and all, without its quotes. The closing quote
// is one of the page's structural characters, so the scan ends inside the page.
std::string_view raw_key_text(simdjson::ondemand::raw_json_string key) {
    const char* begin = key.raw();
    const char* p = begin;
    while (*p != '"') p += *p == '\\' ? 2 : 1;
    return {begin, static_cast<std::size_t>(p - begin)};
}

bool named(std::string_view key, std::span<const std::string_view> names) {
    return std::find(names.begin(), names.end(), key) != names.end();
}

// ws.members written as one object into ws.selected, as `select` says.
void write_selected(const RowSelection& select, Workspace& ws) {
    std::string& out = ws.selected;
    out.assign("{");
    for (const auto& [key, raw] : ws.members) {
        std::string_view name = key;
        for (const auto& rename : select.rename) {
            if (key != rename.first) continue;
            const std::string_view to = rename.second;
            const bool has_own = std::any_of(ws.members.begin(), ws.members.end(),
                                             [&](const auto& m) { return m.first == to; });
            if (!has_own) name = to;
            break;
        }
        if (!select.keep.empty() && !named(name, select.keep) && !named(key, select.keep))
            continue;
        if (named(key, select.drop)) continue;
        if (out.size() > 1) out.push_back(',');
        out.push_back('"');
        out.append(name);
        out.append("\":");
        out.append(raw);
    }
    out.push_back('}');
}

// The wanted fields of one row into ws.fields, and with `select` the row rewritten into
// ws.selected; false when the row is not valid.
bool read_fields(simdjson::ondemand::object& row, const WalkOptions& options, Workspace& ws) {
    const std::span<const std::string_view> names = options.fields;
    std::fill(ws.fields.begin(), ws.fields.end(), RowField{});
    ws.members.clear();
    ws.members_left_out = 0;
    for (auto field : row) {
        // Keys are compared as they stand in the page (names are plain ASCII), not unescaped
        // first: this loop runs for every field of every row read.
        simdjson::ondemand::raw_json_string key;
        if (field.key().get(key)) return false;
        std::size_t wanted = names.size();
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (key.unsafe_is_equal(names[i])) {
                wanted = i;
                break;
            }
        }
        if (!options.select) {
            if (wanted < names.size() && read_field(field.value(), ws.fields[wanted]))
                return false;
            continue;
        }
        std::string_view raw;
        simdjson::ondemand::json_type type;
        if (wanted < names.size()) {
            if (read_field(field.value(), ws.fields[wanted])) return false;
            raw = ws.fields[wanted].raw;
        } else if (raw_json::raw_value(field.value(), type, raw)) {
            return false;
        }
        // A row of a million members is read past, not held: the answer says what it lacks.
        if (ws.members.size() < kMaxSelectedMembers)
            ws.members.emplace_back(raw_key_text(key), raw);
        else
            ++ws.members_left_out;
    }
    if (options.select) write_selected(*options.select, ws);
    return true;
}

std::string_view selected_of(const WalkOptions& options, const Workspace& ws) {
    return options.select ? std::string_view(ws.selected) : std::string_view();
}

std::size_t left_out(const WalkOptions& options, const Workspace& ws) {
    return options.select ? ws.members_left_out : 0;
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
        if ((!names.empty() || options.select) &&
            (row.reset().error() || !read_fields(row, options, ws))) {
            result.problem = WalkProblem::bad_row;
            return;
        }
        if (!on_row(Row{raw, ws.fields, index, selected_of(options, ws), left_out(options, ws)})) {
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
    ws.top_names.clear();
    for (auto field : top) {
        std::string_view key;
        if (field.unescaped_key().get(key)) {
            result.problem = WalkProblem::not_json;
            return;
        }
        // The unescaped names stay in the parser's string buffer while the page is walked.
        if (!ws.top_names.insert(key).second) {
            result.problem = WalkProblem::repeated_name;
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
    const int simd = simd_level(options);
    if (simd == 2) {
        // The marks come out of the scan's own pass, whole only if it reaches the page's end.
        if (!scan_rows_avx512(body, lower_ascii(options.must_contain), open, close, ws)) {
            find_marks(body, options, ws);
            return false;
        }
    } else {
        find_marks(body, options, ws);
        if (simd == 0) return false;
        const bool plain = ws.any_backslash ? scan_rows<true>(body, open, close, ws.rows)
                                            : scan_rows<false>(body, open, close, ws.rows);
        if (!plain) return false;
    }

    ws.reduced.assign(body.substr(0, open + 1));
    ws.reduced.append(body.substr(close));
    ws.reduced.reserve(ws.reduced.size() + simdjson::SIMDJSON_PADDING);
    WalkResult top;
    walk_document(
        simdjson::padded_string_view(ws.reduced), {}, [](const Row&) { return true; }, ws, top);
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
        if (!options.fields.empty() || options.select) {
            // The row alone, in place: the rest of the page serves as simdjson's padding.
            simdjson::ondemand::document doc;
            simdjson::ondemand::object row;
            const simdjson::padded_string_view row_view(json.data(), json.size(),
                                                        view.capacity() - span.begin);
            if (ws.parser.iterate(row_view).get(doc) || doc.get_object().get(row) ||
                !read_fields(row, options, ws)) {
                result.problem = WalkProblem::bad_row;
                return true;
            }
        }
        if (!on_row(Row{json, ws.fields, index, selected_of(options, ws), left_out(options, ws)})) {
            result.stopped = true;
            return true;
        }
    }
    return true;
#else
    (void)on_row, (void)result;
    find_marks(body, options, ws);
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
        return result;  // its scan found no bracket past kMaxPageDepth
    if (!within_depth(std::string_view(view.data(), view.length()), kMaxPageDepth,
                      simd_level(options))) {
        result.problem = WalkProblem::too_deep;
        return result;
    }
    walk_document(view, options, on_row, *ws, result);
    return result;
}

std::string_view describe(WalkProblem problem) {
    switch (problem) {
        case WalkProblem::none: return "";
        case WalkProblem::not_json: return "a body that is not a valid JSON object";
        case WalkProblem::no_data: return "JSON without a `data` array";
        case WalkProblem::bad_row: return "a `data` array whose rows are not all valid objects";
        case WalkProblem::bad_pagination: return "a `pagination` object that is not valid";
        case WalkProblem::too_deep: {
            static const std::string text = "JSON nested deeper than a row may nest (" +
                                            std::to_string(kMaxRowDepth) +
                                            " levels, the row depth limit)";
            return text;
        }
        case WalkProblem::repeated_name:
            return "a top-level member named twice (refused: readers may disagree on which "
                   "one counts)";
    }
    return "";
}

}  // namespace agency::gateway
