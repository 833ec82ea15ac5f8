// The one walker over a gateway read's answer ({"data":[rows...],"pagination":{...}}): simdjson
// on-demand, no DOM, one pass, each row handed over as the raw JSON text the page holds so that
// list answers splice it instead of re-serializing. Parsers come from a small shared pool, so
// memory does not grow with the number of threads walking pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace agency::gateway {

struct Pagination {
    bool present = false;
    std::int64_t total = 0;
    std::int64_t limit = 0;
    std::int64_t offset = 0;
    bool has_more = false;
};

// One top-level field of a row, as the page holds it.
struct RowField {
    std::string_view raw;   // its JSON text (any type); empty when the row lacks the field
    std::string_view text;  // strings only: the unescaped value
    bool is_string = false;
    bool present() const { return !raw.empty(); }
};

// A row as a walk hands it over; the views live until the visitor returns.
struct Row {
    std::string_view json;             // the row object's raw text
    std::span<const RowField> fields;  // WalkOptions::fields, in that order
    std::size_t index = 0;             // its position in the page's data array
    std::string_view selected;         // WalkOptions::select: the row rewritten; else empty
    // WalkOptions::select: members past kMaxSelectedMembers, left out of `selected` (the
    // caller's answer says so); 0 for any row of a sane width.
    std::size_t members_left_out = 0;
};

// How deep a row may nest: the row object is level 1, so a page holding such rows nests
// kMaxRowDepth + 2 (its object, the data array). A deeper page is refused whole
// (WalkProblem::too_deep): clients' JSON parsers overflow on what a gateway may nest.
inline constexpr int kMaxRowDepth = 64;
inline constexpr int kMaxPageDepth = kMaxRowDepth + 2;

// A row rewritten for WalkOptions::select keeps at most this many members (its first ones);
// the rest are read past without being held (Row::members_left_out counts them).
inline constexpr std::size_t kMaxSelectedMembers = 10'000;

// Which members of each row a walk writes into Row::selected, in the row's own order and with
// their raw text: the rows of an answer without the heavy or unwanted members, built in the
// same pass that reads the row (no DOM). Names are plain ASCII.
struct RowSelection {
    std::span<const std::string_view> keep{};  // empty: every member not dropped
    std::span<const std::string_view> drop{};
    // {from, to}: a member `from` is written as `to`, unless the row has a `to` of its own.
    std::span<const std::pair<std::string_view, std::string_view>> rename{};
};

// Returns false to stop the walk.
using RowVisitor = std::function<bool(const Row& row)>;

struct WalkOptions {
    std::span<const std::string_view> fields{};  // top-level fields read for each row (ASCII names)
    const RowSelection* select = nullptr;         // set: each row's Row::selected
    // Rows whose text cannot hold this value (ASCII case-insensitively, and with no escape
    // anywhere in the row) are passed over without being read or handed to the visitor: the
    // cheap rejection behind scans that keep the rows whose field equals one value. Such a
    // walk finds the rows from the page's brackets and parses only the candidates, so a row
    // passed over is not validated inside; a page whose outline is not plain is walked the
    // thorough way and its problem reported as without the option.
    std::string_view must_contain{};
    // The widest vector instructions the must_contain scan may use (0: none, 1: AVX2,
    // 2: AVX-512), capped by what the CPU has. Every level yields the same rows; a lower one
    // lets a test cover each scan on one machine.
    int max_simd = 2;
};

enum class WalkProblem {
    none,
    not_json,
    no_data,
    bad_row,
    bad_pagination,
    // issue 30: a hostile page
    too_deep,       // nested past kMaxPageDepth anywhere
    repeated_name,  // a top-level member named twice (after unescaping): RFC 8259 leaves it
                    // to the reader, and two readers may see different rows
};

struct WalkResult {
    std::size_t rows = 0;  // rows passed, including any passed over and the one that stopped it
    bool stopped = false;  // the visitor returned false
    Pagination pagination;
    WalkProblem problem = WalkProblem::none;
};

// Walks `body` (which needs simdjson::SIMDJSON_PADDING bytes of spare capacity to avoid a
// copy). Reports a malformed body in `problem` (never throws for it, so the caller can name
// the read); exceptions from the visitor pass through.
WalkResult walk_rows(const std::string& body, const WalkOptions& options,
                     const RowVisitor& on_row);

std::string_view describe(WalkProblem problem);

}  // namespace agency::gateway
