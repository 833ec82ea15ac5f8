// A gateway page through the page walker, checked against a full parse (differential).
// Input: one control byte (the vector level the walk may use, whether the page gets spare
// capacity for simdjson's padding), a needle line for the must_contain walk, then the page.
// The walker's answer is compared with simdjson's DOM parser over the same page:
//  - a page the DOM parser accepts: the walk reports the problem the DOM says it has (none,
//    no_data, bad_row, bad_pagination, repeated_name for a top-level name met twice after
//    unescaping, too_deep past kMaxPageDepth with no row handed over) and hands over exactly
//    the rows of the "data" array up to that point, each row's text and fields equal to the
//    DOM's;
//  - the must_contain walk hands over every one of the full walk's rows whose text holds the
//    needle (ASCII case-insensitively) or a backslash, alike, and no row where the needle does
//    not start, with the same count and pagination;
//  - the must_contain walk on any page hands over only rows that can hold the needle;
//  - a walk with a RowSelection rewrites each row to a JSON object equal to the DOM's row with
//    the selection applied;
//  - each row cut to a byte budget (gateway/row_cut.hpp; the budget from the control byte's
//    upper bits) is a JSON object within it, holding the row's members in order, each whole or
//    a string shortened to end in "…";
//  - the member that dates a row (tools/kit/data_age.hpp, what dates an audit report) is one of the
//    row's string members, its value starting with a date, and no other dating member is newer.
// A malformed page (one the DOM parser refuses) is not compared further: simdjson's on-demand
// walk does not validate what it skips (a row {"a":tru} is handed over as it stands, and a row
// handed over before the walk finds the page broken need not be an object's text; callers
// drop the read when `problem` is set), and must_contain passes over rows unread by design.
// Any mismatch aborts.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <simdjson.h>

#include "gateway/page_walk.hpp"
#include "gateway/row_cut.hpp"
#include "tools/kit/data_age.hpp"

