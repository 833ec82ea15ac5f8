#include "gateway/row_cut.hpp"

#include <simdjson.h>

#include "gateway/raw_json.hpp"

namespace agency::gateway {

namespace row_cut_detail {

namespace od = simdjson::ondemand;

// A shortened string shows at least this many bytes of its text; with less room it is left out.
constexpr std::size_t kMinShown = 16;
constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // …
constexpr std::size_t kNameBytes = 40;                  // of a name in the note

using raw_json::trim_end;

// The length of the UTF-8 sequence that `lead` starts (1 for a stray byte).
std::size_t sequence_length(unsigned char lead) {
    if (lead >= 0xF0) return 4;
    if (lead >= 0xE0) return 3;
    if (lead >= 0xC0) return 2;
    return 1;
}

bool hex4_high_surrogate(std::string_view text, std::size_t at) {
    // text[at..] is "\uXXXX": D800..DBFF opens a pair that must stay whole.
    if (at + 6 > text.size()) return false;
    const char a = static_cast<char>(text[at + 2] | 0x20), b = static_cast<char>(text[at + 3] | 0x20);
    return a == 'd' && (b == '8' || b == '9' || b == 'a' || b == 'b');
}

// The longest prefix of a JSON string's escaped text (between its quotes) of at most `max`
// bytes that splits neither an escape (a surrogate pair is one) nor a UTF-8 sequence.
std::string_view string_prefix(std::string_view text, std::size_t max) {
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t step = 1;
        if (text[i] == '\\') {
            step = i + 1 < text.size() && text[i + 1] == 'u' ? 6 : 2;
            if (step == 6 && hex4_high_surrogate(text, i) && i + 7 < text.size() &&
                text[i + 6] == '\\')
                step = 12;
        } else {
            step = sequence_length(static_cast<unsigned char>(text[i]));
        }
        if (i + step > max || i + step > text.size()) break;
        i += step;
    }
    return text.substr(0, i);
}

// A key's text as the row holds it (escapes and all), without its quotes.
std::string_view key_text(od::raw_json_string key) {
    const char* begin = key.raw();
    const char* p = begin;
    while (*p != '"') p += *p == '\\' ? 2 : 1;
    return {begin, static_cast<std::size_t>(p - begin)};
}

void name(std::vector<std::string>& names, std::size_t& count, std::string_view key) {
    if (names.size() < RowCut::kNamed) names.emplace_back(utf8_prefix(key, kNameBytes));
    ++count;
}

}  // namespace row_cut_detail

std::string_view utf8_prefix(std::string_view text, std::size_t max) {
    using namespace row_cut_detail;
    if (text.size() <= max) return text;
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t step = sequence_length(static_cast<unsigned char>(text[i]));
        if (i + step > max) break;
        i += step;
    }
    return text.substr(0, i);
}

RowCut cut_row(std::string_view row, std::size_t room, std::string& out) {
    using namespace row_cut_detail;
    RowCut cut;
    out.assign("{");
    // A copy with simdjson's padding, freed on return: cuts are rare and the parser is sized
    // for the row, so neither is kept.
    const simdjson::padded_string copy(row);
    od::parser parser;
    od::document doc;
    od::object object;
    if (parser.iterate(copy).get(doc) || doc.get_object().get(object)) {
        cut.unreadable = true;
        out.push_back('}');
        return cut;
    }
    bool full = false;  // nothing more fits: the rest is only counted
    for (auto field : object) {
        od::raw_json_string raw_key;
        od::json_type type;
        std::string_view raw;
        if (field.key().get(raw_key) || raw_json::raw_value(field.value(), type, raw)) {
            cut.unreadable = true;
            break;
        }
        const std::string_view key = key_text(raw_key);
        const std::size_t comma = out.size() > 1 ? 1 : 0;
        // What the member costs besides its value: ,"key": and the closing brace.
        const std::size_t frame = comma + key.size() + 3 + 1;
        if (!full && out.size() + frame + raw.size() <= room) {
            if (comma) out.push_back(',');
            out.push_back('"');
            out.append(key);
            out.append("\":");
            out.append(raw);
            continue;
        }
        const std::size_t left = room > out.size() + frame ? room - out.size() - frame : 0;
        if (!full && type == od::json_type::string && left >= kMinShown + 2 + kEllipsis.size()) {
            const std::string_view text = raw.substr(1, raw.size() - 2);
            if (comma) out.push_back(',');
            out.push_back('"');
            out.append(key);
            out.append("\":\"");
            out.append(string_prefix(text, left - 2 - kEllipsis.size()));
            out.append(kEllipsis);
            out.push_back('"');
            name(cut.shortened, cut.shortened_count, key);
            continue;
        }
        // Past the room for even a short member, the rest is only counted.
        if (room < out.size() + kMinShown) full = true;
        name(cut.dropped, cut.dropped_count, key);
    }
    out.push_back('}');
    return cut;
}

}  // namespace agency::gateway
