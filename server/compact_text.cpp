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
// keys would not read as a dotted name are their JSON on one line.
#include <simdjson.h>

#include <optional>
#include <string>
#include <vector>

#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

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
    if (first == ' ' || last == ' ' || first == '"' || first == '{' || first == '[') return true;
    return looks_like_number(s);
}

void append_hex_escape(std::string& out, unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
}

// A JSON string literal (quotes included); `|` is escaped too when `in_cell`.
void append_quoted(std::string& out, std::string_view s, bool in_cell) {
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            case '|':
                if (in_cell) out += '\\';
                out += '|';
                break;
            default:
                if (c < 0x20) {
                    append_hex_escape(out, c);
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
}

void append_cell_string(std::string& out, std::string_view s) {
    if (needs_quotes(s)) return append_quoted(out, s, true);
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
            case '\\': out += "\\\\"; break;
            case '|': out += "\\|"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20) {
                    append_hex_escape(out, c);
                } else {
                    out += ch;
                }
        }
    }
}

// Raw JSON in a cell: only `|` needs escaping (JSON has no raw line breaks).
void append_cell_json(std::string& out, std::string_view raw) {
    for (const char ch : raw) {
        if (ch == '|') out += '\\';
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
    return false;
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
        for (; plain && *key != '"'; ++key) {
            const auto c = static_cast<unsigned char>(*key);
            if (c <= ' ' || c == '\\' || c == ':' || c == '.' || c == '|' || c == '(') plain = false;
        }
    }
    obj.reset();
    return plain;
}

// The two passes over the document: the first finds each table's columns, the second writes.
// Both walk the same members in the same order, so the n-th table of one is the n-th of the
// other.
class Renderer {
public:
    explicit Renderer(std::string& out) : out_(out) {}

    // Throws simdjson_error on anything that is not a JSON object.
    void run(od::parser& parser, simdjson::padded_string_view text) {
        od::document doc = parser.iterate(text);
        od::object top = doc.get_object();
        // An empty object or odd top-level names: the JSON says it better.
        if (!plain_keys(top) || top.is_empty().value())
            throw simdjson::simdjson_error(simdjson::INCORRECT_TYPE);
        writing_ = false;
        object(top, "", 0);
        doc.rewind();
        top = doc.get_object();
        writing_ = true;
        table_ = 0;
        object(top, "", 0);
        if (!out_.empty() && out_.back() == '\n') out_.pop_back();
    }

private:
    std::string& out_;
    bool writing_ = false;
    std::size_t table_ = 0;                          // tables seen so far in this pass
    std::vector<std::vector<std::string>> columns_;  // per table, from the first pass
    std::vector<std::string> cells_;                 // the row being written, per column

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
                if (writing_) {
                    start_line(name);
                    append_line_string(out_, value.get_string().value());
                    out_ += '\n';
                }
                return;
            default:
                if (writing_) line_json(name, trimmed(value.raw_json_token()));
                return;
        }
    }

    void start_line(const std::string& name) {
        out_ += name;
        out_ += ": ";
    }
    void line_json(const std::string& name, std::string_view raw) {
        if (!writing_) return;
        start_line(name);
        out_ += trimmed(raw);
        out_ += '\n';
    }

    // An array of objects is a table; anything else is its JSON.
    void array(od::array arr, const std::string& name) {
        bool all_objects = true;
        std::size_t count = 0;
        for (auto item : arr) {
            ++count;
            if (item.type().value() != od::json_type::object) all_objects = false;
        }
        arr.reset();
        if (count == 0 || !all_objects) return line_json(name, arr.raw_json().value());
        const std::size_t index = table_++;
        if (!writing_) {
            columns_.emplace_back();
            return collect_columns(arr, columns_.back());
        }
        write_table(arr, name, count, columns_.at(index));
    }

    static void collect_columns(od::array arr, std::vector<std::string>& columns) {
        for (auto item : arr) {
            for (auto field : item.get_object()) {
                const std::string_view key = field.unescaped_key().value();
                bool known = false;
                for (const auto& c : columns) known = known || c == key;
                if (!known) columns.emplace_back(key);
            }
        }
    }

    static std::size_t column_of(const std::vector<std::string>& columns, std::string_view key,
                                 std::size_t hint) {
        if (hint < columns.size() && columns[hint] == key) return hint;
        for (std::size_t i = 0; i < columns.size(); ++i)
            if (columns[i] == key) return i;
        return columns.size();
    }

    void write_table(od::array arr, const std::string& name, std::size_t count,
                     const std::vector<std::string>& columns) {
        out_ += name;
        out_ += " (";
        out_ += std::to_string(count);
        out_ += "):\n";
        for (std::size_t i = 0; i < columns.size(); ++i) {
            if (i) out_ += " | ";
            append_cell_string(out_, columns[i]);
        }
        out_ += '\n';
        cells_.resize(columns.size());
        for (auto item : arr) {
            for (auto& cell : cells_) cell.clear();
            std::size_t next = 0;
            for (auto field : item.get_object()) {
                const std::size_t at = column_of(columns, field.unescaped_key().value(), next);
                next = at + 1;
                cell(field.value(), cells_.at(at));
            }
            for (std::size_t i = 0; i < cells_.size(); ++i) {
                if (i) out_ += " | ";
                out_ += cells_[i];
            }
            out_ += '\n';
        }
    }

    static void cell(od::value value, std::string& into) {
        switch (value.type().value()) {
            case od::json_type::string: return append_cell_string(into, value.get_string().value());
            case od::json_type::object: {
                od::object obj = value.get_object();
                return append_cell_json(into, obj.raw_json().value());
            }
            case od::json_type::array: {
                od::array arr = value.get_array();
                return append_cell_json(into, arr.raw_json().value());
            }
            default: into += trimmed(value.raw_json_token()); return;
        }
    }
};

}  // namespace

std::optional<std::string> compact_text(std::string& json_text) {
    // On Demand reads a few bytes past the end: the padding is room, never a copy of the text.
    json_text.reserve(json_text.size() + simdjson::SIMDJSON_PADDING);
    thread_local od::parser parser;
    std::string out;
    out.reserve(json_text.size() * 2 / 3);
    try {
        Renderer(out).run(parser, simdjson::padded_string_view(json_text.data(), json_text.size(),
                                                               json_text.capacity()));
    } catch (const simdjson::simdjson_error&) {
        return std::nullopt;
    }
    return out;
}

}  // namespace agency::mcp