namespace {

using agency::gateway::Pagination;
using agency::gateway::Row;
using agency::gateway::WalkOptions;
using agency::gateway::WalkProblem;
using agency::gateway::WalkResult;

struct Seen {
    std::string json;
    std::size_t index;
    struct Field {
        bool present, is_string;
        std::string raw, text;
    };
    std::vector<Field> fields;
};

constexpr std::string_view kFields[] = {"id", "keyword", "n", "data"};

[[noreturn]] void fail(const char* what, std::string_view page) {
    std::fprintf(stderr, "page walk mismatch: %s\npage (%zu bytes): %.*s\n", what, page.size(),
                 static_cast<int>(std::min<std::size_t>(page.size(), 4000)), page.data());
    std::abort();
}

WalkResult walk(const std::string& body, const WalkOptions& options, std::vector<Seen>& seen) {
    return agency::gateway::walk_rows(body, options, [&](const Row& row) {
        Seen s{std::string(row.json), row.index, {}};
        for (const auto& f : row.fields)
            s.fields.push_back({f.present(), f.is_string, std::string(f.raw), std::string(f.text)});
        seen.push_back(std::move(s));
        return true;
    });
}

// simdjson's DOM serialization of a value, for comparing texts that differ only in spacing.
std::string canonical(simdjson::dom::element e) { return simdjson::to_string(e); }

std::optional<std::string> canonical_text(std::string_view text) {
    static thread_local simdjson::dom::parser parser;
    simdjson::dom::element e;
    if (parser.parse(simdjson::padded_string(text)).get(e)) return std::nullopt;
    return canonical(e);
}

// How deep a value nests (a scalar is 0); the DOM parser stops at 1024.
int depth_of(simdjson::dom::element e) {
    int deepest = 0;
    simdjson::dom::object object;
    simdjson::dom::array array;
    if (!e.get_object().get(object)) {
        for (auto field : object) deepest = std::max(deepest, depth_of(field.value));
        return deepest + 1;
    }
    if (!e.get_array().get(array)) {
        for (auto item : array) deepest = std::max(deepest, depth_of(item));
        return deepest + 1;
    }
    return 0;
}

// What read_int accepts: an integer that fits int64, or a double within +-9.2e18.
bool valid_int(simdjson::dom::element e, std::int64_t& out) {
    if (e.get_int64().get(out) == simdjson::SUCCESS) return true;
    double d = 0;
    if (e.get_double().get(d)) return false;
    if (!(d >= -9.2e18 && d <= 9.2e18)) return false;
    out = static_cast<std::int64_t>(d);
    return true;
}

bool read_pagination(simdjson::dom::element e, Pagination& out) {
    simdjson::dom::object object;
    if (e.get_object().get(object)) return false;
    out.present = true;
    for (auto [key, value] : object) {
        if (key == "total" && !valid_int(value, out.total)) return false;
        if (key == "limit" && !valid_int(value, out.limit)) return false;
        if (key == "offset" && !valid_int(value, out.offset)) return false;
        if (key == "has_more" && value.get_bool().get(out.has_more)) return false;
    }
    return true;
}

struct Expected {
    WalkProblem problem = WalkProblem::none;
    Pagination pagination;
    std::vector<simdjson::dom::element> rows;
};

// The walker's contract, computed on the DOM: members in order, pagination read wherever it
// stands, "data" walked, and a name met a second time (after unescaping) refused there.
Expected expect(simdjson::dom::object top) {
    Expected out;
    bool has_data = false;
    std::vector<std::string_view> names;
    for (auto [key, value] : top) {
        if (std::find(names.begin(), names.end(), key) != names.end()) {
            out.problem = WalkProblem::repeated_name;
            return out;
        }
        names.push_back(key);
        if (key == "pagination") {
            if (!read_pagination(value, out.pagination)) {
                out.problem = WalkProblem::bad_pagination;
                return out;
            }
        } else if (key == "data" && !has_data) {
            simdjson::dom::array data;
            if (value.get_array().get(data)) {
                out.problem = WalkProblem::no_data;
                return out;
            }
            has_data = true;
            for (auto row : data) {
                if (!row.is_object()) {
                    out.problem = WalkProblem::bad_row;
                    return out;
                }
                out.rows.push_back(row);
            }
        }
    }
    if (!has_data) out.problem = WalkProblem::no_data;
    return out;
}

void check_fields(const Seen& seen, simdjson::dom::object row, std::string_view page) {
    // Field names are matched as the page writes them; an escaped key would differ from the
    // DOM's unescaped one, so rows with a backslash are checked only for their row text.
    if (seen.json.find('\\') != std::string::npos) return;
    for (std::size_t i = 0; i < std::size(kFields); ++i) {
        std::optional<simdjson::dom::element> want;  // the last member of that name
        for (auto [key, value] : row)
            if (key == kFields[i]) want = value;
        const auto& got = seen.fields[i];
        if (!want) {
            if (got.present) fail("a field the row does not have was handed over", page);
            continue;
        }
        if (!got.present) fail("a field of the row was not handed over", page);
        if (got.is_string != want->is_string()) fail("a field's type differs", page);
        const auto text = canonical_text(got.raw);
        if (!text || *text != canonical(*want)) fail("a field's raw text differs", page);
        if (got.is_string) {
            std::string_view s;
            (void)want->get_string().get(s);
            if (got.text != s) fail("a string field's value differs", page);
        }
    }
}

// Whether must_contain may hand over a row of this (lower-cased) text: it holds the needle or
// a backslash, or the needle starts inside it and runs past its end (the walk marks where the
// needle starts, so a needle with a '}' may start in one row and end in the next).
bool can_hold(const std::string& text, const std::string& needle) {
    if (text.find(needle) != std::string::npos || text.find('\\') != std::string::npos) return true;
    for (std::size_t k = 1; k < needle.size() && k <= text.size(); ++k)
        if (text.compare(text.size() - k, k, needle, 0, k) == 0) return true;
    return false;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return out;
}

// A walk with a RowSelection (drop "n", "id" renamed "key", then only some members kept):
// each row's rewritten text is a JSON object, and on a valid page it equals the DOM's row with
// those members dropped, renamed and kept, in the row's order.
void check_selection(const std::string& page, bool valid, simdjson::dom::element doc) {
    static constexpr std::string_view kDrop[] = {"n"};
    static constexpr std::pair<std::string_view, std::string_view> kRename[] = {{"id", "key"}};
    static constexpr std::string_view kKeep[] = {"key", "keyword", "data", "x"};
    for (const bool keeping : {false, true}) {
        const agency::gateway::RowSelection select{
            .keep = keeping ? std::span<const std::string_view>(kKeep)
                            : std::span<const std::string_view>(),
            .drop = kDrop,
            .rename = kRename};
        std::vector<std::string> rows;
        std::vector<bool> escaped;
        const WalkResult result = agency::gateway::walk_rows(
            page, {.select = &select}, [&](const Row& row) {
                rows.emplace_back(row.selected);
                escaped.push_back(row.json.find('\\') != std::string_view::npos);
                return true;
            });
        if (!valid || result.problem != WalkProblem::none) continue;
        simdjson::dom::object top;
        if (doc.get_object().get(top)) continue;
        const Expected want = expect(top);
        if (rows.size() != want.rows.size()) fail("select: the number of rows differs", page);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto got = canonical_text(rows[i]);
            if (!got) fail("select: a rewritten row is not JSON", page);
            if (escaped[i]) continue;  // keys are matched as the page writes them
            const simdjson::dom::object row = want.rows[i].get_object().value_unsafe();
            bool has_key = false;
            for (auto [key, value] : row) has_key |= key == "key";
            std::string text = "{";
            for (auto [key, value] : row) {
                std::string name(key);
                if (name == "id" && !has_key) name = "key";
                if (key == "n") continue;
                if (keeping && std::find(std::begin(kKeep), std::end(kKeep), name) ==
                                   std::end(kKeep) &&
                    std::find(std::begin(kKeep), std::end(kKeep), key) == std::end(kKeep))
                    continue;
                if (text.size() > 1) text += ',';
                text += '"' + name + "\":" + canonical(value);
            }
            text += '}';
            const auto expected = canonical_text(text);
            if (!expected || *got != *expected) fail("select: a rewritten row differs", page);
        }
    }
}

