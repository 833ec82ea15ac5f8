// The compact text beside structuredContent (docs/design.md, "Text beside structuredContent"):
// every member of the structured answer, for a model that reads only `content`, at about 60%
// of the JSON's bytes. Rendered while simdjson's On Demand parser walks the tool's serialized
// answer, so no DOM of the rows is ever built.
//
//   client_id: demo-dental
//   rows (2):
//   id | keyword | position
//   kw-1 | dentist near me | 3
//   kw-2 | a \| b | 12
//   total: 1500
//   next_cursor: eyJ...
//   preview.title: Five signs
//   message: |
//     line one
//     line two
//
// An array whose items are all objects becomes a table: its name and count, a header line of
// the columns (every key, in the order first seen) and one line per item, cells separated by
// " | ". In a cell, `\`, `|` and control characters are escaped (\\, \|, \n, \t, \uXXXX); a
// nested value is its JSON. Objects are flattened to dotted names. A string that could be read
// as something else (empty, a number, true/false/null, JSON-like, spaces at either end) is
// written as a JSON string; a string of several lines outside a table is a block of lines
// indented by two spaces after `name: |`. Any other array, an empty object and an object whose
// keys would not read as a dotted name are their JSON on one line. Line and paragraph
// separators (U+0085, U+2028, U+2029) are escaped as \uXXXX wherever \n is, ids included. A
// gateway record (get_client) is written under a heading, every line indented by two spaces:
//
//   record:
//     id: demo-dental
//     name: Bright Smile Dental
#include <simdjson.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/server_impl.hpp"

namespace agency::mcp {

// A namespace of its own: in a unity build this file shares a translation unit with others
// that have helpers of the same names.
namespace compact {

namespace od = simdjson::ondemand;

// Nested objects deeper than this are written as their JSON on one line.
constexpr int kMaxFlattenDepth = 8;

// A JSON number: -?(0|[1-9]digits)(.digits)?([eE][+-]?digits)?
bool looks_like_number(std::string_view s) {
    std::size_t i = 0;
    const auto digits = [&] {
        const std::size_t from = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        return i > from;
    };
    if (i < s.size() && s[i] == '-') ++i;
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return false;
    }
    return i == s.size();
}

// Whether a string must be written quoted to be read back as that string.
bool needs_quotes(std::string_view s) {
    if (s.empty() || s == "null" || s == "true" || s == "false" || s == "|") return true;
    const char first = s.front();
    const char last = s.back();
    if (first == ' ' || last == ' ' || first == '\t' || last == '\t' || first == '"' ||
        first == '{' || first == '[')
        return true;
    return (first == '-' || (first >= '0' && first <= '9')) && looks_like_number(s);
}

// The length of the Unicode line or paragraph separator that starts at s[i] (U+0085 NEL,
// U+2028, U+2029: readers that break lines there would see a line the answer does not have),
// 0 for anything else. Written as \uXXXX wherever a \n would be escaped, ids included.
std::size_t separator_at(std::string_view s, std::size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0xC2) return i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85 ? 2 : 0;
    if (c != 0xE2 || i + 2 >= s.size() || static_cast<unsigned char>(s[i + 1]) != 0x80) return 0;
    const auto last = static_cast<unsigned char>(s[i + 2]);
    return last == 0xA8 || last == 0xA9 ? 3 : 0;
}

bool has_separator(std::string_view s) {
    for (std::size_t i = 0; i < s.size(); ++i)
        if (separator_at(s, i) != 0) return true;
    return false;
}

// The \uXXXX escape of the separator of `len` bytes at s[i].
void append_separator_escape(std::string& out, std::string_view s, std::size_t i,
                             std::size_t len) {
    out += len == 2 ? "\\u0085" : s[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
}

// The escape JSON writes for `c`, a backslash or a control byte (below 0x20).
void append_escape(std::string& out, unsigned char c) {
    switch (c) {
        case '\\': out += "\\\\"; return;
        case '\n': out += "\\n"; return;
        case '\t': out += "\\t"; return;
        case '\r': out += "\\r"; return;
        default: break;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
}

// A JSON string literal (quotes included); `|` is escaped too when `in_cell`.
void append_quoted(std::string& out, std::string_view s, bool in_cell) {
    out += '"';
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char ch = s[i];
        const auto c = static_cast<unsigned char>(ch);
        if (const std::size_t len = c >= 0xC2 ? separator_at(s, i) : 0) {
            append_separator_escape(out, s, i, len);
            i += len - 1;
        } else if (ch == '"') {
            out += "\\\"";
        } else if (ch == '\\' || c < 0x20) {
            append_escape(out, c);
        } else {
            if (ch == '|' && in_cell) out += '\\';
            out += ch;
        }
    }
    out += '"';
}

// A byte that may need an escape in a cell (0xC2 and 0xE2 may start a separator).
bool cell_special(char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || ch == '\\' || ch == '|' || c == 0xC2 || c == 0xE2;
}

// Runs of plain characters are appended whole: most cells have nothing to escape.
void append_cell_string(std::string& out, std::string_view s) {
    if (needs_quotes(s)) return append_quoted(out, s, true);
    std::size_t from = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char ch = s[i];
        if (!cell_special(ch)) continue;
        const std::size_t len = separator_at(s, i);
        const auto c = static_cast<unsigned char>(ch);
        if ((c == 0xC2 || c == 0xE2) && len == 0) continue;
        out.append(s.data() + from, i - from);
        from = i + (len == 0 ? 1 : len);
        if (len != 0) {
            append_separator_escape(out, s, i, len);
            i += len - 1;
        } else if (ch == '|')
            out += "\\|";
        else
            append_escape(out, static_cast<unsigned char>(ch));
    }
    out.append(s.data() + from, s.size() - from);
}

