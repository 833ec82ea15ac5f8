// The short text that stands beside structuredContent when the whole JSON is not repeated in
// the text block (docs/design.md, "Text beside structuredContent"): made from the answer's
// top-level members only (a row count, scalars), never from a DOM of the rows.
#include <optional>
#include <string>
#include <vector>

#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

constexpr std::size_t kMaxValueChars = 80;
constexpr std::size_t kMaxNoteChars = 600;
constexpr std::size_t kMaxSummaryChars = 600;

struct Member {
    std::string key;
    enum class Kind { scalar, array, object } kind = Kind::scalar;
    std::string text;        // scalars: the value as shown ("300", "true", a string unquoted)
    bool is_null = false;
    bool is_string = false;
    std::size_t items = 0;   // arrays: elements
};

// Reads the top-level members of an object in one pass over the bytes: nested values are
// skipped (an array's items only counted), so a 256 KB page costs a byte loop, not a parse
// (nlohmann's SAX parser took ~3 ms for one). The text is the tool's own serialized JSON;
// anything unexpected gives up (nullopt) and the summary says less.
class TopLevel {
public:
    explicit TopLevel(std::string_view text) : s_(text) {}

    std::optional<std::vector<Member>> read() {
        std::vector<Member> members;
        if (!skip_ws() || s_[i_++] != '{') return std::nullopt;
        if (!skip_ws()) return std::nullopt;
        if (s_[i_] == '}') return members;
        for (;;) {
            Member m;
            if (!skip_ws() || s_[i_] != '"') return std::nullopt;
            const auto key = string_token();
            if (!key || !skip_ws() || s_[i_++] != ':' || !skip_ws()) return std::nullopt;
            m.key = unquote(*key);
            if (!value(m)) return std::nullopt;
            members.push_back(std::move(m));
            if (!skip_ws()) return std::nullopt;
            const char c = s_[i_++];
            if (c == '}') return members;
            if (c != ',') return std::nullopt;
        }
    }

private:
    std::string_view s_;
    std::size_t i_ = 0;

    bool skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
            ++i_;
        return i_ < s_.size();
    }
    // A string token with its quotes, starting at s_[i_] == '"'.
    std::optional<std::string_view> string_token() {
        const std::size_t from = i_++;
        for (; i_ < s_.size(); ++i_) {
            if (s_[i_] == '\\') {
                ++i_;
            } else if (s_[i_] == '"') {
                ++i_;
                return s_.substr(from, i_ - from);
            }
        }
        return std::nullopt;
    }
    static std::string unquote(std::string_view token) {
        if (token.find('\\') == std::string_view::npos)
            return std::string(token.substr(1, token.size() - 2));
        const json value = json::parse(token, nullptr, false);
        return value.is_string() ? value.get<std::string>() : std::string();
    }
    // Skips an array or object starting at s_[i_]; counts the items directly inside it.
    bool container(std::size_t& items) {
        int depth = 0;
        bool any = false;
        while (i_ < s_.size()) {
            const char c = s_[i_];
            if (c == '"') {
                if (!string_token()) return false;
                any = true;
                continue;
            }
            ++i_;
            if (c == '[' || c == '{') {
                if (depth++ == 1) any = true;
            } else if (c == ']' || c == '}') {
                if (--depth == 0) {
                    items = any ? items + 1 : 0;
                    return true;
                }
            } else if (c == ',' && depth == 1) {
                ++items;
            } else if (depth == 1 && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                any = true;
            }
        }
        return false;
    }
    bool value(Member& m) {
        const char c = s_[i_];
        if (c == '"') {
            const auto token = string_token();
            if (!token) return false;
            m.text = unquote(*token);
            m.is_string = true;
            return true;
        }
        if (c == '[' || c == '{') {
            m.kind = c == '[' ? Member::Kind::array : Member::Kind::object;
            return container(m.items);
        }
        const std::size_t from = i_;
        while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ' ' &&
               s_[i_] != '\n' && s_[i_] != '\r' && s_[i_] != '\t')
            ++i_;
        m.text = std::string(s_.substr(from, i_ - from));
        m.is_null = m.text == "null";
        return !m.text.empty();
    }
};

