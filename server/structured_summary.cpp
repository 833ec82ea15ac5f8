// The short text that stands beside structuredContent when the whole JSON is not repeated in
// the text block (docs/design.md, "Text beside structuredContent"). Read with nlohmann's SAX
// parser: only the top-level members are kept (a row count, scalars), never a DOM of the rows.
#include <cstdint>
#include <string>
#include <vector>

#include "server/server_impl.hpp"

namespace agency::mcp {

namespace {

constexpr std::size_t kMaxValueChars = 80;
constexpr std::size_t kMaxNoteChars = 300;
constexpr std::size_t kMaxSummaryChars = 600;

struct Member {
    std::string key;
    enum class Kind { scalar, array, object } kind = Kind::scalar;
    std::string text;        // scalars: the value as shown ("300", "true", a string unquoted)
    bool is_null = false;
    bool is_string = false;
    std::size_t items = 0;   // arrays: elements
};

// Collects the top-level members of an object; deeper values only count as array elements.
class TopLevel {
public:
    using json_t = json;
    std::vector<Member> members;
    bool object = false;

    bool null() { return scalar("null", true, false); }
    bool boolean(bool v) { return scalar(v ? "true" : "false", false, false); }
    bool number_integer(json::number_integer_t v) { return scalar(std::to_string(v), false, false); }
    bool number_unsigned(json::number_unsigned_t v) { return scalar(std::to_string(v), false, false); }
    bool number_float(json::number_float_t, const std::string& s) { return scalar(s, false, false); }
    bool string(std::string& v) { return scalar(v, false, true); }
    bool binary(json::binary_t&) { return scalar("(binary)", false, false); }
    bool start_object(std::size_t) { return open(Member::Kind::object); }
    bool end_object() { return close(); }
    bool start_array(std::size_t) { return open(Member::Kind::array); }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        if (depth_ == 1) members.push_back({.key = k});
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
        return false;
    }

private:
    int depth_ = 0;

    // A value directly inside a top-level array counts as one of its items.
    void count_item() {
        if (depth_ == 2 && !members.empty() && members.back().kind == Member::Kind::array)
            ++members.back().items;
    }
    bool scalar(std::string text, bool is_null, bool is_string) {
        count_item();
        if (depth_ == 1 && !members.empty()) {
            members.back().text = std::move(text);
            members.back().is_null = is_null;
            members.back().is_string = is_string;
        }
        return true;
    }
    bool open(Member::Kind kind) {
        count_item();
        if (depth_ == 0) object = kind == Member::Kind::object;
        if (depth_ == 1 && !members.empty()) members.back().kind = kind;
        ++depth_;
        return true;
    }
    bool close() {
        --depth_;
        return true;
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
    if (const Member* note = find(members, "note"); note && note->is_string) {
        out += " Note: " + (note->text.size() > kMaxNoteChars
                                ? note->text.substr(0, kMaxNoteChars) + "..."
                                : note->text);
        if (!out.ends_with('.')) out += '.';
    }
    out += " Full rows in structuredContent.";
    return out;
}

// "Result in structuredContent: ok=true, article_id="a-1", rows (3 items), meta {...}."
std::string members_summary(const std::vector<Member>& members) {
    std::string out = "Result in structuredContent:";
    bool first = true;
    for (const auto& m : members) {
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
    return out + ".";
}

}  // namespace

void summarize_structured_text(ToolResult& result, const ServerOptions& options, Era era) {
    if (result.is_error || !result.content.empty() || result.structured_text.empty()) return;
    const bool summary = options.structured_text == StructuredText::summary ||
                         (options.structured_text == StructuredText::automatic &&
                          era == Era::modern);
    if (!summary) return;
    result.content = json::array(
        {{{"type", "text"}, {"text", structured_summary(result.structured_text)}}});
}

std::string structured_summary(std::string_view json_text) {
    TopLevel top;
    const bool parsed = json::sax_parse(json_text.begin(), json_text.end(), &top);
    if (!parsed || !top.object) return "Result in structuredContent.";
    if (const Member* rows = find(top.members, "rows"); rows && rows->kind == Member::Kind::array)
        return rows_summary(top.members, *rows);
    return members_summary(top.members);
}

}  // namespace agency::mcp