// A row cut to a byte budget (gateway/row_cut.hpp), as an answer cuts a row bigger than it:
// valid JSON within the budget, an object whose members are the row's own in its order, each
// whole or (a string) a prefix of it ending in "…".
void check_cut(const std::string& row, std::size_t room, std::string_view page) {
    std::string out;
    const agency::gateway::RowCut cut = agency::gateway::cut_row(row, room, out);
    if (out.size() > std::max<std::size_t>(room, 2)) fail("cut: the row exceeds its budget", page);
    static thread_local simdjson::dom::parser parser;
    simdjson::dom::element got, whole;
    if (parser.parse(simdjson::padded_string(out)).get(got) || !got.is_object())
        fail("cut: the row is not a JSON object", page);
    const std::string kept = canonical(got);
    simdjson::dom::parser other;
    if (other.parse(simdjson::padded_string(row)).get(whole) || !whole.is_object()) return;
    // Each member kept is the next one of the row with that name and that value (whole, or a
    // string's prefix and "…"); a member left out is skipped.
    struct Member {
        std::string key, text;
        std::optional<std::string> string;
    };
    std::vector<Member> members;
    const simdjson::dom::object whole_object = whole.get_object().value_unsafe();
    for (auto [key, value] : whole_object) {
        Member m{std::string(key), canonical(value), std::nullopt};
        std::string_view text;
        if (value.get_string().get(text) == simdjson::SUCCESS) m.string = std::string(text);
        members.push_back(std::move(m));
    }
    const std::string_view ellipsis = "\xE2\x80\xA6";
    std::size_t at = 0;
    const simdjson::dom::object got_object = got.get_object().value_unsafe();
    for (auto [key, value] : got_object) {
        const std::string text = canonical(value);
        std::string_view shown;
        const bool shortened = value.get_string().get(shown) == simdjson::SUCCESS &&
                               shown.ends_with(ellipsis);
        shown.remove_suffix(shortened ? ellipsis.size() : shown.size());
        while (at < members.size() &&
               !(members[at].key == key &&
                 (members[at].text == text ||
                  (shortened && members[at].string && members[at].string->starts_with(shown)))))
            ++at;
        if (at == members.size()) fail("cut: a member not the row's, changed, or out of order", page);
        ++at;
    }
    if (!cut.cut() && kept != canonical(whole)) fail("cut: an uncut row changed", page);
}