// Raw JSON on a line or in a cell (where `|` is escaped too): JSON has no raw line breaks, but
// a string may hold a separator as it is, written here as its \uXXXX escape (the same string).
void append_raw_json(std::string& out, std::string_view raw, bool in_cell) {
    for (std::size_t i = 0; i < raw.size(); ++i) {
        const char ch = raw[i];
        if (const std::size_t len =
                static_cast<unsigned char>(ch) >= 0xC2 ? separator_at(raw, i) : 0) {
            append_separator_escape(out, raw, i, len);
            i += len - 1;
            continue;
        }
        if (ch == '|' && in_cell) out += '\\';
        out += ch;
    }
}

std::string_view trimmed(std::string_view token) {
    while (!token.empty() && (token.back() == ' ' || token.back() == '\n' ||
                              token.back() == '\r' || token.back() == '\t'))
        token.remove_suffix(1);
    return token;
}

bool has_control(std::string_view s) {
    for (const char ch : s)
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') return true;
    return has_separator(s);
}

// A line's value outside a table: the string as it is, a block of indented lines, or (when
// it could be misread or holds other control characters) a JSON string.
void append_line_string(std::string& out, std::string_view s) {
    if (needs_quotes(s) || has_control(s)) return append_quoted(out, s, false);
    if (s.find('\n') == std::string_view::npos) {
        out += s;
        return;
    }
    out += "|\n  ";
    for (const char ch : s) {
        out += ch;
        if (ch == '\n') out += "  ";
    }
}

// Whether every key of an object can be part of a dotted name (checked on the raw keys, so
// nothing is unescaped twice); rewinds the object.
bool plain_keys(od::object& obj) {
    bool plain = true;
    for (auto field : obj) {
        const char* key = field.key().value().raw();
        if (*key == '"') plain = false;
        const char* start = key;
        for (; plain && *key != '"'; ++key) {
            const auto c = static_cast<unsigned char>(*key);
            if (c <= ' ' || c == '\\' || c == ':' || c == '.' || c == '|' || c == '(') plain = false;
        }
        if (plain && has_separator(std::string_view(start, static_cast<std::size_t>(key - start))))
            plain = false;
    }
    obj.reset();
    return plain;
}

bool plain_name(std::string_view key) {
    if (key.empty()) return false;
    for (const char ch : key) {
        const auto c = static_cast<unsigned char>(ch);
        if (c <= ' ' || c == '\\' || c == ':' || c == '.' || c == '|' || c == '(' || c == '"')
            return false;
    }
    return !has_separator(key);
}

// One pass of simdjson's On Demand parser over the answer. A table's rows are written as they
// are read, into a buffer of their own, while its columns are found (a key not seen before is
// a new column at the right; a row ends at its last present cell); its name, count and header
// are written once the array ends.
class Renderer {
public:
    explicit Renderer(std::string& out) : out_(out) {}

    // Throws simdjson_error on anything that is not a JSON object.
    void run(od::parser& parser, simdjson::padded_string_view text) {
        od::document doc = parser.iterate(text);
        od::object top = doc.get_object();
        bool any = false;
        for (auto field : top) {
            any = true;
            const std::string_view key = field.unescaped_key().value();
            std::string name;
            if (plain_name(key)) {
                name = key;
            } else {
                append_quoted(name, key, false);  // read back as a JSON string
            }
            member(field.value(), name, 0);
        }
        if (!any) throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);  // {}: the JSON
        if (!out_.empty() && out_.back() == '\n') out_.pop_back();
    }

