#include "base/text.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace agency::base {

std::string ascii_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += separator;
        out += items[i];
    }
    return out;
}

std::string_view trim(std::string_view text) {
    const auto begin = text.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    const auto end = text.find_last_not_of(" \t");
    return text.substr(begin, end - begin + 1);
}

bool iequals(std::string_view a, std::string_view b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
        return lower(x) == lower(y);
    });
}

namespace {

// The character at text[i] and its length in bytes; length 0 for a byte that does not start
// a well-formed UTF-8 sequence (overlong forms and surrogates included).
std::pair<char32_t, std::size_t> terminal_char_at(std::string_view text, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) return {c, 1};
    std::size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (c >= 0xF5) len = 0;
    if (len == 0 || i + len > text.size()) return {0, 0};
    char32_t cp = c & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return {0, 0};
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
    return {cp, len};
}

void put_terminal_escape(std::string& out, const char* format, unsigned value) {
    char buf[8];
    std::snprintf(buf, sizeof buf, format, value);
    out += buf;
}

// `short_forms`: \n, \r and \t as those escapes rather than \u000A, \u000D and \u0009.
template <typename Invalid>
std::string terminal_escaped(std::string_view text, bool double_backslash, Invalid invalid,
                             bool short_forms = false) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto [cp, len] = terminal_char_at(text, i);
        if (len == 0) {
            invalid(out, static_cast<unsigned char>(text[i]));
            ++i;
            continue;
        }
        if (short_forms && (cp == '\n' || cp == '\r' || cp == '\t'))
            out += cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t";
        else if (terminal_control(cp))
            put_terminal_escape(out, "\\u%04X", static_cast<unsigned>(cp));
        else if (double_backslash && cp == '\\')
            out += "\\\\";
        else
            out.append(text.substr(i, len));
        i += len;
    }
    return out;
}

}  // namespace

bool terminal_control(char32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
           cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x2028 || cp == 0x2029;
}

std::string terminal_safe_json(std::string_view json_text) {
    return terminal_escaped(json_text, false, [](std::string& out, unsigned) { out += "\\ufffd"; });
}

std::string csv_cell(std::string_view text) {
    std::string out = "\"";
    if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string::npos)
        out += '\'';
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + '"';
}

std::string terminal_safe_text(std::string_view text) {
    return terminal_escaped(text, true, [](std::string& out, unsigned byte) {
        put_terminal_escape(out, "\\x%02X", byte);
    });
}

std::string log_safe_text(std::string_view text) {
    return terminal_escaped(
        text, false, [](std::string& out, unsigned byte) { put_terminal_escape(out, "\\x%02X", byte); },
        true);
}

bool log_safe(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7F) {  // printable ASCII: the usual line
            ++i;
            continue;
        }
        const auto [cp, len] = terminal_char_at(text, i);
        if (len == 0 || terminal_control(cp)) return false;
        i += len;
    }
    return true;
}

}  // namespace agency::base