const Member* find(const std::vector<Member>& members, std::string_view key) {
    for (const auto& m : members)
        if (m.key == key) return &m;
    return nullptr;
}

std::string shown(const Member& m) {
    std::string text = m.text.size() > kMaxValueChars ? m.text.substr(0, kMaxValueChars) + "..."
                                                       : m.text;
    return m.is_string ? "\"" + text + "\"" : text;
}

// " Note: <the answer's note>." after `out`, when the answer has one: what the data covers or
// how old it is must reach a model that reads only the text.
std::string& append_note(std::string& out, const std::vector<Member>& members) {
    if (const Member* note = find(members, "note"); note && note->is_string) {
        out += " Note: " + (note->text.size() > kMaxNoteChars
                                ? note->text.substr(0, kMaxNoteChars) + "..."
                                : note->text);
        if (!out.ends_with('.')) out += '.';
    }
    return out;
}

// "25 rows of keywords for demo-plumbing (total 300); more with next_cursor. Full rows in
// structuredContent."
std::string rows_summary(const std::vector<Member>& members, const Member& rows) {
    std::string out;
    const Member* returned = find(members, "returned");
    const bool counted = returned && returned->kind == Member::Kind::scalar && !returned->is_null &&
                         !returned->is_string;
    const std::string n = counted ? returned->text : std::to_string(rows.items);
    out += n + (n == "1" ? " row" : " rows");
    if (const Member* r = find(members, "resource"); r && r->is_string) out += " of " + r->text;
    if (const Member* c = find(members, "client_id"); c && c->is_string && !c->text.empty())
        out += " for " + c->text;
    if (const Member* t = find(members, "total"); t && t->kind == Member::Kind::scalar && !t->is_null)
        out += " (total " + t->text + ")";
    if (const Member* next = find(members, "next_cursor"); next && !next->is_null)
        out += "; more with next_cursor";
    if (const Member* cut = find(members, "truncated"); cut && cut->text == "true")
        out += "; truncated to fit the answer";
    out += ".";
    append_note(out, members);
    out += " Full rows in structuredContent.";
    return out;
}

// "Result in structuredContent: ok=true, article_id="a-1", rows (3 items), meta {...}."
std::string members_summary(const std::vector<Member>& members) {
    std::string out = "Result in structuredContent:";
    bool first = true;
    for (const auto& m : members) {
        if (m.key == "note" && m.is_string) continue;  // said whole, at the end
        if (out.size() > kMaxSummaryChars) {
            out += ", ...";
            break;
        }
        out += first ? " " : ", ";
        first = false;
        switch (m.kind) {
            case Member::Kind::scalar: out += m.key + "=" + shown(m); break;
            case Member::Kind::array:
                out += m.key + " (" + std::to_string(m.items) + (m.items == 1 ? " item)" : " items)");
                break;
            case Member::Kind::object: out += m.key + " {...}"; break;
        }
    }
    out += ".";
    return append_note(out, members);
}

}  // namespace

void summarize_structured_text(ToolResult& result, const ServerOptions& options, Era era) {
    if (result.is_error || !result.content.empty() || result.structured_text.empty() ||
        !result.text_block.empty())
        return;
    StructuredText mode = options.structured_text;
    if (mode == StructuredText::automatic)
        mode = era == Era::modern ? StructuredText::compact : StructuredText::full;
    std::string text;
    if (mode == StructuredText::summary) {
        text = structured_summary(result.structured_text);
    } else if (mode == StructuredText::compact) {
        auto compact = compact_text(result.structured_text, result.record_heading);
        if (!compact) return;  // not an object: the JSON itself is the text
        text = std::move(*compact);
    } else {
        return;
    }
    result.text_block = std::move(text);
}

std::string structured_summary(std::string_view json_text) {
    const auto members = TopLevel(json_text).read();
    if (!members) return "Result in structuredContent.";
    if (members->empty()) return "Result in structuredContent: an empty object.";
    if (const Member* rows = find(*members, "rows"); rows && rows->kind == Member::Kind::array)
        return rows_summary(*members, *rows);
    return members_summary(*members);
}

}  // namespace agency::mcp