private:
    std::string& out_;
    std::vector<std::string> columns_;   // the table being read
    // columns_ by name: a row of 100,000 members (a budget of 2 MB holds one) found each
    // column by a linear search, 10^10 comparisons before the answer went out.
    std::unordered_map<std::string, std::size_t> column_index_;
    std::string rows_;                   // its rows, written
    std::vector<std::size_t> starts_;    // where each cell of the current row starts in rows_
    std::vector<std::string> cells_;     // a row whose keys came out of column order

    void object(od::object obj, const std::string& prefix, int depth) {
        for (auto field : obj) {
            const std::string name = prefix + std::string(field.unescaped_key().value());
            member(field.value(), name, depth);
        }
    }

    void member(od::value value, const std::string& name, int depth) {
        switch (value.type().value()) {
            case od::json_type::object: {
                od::object obj = value.get_object();
                if (depth >= kMaxFlattenDepth || !plain_keys(obj) || obj.is_empty().value())
                    return line_json(name, obj.raw_json().value());  // each of them rewinds it
                return object(obj, name + ".", depth + 1);
            }
            case od::json_type::array: return array(value.get_array(), name);
            case od::json_type::string:
                start_line(name);
                append_line_string(out_, value.get_string().value());
                out_ += '\n';
                return;
            default: return line_json(name, trimmed(value.raw_json_token()));
        }
    }

    void start_line(const std::string& name) {
        out_ += name;
        out_ += ": ";
    }
    void line_json(const std::string& name, std::string_view raw) {
        start_line(name);
        append_raw_json(out_, trimmed(raw), false);
        out_ += '\n';
    }

    // An array of objects is a table; anything else is its JSON. Its text is taken first (no
    // string is unescaped by that), so an item that is not an object can still fall back to it.
    void array(od::array arr, const std::string& name) {
        const std::string_view raw = trimmed(arr.raw_json().value());
        arr.reset();
        columns_.clear();
        column_index_.clear();
        rows_.clear();
        std::size_t count = 0;
        for (auto item : arr) {
            if (item.type().value() != od::json_type::object) return line_json(name, raw);
            write_row(item.get_object());
            ++count;
        }
        if (count == 0) return line_json(name, raw);
        out_ += name;
        out_ += " (";
        out_ += std::to_string(count);
        out_ += "):\n";
        for (std::size_t i = 0; i < columns_.size(); ++i) {
            if (i) out_ += " | ";
            append_cell_string(out_, columns_[i]);
        }
        out_ += '\n';
        out_ += rows_;
    }

    std::size_t column_of(std::string_view key, std::size_t hint) {
        if (hint < columns_.size() && columns_[hint] == key) return hint;
        const auto [at, added] = column_index_.try_emplace(std::string(key), columns_.size());
        if (added) columns_.emplace_back(key);
        return at->second;
    }

    // Cells are written in place while the row's keys come in column order (skipped columns
    // empty); a key that goes back moves the row's cells to cells_, joined at the end.
    void write_row(od::object row) {
        const std::size_t row_start = rows_.size();
        starts_.clear();
        bool in_place = true;
        std::size_t next = 0;
        for (auto field : row) {
            const std::size_t at = column_of(field.unescaped_key().value(), next);
            if (in_place && at < next) {
                in_place = false;
                to_cells(row_start);
            }
            if (!in_place) {
                if (cells_.size() <= at) cells_.resize(at + 1);
                cells_[at].clear();
                cell(field.value(), cells_[at]);
                continue;
            }
            for (; next <= at; ++next) {
                if (next) rows_ += " | ";
                starts_.push_back(rows_.size());
            }
            cell(field.value(), rows_);
        }
        if (!in_place) {
            rows_.resize(row_start);
            std::size_t last = cells_.size();
            while (last > 0 && cells_[last - 1].empty()) --last;
            for (std::size_t i = 0; i < last; ++i) {
                if (i) rows_ += " | ";
                rows_ += cells_[i];
            }
        }
        rows_ += '\n';
    }

    // The current row's cells, written in place so far, as separate strings.
    void to_cells(std::size_t row_start) {
        cells_.assign(starts_.size(), std::string());
        for (std::size_t i = 0; i < starts_.size(); ++i) {
            const std::size_t end = i + 1 < starts_.size() ? starts_[i + 1] - 3 : rows_.size();
            cells_[i].assign(rows_, starts_[i], end - starts_[i]);
        }
        rows_.resize(row_start);
    }

    static void cell(od::value value, std::string& into) {
        switch (value.type().value()) {
            case od::json_type::string: return append_cell_string(into, value.get_string().value());
            case od::json_type::object: {
                od::object obj = value.get_object();
                return append_raw_json(into, obj.raw_json().value(), true);
            }
            case od::json_type::array: {
                od::array arr = value.get_array();
                return append_raw_json(into, arr.raw_json().value(), true);
            }
            default: into += trimmed(value.raw_json_token()); return;
        }
    }
};

}  // namespace compact

std::optional<std::string> compact_text(std::string& json_text, std::string_view heading) {
    // On Demand reads a few bytes past the end: the padding is room, never a copy of the text.
    json_text.reserve(json_text.size() + simdjson::SIMDJSON_PADDING);
    thread_local compact::od::parser parser;
    std::string out;
    out.reserve(json_text.size() * 2 / 3);
    try {
        compact::Renderer(out).run(parser, simdjson::padded_string_view(json_text.data(), json_text.size(),
                                                               json_text.capacity()));
    } catch (const simdjson::simdjson_error&) {
        return std::nullopt;
    }
    if (heading.empty()) return out;
    // Every line break of the text is one of its own (a value's are escaped or indented), so
    // indenting after each nests the whole text.
    std::string nested(heading);
    nested.reserve(heading.size() + out.size() * 9 / 8 + 8);
    nested += ":\n  ";
    for (const char ch : out) {
        nested += ch;
        if (ch == '\n') nested += "  ";
    }
    return nested;
}

}  // namespace agency::mcp