// The dating member of a row: a string member of it that starts with a date, and the newest.
void check_dated(const std::string& row, std::string_view page) {
    const nlohmann::json record = nlohmann::json::parse(row, nullptr, false);
    const auto dated = agency::tools::newest_dated_member(record);
    if (!dated) return;
    const auto it = record.find(dated->field);
    if (it == record.end() || !it->is_string() || it->get<std::string>() != dated->value)
        fail("dated: the member is not the row's", page);
    if (!agency::tools::day_of(dated->value)) fail("dated: the value holds no date", page);
    for (const auto& [name, value] : record.items()) {
        if (!value.is_string()) continue;
        nlohmann::json one = nlohmann::json::object();
        one[name] = value;
        const auto other = agency::tools::newest_dated_member(one);
        if (other && other->at > dated->at) fail("dated: a newer dating member was passed over", page);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::uint8_t control = data[0];
    std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto newline = rest.find('\n');
    if (newline == std::string_view::npos || newline > 16) return 0;
    const std::string needle(rest.substr(0, newline));
    std::string page(rest.substr(newline + 1));
    if (control & 4) {
        page.shrink_to_fit();  // no spare capacity: the walker copies the page
    } else {
        page.reserve(page.size() + simdjson::SIMDJSON_PADDING);
    }

    std::vector<Seen> all;
    const WalkResult full = walk(page, {.fields = kFields}, all);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const bool valid = !parser.parse(simdjson::padded_string(page)).get(doc);
    if (valid && depth_of(doc) > agency::gateway::kMaxPageDepth) {
        // Refused before any row: rows may nest kMaxRowDepth levels, the page two more.
        if (full.problem != WalkProblem::too_deep) fail("a page too deep was walked", page);
        if (!all.empty()) fail("a page too deep handed over rows", page);
    } else if (valid) {
        simdjson::dom::object top;
        if (doc.get_object().get(top)) {
            if (full.problem != WalkProblem::not_json) fail("a non-object page was walked", page);
        } else {
            const Expected want = expect(top);
            if (full.problem != want.problem) fail("the problem reported differs", page);
            if (all.size() != want.rows.size()) fail("the number of rows differs", page);
            if (full.rows != want.rows.size()) fail("the row count differs", page);
            for (std::size_t i = 0; i < all.size(); ++i) {
                if (all[i].index != i) fail("a row's index differs", page);
                for (const auto& f : all[i].fields)
                    if (f.present && all[i].json.find(f.raw) == std::string::npos)
                        fail("a field's text is not inside its row", page);
                const auto text = canonical_text(all[i].json);
                if (!text || *text != canonical(want.rows[i])) fail("a row's text differs", page);
                check_cut(all[i].json, (control >> 3) * 8 + needle.size(), page);
                check_fields(all[i], want.rows[i].get_object().value_unsafe(), page);
                check_dated(all[i].json, page);
            }
            if (want.problem == WalkProblem::none) {
                if (full.pagination.present != want.pagination.present ||
                    full.pagination.total != want.pagination.total ||
                    full.pagination.limit != want.pagination.limit ||
                    full.pagination.offset != want.pagination.offset ||
                    full.pagination.has_more != want.pagination.has_more)
                    fail("the pagination differs", page);
            }
        }
    }

    check_selection(page, valid, doc);

    // The must_contain walk: exactly the full walk's rows that can hold the needle.
    if (needle.empty()) return 0;
    std::vector<Seen> some;
    const WalkResult filtered = walk(page, {.fields = kFields, .must_contain = needle, .max_simd = control % 3}, some);
    const std::string low = lower(needle);
    // Any page: each row handed over can hold the needle, in the page's order.
    for (std::size_t i = 0; i < some.size(); ++i) {
        if (!can_hold(lower(some[i].json), low))
            fail("must_contain: a row without the needle was handed over", page);
        if (i > 0 && some[i].index <= some[i - 1].index)
            fail("must_contain: rows out of order", page);
    }
    // A page the DOM parser takes: exactly the full walk's rows that can hold the needle. (A
    // malformed page may differ: rows passed over are not validated, by design. A page whose
    // top-level names repeat is refused by both walks alike: docs/security.md, fuzz-replay.)
    if (!valid) return 0;
    std::vector<const Seen*> expected;  // the rows that must be handed over
    std::size_t may = 0;                // and those that may be
    for (const auto& row : all) {
        const std::string text = lower(row.json);
        if (text.find(low) != std::string::npos || text.find('\\') != std::string::npos)
            expected.push_back(&row);
        if (can_hold(text, low)) ++may;
    }
    if (filtered.problem != full.problem) fail("must_contain: the problem differs", page);
    if (full.problem == WalkProblem::none) {
        if (filtered.rows != full.rows) fail("must_contain: the row count differs", page);
        if (some.size() < expected.size()) fail("must_contain: a row with the needle was missed", page);
        if (some.size() > may) fail("must_contain: other rows were read", page);
        if (filtered.pagination.present != full.pagination.present ||
            filtered.pagination.total != full.pagination.total)
            fail("must_contain: the pagination differs", page);
    } else if (some.size() > may) {
        fail("must_contain: more rows than the full walk", page);
    }
    for (const auto& row : some) {
        // The full walk's row of that index, alike (a malformed page may stop earlier).
        if (row.index >= all.size()) fail("must_contain: a row the full walk did not read", page);
        const Seen& same = all[row.index];
        if (row.json != same.json) fail("must_contain: a row's text differs", page);
        for (std::size_t f = 0; f < row.fields.size(); ++f)
            if (row.fields[f].raw != same.fields[f].raw || row.fields[f].text != same.fields[f].text)
                fail("must_contain: a row's fields differ", page);
    }
    // And on a sound page no row that holds the needle is passed over.
    for (std::size_t i = 0, j = 0; full.problem == WalkProblem::none && i < expected.size(); ++i) {
        while (j < some.size() && some[j].index < expected[i]->index) ++j;
        if (j == some.size() || some[j].index != expected[i]->index)
            fail("must_contain: a row with the needle was passed over", page);
    }
    return 0;
}
