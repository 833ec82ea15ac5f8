// Invisible characters out of third-party text, and the JSON pass that cleans a gateway row's
// strings without a DOM. Hidden HTML: base/hidden_html.cpp.
#include "base/untrusted_text.hpp"

#include <algorithm>
#include <array>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/untrusted_text_internal.hpp"

namespace agency::base {

using untrusted::kInvalid;
using Unit = UntrustedJsonCleaner::Unit;

namespace untrusted {

bool always_invisible(char32_t c) {
    if (c == kInvalid) return true;
    if (c < 0x20) return c != '\t' && c != '\n' && c != '\r';
    if (c < 0x7F) return false;
    if (c <= 0x9F) return true;  // DEL and the C1 controls (ANSI escapes hide text in terminals)
    switch (c) {
        case 0x00AD:  // soft hyphen
        case 0x034F:  // combining grapheme joiner
        case 0x061C:  // Arabic letter mark
        case 0x115F: case 0x1160: case 0x3164: case 0xFFA0:  // Hangul fillers (blank "letters")
        case 0x17B4: case 0x17B5:  // Khmer inherent vowels
        case 0x180E:  // Mongolian vowel separator
        case 0x200B:  // zero-width space
        case 0x200E: case 0x200F:  // LRM, RLM
        case 0xFEFF:  // zero-width no-break space (BOM)
            return true;
        default: break;
    }
    return (c >= 0x202A && c <= 0x202E) ||    // bidi embeddings and overrides
           (c >= 0x2060 && c <= 0x206F) ||    // word joiner, invisible operators, isolates, ...
           (c >= 0xFFF9 && c <= 0xFFFB) ||    // interlinear annotation
           (c >= 0xD800 && c <= 0xDFFF) ||    // surrogates (never a character)
           (c >= 0x1BCA0 && c <= 0x1BCA3) ||  // shorthand format controls
           (c >= 0x1D173 && c <= 0x1D17A) ||  // musical format controls
           (c >= 0xE0000 && c <= 0xE007F);    // tag characters (also in flag sequences)
}

bool contextual(char32_t c) {
    return c == 0x200C || c == 0x200D || (c >= 0xFE00 && c <= 0xFE0F) ||
           (c >= 0xE0100 && c <= 0xE01EF) || (c >= 0x180B && c <= 0x180D) || c == 0x180F;
}

}  // namespace untrusted

namespace {

bool emoji(char32_t c) {
    return (c >= 0x1F000 && c <= 0x1FAFF) || (c >= 0x2300 && c <= 0x23FF) ||
           (c >= 0x2600 && c <= 0x27BF) || (c >= 0x2B00 && c <= 0x2BFF);
}
bool indic(char32_t c) { return c >= 0x0900 && c <= 0x0DFF; }
bool arabic(char32_t c) {
    return (c >= 0x0600 && c <= 0x06FF) || (c >= 0x0750 && c <= 0x077F) ||
           (c >= 0x08A0 && c <= 0x08FF) || (c >= 0xFB50 && c <= 0xFDFF) ||
           (c >= 0xFE70 && c <= 0xFEFC);
}
bool cjk_ideograph(char32_t c) {
    return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF);
}
// Characters with standardized (text/emoji, CJK compatibility) variation sequences.
bool has_variants(char32_t c) {
    return (c >= '0' && c <= '9') || c == '#' || c == '*' || c == 0xA9 || c == 0xAE ||
           (c >= 0x2000 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x1F000 && c <= 0x1FAFF);
}

// Whether a contextual character stays between `prev` and `next` (0: none).
bool keeps(char32_t c, char32_t prev, char32_t next) {
    if (c == 0x200D)  // ZWJ: emoji sequences (👨‍👩‍👧) and Indic conjuncts
        return ((emoji(prev) || prev == 0xFE0F) && emoji(next)) || (indic(prev) && indic(next));
    if (c == 0x200C)  // ZWNJ: Persian, Indic words
        return (arabic(prev) || indic(prev)) && (arabic(next) || indic(next));
    if (untrusted::contextual(prev)) return false;  // a run of selectors: a smuggling shape
    if (c >= 0xFE00 && c <= 0xFE0F) return has_variants(prev);
    if (c >= 0xE0100) return cjk_ideograph(prev);
    return prev >= 0x1820 && prev <= 0x18AF;  // Mongolian free variation selectors
}

// Invisible characters out of `u`, in place; the number removed.
std::size_t drop_invisible(std::vector<Unit>& u) {
    const std::size_t before = u.size();
    std::erase_if(u, [](const Unit& x) { return untrusted::always_invisible(x.cp); });
    std::size_t w = 0;
    for (std::size_t i = 0; i < u.size(); ++i) {
        const char32_t c = u[i].cp;
        if (untrusted::contextual(c)) {
            const char32_t prev = w > 0 ? u[w - 1].cp : 0;
            const char32_t next = i + 1 < u.size() ? u[i + 1].cp : 0;
            if (!keeps(c, prev, next)) continue;
        }
        u[w++] = u[i];
    }
    u.resize(w);
    return before - w;
}

// Removes what hides from `u`; true when anything was. Removing can make new constructs
// (`<<!---->script>`, `&&#8203;#8203;`), so it repeats until nothing changes: the result
// is a fixed point, and cleaning it again changes nothing. Nesting built to outlast 8 rounds
// loses every '<', '&' and contextual character, after which nothing can form again.
bool clean_units(std::vector<Unit>& u, bool html = true) {
    bool any = false;
    if (!html) {
        while (drop_invisible(u) > 0) any = true;
        return any;
    }
    for (int round = 0; round < 8; ++round) {
        const std::size_t removed = drop_invisible(u) + untrusted::remove_hidden_html(u);
        if (removed == 0) return any;
        any = true;
    }
    std::erase_if(u, [](const Unit& x) {
        return x.cp == '<' || x.cp == '&' || untrusted::contextual(x.cp) ||
               untrusted::always_invisible(x.cp);
    });
    return true;
}

// Bytes after which a text may hold something to remove: '\\' (an escape), '<', '&', control
// bytes, and the lead bytes of the invisible characters' blocks (or of no character at all).
constexpr std::array<bool, 256> kSuspect = [] {
    std::array<bool, 256> t{};
    for (int b = 0; b < 0x20; ++b) t[b] = b != '\t' && b != '\n' && b != '\r';
    t['\\'] = t['<'] = t['&'] = t[0x7F] = true;
    for (int b = 0x80; b <= 0xC2; ++b) t[b] = true;  // stray continuation bytes, C0/C1, U+0080-00BF
    for (int b : {0xCD, 0xD8, 0xE1, 0xE2, 0xE3, 0xEF, 0xF0, 0xF3}) t[b] = true;
    for (int b = 0xF5; b <= 0xFF; ++b) t[b] = true;
    return t;
}();

// The index of the first byte at or after `i` that is not printable ASCII or is '\\', '<' or
// '&' (s.size() when none): 16 bytes at a time, so the read path's rows (mostly such bytes)
// cost a few instructions per 16 bytes. Signed compares: bytes >= 0x80 are negative, so one
// compare finds them and the controls.
std::size_t next_special(std::string_view s, std::size_t i) {
    const char* const base = s.data();
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(0x20);
    const __m128i del = _mm_set1_epi8(0x7F);
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i lt = _mm_set1_epi8('<');
    const __m128i amp = _mm_set1_epi8('&');
    for (; i + 16 <= s.size(); i += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i));
        __m128i odd = _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_cmpeq_epi8(v, del));
        odd = _mm_or_si128(odd, _mm_cmpeq_epi8(v, backslash));
        odd = _mm_or_si128(odd, _mm_or_si128(_mm_cmpeq_epi8(v, lt), _mm_cmpeq_epi8(v, amp)));
        if (const int mask = _mm_movemask_epi8(odd); mask != 0)
            return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    for (; i < s.size(); ++i) {
        const auto b = static_cast<unsigned char>(base[i]);
        if (b < 0x20 || b >= 0x7F || b == '\\' || b == '<' || b == '&') return i;
    }
    return s.size();
}

bool suspect(std::string_view s) {
    for (std::size_t i = next_special(s, 0); i < s.size(); i = next_special(s, i + 1))
        if (kSuspect[static_cast<unsigned char>(s[i])]) return true;
    return false;
}

// The UTF-8 character at s[i] and its length; kInvalid, 1 for a byte that starts none.
std::pair<char32_t, std::uint32_t> utf8_at(std::string_view s, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return {b0, 1};
    std::uint32_t n = 0;
    char32_t cp = 0, min = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2, cp = b0 & 0x1Fu, min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3, cp = b0 & 0x0Fu, min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
        return {kInvalid, 1};
    }
    if (i + n > s.size()) return {kInvalid, 1};
    for (std::uint32_t k = 1; k < n; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return {kInvalid, 1};
        cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalid, 1};
    return {cp, n};
}

void decode_plain(std::string_view s, std::vector<Unit>& u) {
    u.clear();
    for (std::size_t i = 0; i < s.size();) {
        const auto [cp, len] = utf8_at(s, i);
        u.push_back({cp, static_cast<std::uint32_t>(i), len});
        i += len;
    }
}

int hex4(std::string_view s, std::size_t i) {
    if (i + 4 > s.size()) return -1;
    int v = 0;
    for (std::size_t k = i; k < i + 4; ++k) {
        const char c = s[k];
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

// The escape at s[i] ('\\'): its character and length. A surrogate pair is one unit; a lone
// surrogate is kInvalid (removed), and so is an escape JSON does not know (kept, removing
// what follows could complete it: "\u20", an invalid byte, "0b").
std::pair<char32_t, std::uint32_t> escape_at(std::string_view s, std::size_t i) {
    if (i + 1 >= s.size()) return {kInvalid, 1};
    const char e = s[i + 1];
    if (e == 'u') {
        const int v = hex4(s, i + 2);
        if (v < 0) return {kInvalid, 2};
        if (v >= 0xD800 && v <= 0xDBFF && i + 12 <= s.size() && s[i + 6] == '\\' &&
            s[i + 7] == 'u') {
            const int lo = hex4(s, i + 8);
            if (lo >= 0xDC00 && lo <= 0xDFFF)
                return {0x10000 + ((static_cast<char32_t>(v) - 0xD800) << 10) +
                            (static_cast<char32_t>(lo) - 0xDC00),
                        12};
        }
        if (v >= 0xD800 && v <= 0xDFFF) return {kInvalid, 6};
        return {static_cast<char32_t>(v), 6};
    }
    switch (e) {
        case 'b': return {0x08, 2};
        case 'f': return {0x0C, 2};
        case 'n': return {'\n', 2};
        case 'r': return {'\r', 2};
        case 't': return {'\t', 2};
        case '"': case '\\': case '/': return {static_cast<char32_t>(e), 2};
        default: return {kInvalid, 2};
    }
}

// Whether cleaning could change `s` (a JSON string's content when `json`): each character is
// read once and nothing is built, so a string of ordinary text with escapes ("https:\/\/",
// "\u00e9") or non-ASCII letters costs one scan.
bool may_change(std::string_view s, bool json) {
    for (std::size_t i = next_special(s, 0); i < s.size(); i = next_special(s, i)) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b == '&') {  // a reference to an invisible character starts "&#" or a known name
            const char next = i + 1 < s.size() ? s[i + 1] : 0;
            if (std::string_view("#zslrZNIAia").find(next) != std::string_view::npos) return true;
            ++i;
            continue;
        }
        const auto [cp, len] = b >= 0x80                ? utf8_at(s, i)
                               : json && b == '\\'     ? escape_at(s, i)
                                                        : std::pair<char32_t, std::uint32_t>{b, 1};
        if (cp == '<' || cp == '&' || untrusted::always_invisible(cp) || untrusted::contextual(cp))
            return true;
        i += len;
    }
    return false;
}

void decode_json_string(std::string_view s, std::vector<Unit>& u) {
    u.clear();
    for (std::size_t i = 0; i < s.size();) {
        const auto [cp, len] = s[i] == '\\' ? escape_at(s, i) : utf8_at(s, i);
        u.push_back({cp, static_cast<std::uint32_t>(i), len});
        i += len;
    }
}

void append_units(std::string& out, std::string_view s, const std::vector<Unit>& u) {
    for (const Unit& x : u) out.append(s.substr(x.at, x.len));
}

// The index of the quote closing the string whose content starts at `i`; s.size() if none.
std::size_t string_end(std::string_view s, std::size_t i) {
    const char* const base = s.data();
    while (i < s.size()) {
#if defined(__SSE2__)
        const __m128i quote = _mm_set1_epi8('"');
        const __m128i backslash = _mm_set1_epi8('\\');
        while (i + 16 <= s.size()) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i));
            const int mask = _mm_movemask_epi8(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
            if (mask != 0) {
                i += static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
                break;
            }
            i += 16;
        }
        if (i >= s.size()) break;
#endif
        const char c = base[i];
        if (c == '"') return i;
        i += c == '\\' ? 2 : 1;
    }
    return s.size();
}

bool ends_with(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// Members whose values later calls pass back (record ids, cursors): kept exact.
bool id_member(std::string_view k) {
    return k == "id" || k == "ids" || k == "uuid" || k == "guid" || k == "ID" ||
           ends_with(k, "_id") || ends_with(k, "_ids") || ends_with(k, "_uuid") ||
           ends_with(k, "-id") || ends_with(k, "Id") || ends_with(k, "Ids") ||
           ends_with(k, "ID") || ends_with(k, "cursor");
}

}  // namespace

std::string clean_untrusted_text(std::string_view text) {
    if (!suspect(text) || !may_change(text, false)) return std::string(text);
    std::vector<Unit> u;
    decode_plain(text, u);
    if (!clean_units(u)) return std::string(text);
    std::string out;
    out.reserve(text.size());
    append_units(out, text, u);
    return out;
}

std::string strip_invisible_text(std::string_view text) {
    if (!suspect(text) || !may_change(text, false)) return std::string(text);
    std::vector<Unit> u;
    decode_plain(text, u);
    if (!clean_units(u, false)) return std::string(text);
    std::string out;
    out.reserve(text.size());
    append_units(out, text, u);
    return out;
}

bool holds_hidden_text(std::string_view text) {
    if (!suspect(text) || !may_change(text, false)) return false;
    std::vector<Unit> u;
    decode_plain(text, u);
    return clean_units(u);
}

std::string_view UntrustedJsonCleaner::clean(std::string_view in) {
    if (!suspect(in)) return in;
    constexpr std::uint8_t kIdArray = 2;
    stack_.clear();
    bool changed = false;
    std::size_t flushed = 0;  // in[0, flushed) is in out_ (once changed)
    char last = 0;            // the last structural character ('s': a string, 'v': a scalar)
    bool id_key = false;      // the last member name was an id's
    for (std::size_t i = 0; i < in.size();) {
        const char c = in[i];
        if (c == '"') {
            const std::size_t end = string_end(in, i + 1);
            if (end >= in.size()) break;  // not JSON: the rest is left as it is
            const bool exempt = (last == ':' && id_key) ||
                                (!stack_.empty() && stack_.back() == kIdArray &&
                                 (last == '[' || last == ','));
            std::size_t k = end + 1;
            while (k < in.size() && (in[k] == ' ' || in[k] == '\t' || in[k] == '\n' ||
                                     in[k] == '\r'))
                ++k;
            const bool is_key = k < in.size() && in[k] == ':';
            const std::string_view content = in.substr(i + 1, end - i - 1);
            bool cleaned = false;
            if (!exempt && suspect(content) && may_change(content, true)) {
                decode_json_string(content, units_);
                if (clean_units(units_, html_)) {
                    if (!changed) out_.clear();
                    changed = cleaned = true;
                    out_.append(in.substr(flushed, i + 1 - flushed));
                    append_units(out_, content, units_);
                    flushed = end;
                }
            }
            if (is_key) {
                if (cleaned) {  // the name as it now reads
                    key_.clear();
                    for (const Unit& x : units_)
                        key_.push_back(x.cp < 0x80 ? static_cast<char>(x.cp) : '?');
                    id_key = id_member(key_);
                } else if (!suspect(content)) {
                    id_key = id_member(content);
                } else {
                    decode_json_string(content, units_);
                    clean_units(units_, html_);
                    key_.clear();
                    for (const Unit& x : units_)
                        key_.push_back(x.cp < 0x80 ? static_cast<char>(x.cp) : '?');
                    id_key = id_member(key_);
                }
            }
            last = 's';
            i = end + 1;
            continue;
        }
        switch (c) {
            case '{': stack_.push_back(1); last = c; break;
            case '[': stack_.push_back(last == ':' && id_key ? kIdArray : 0); last = c; break;
            case '}': case ']':
                if (!stack_.empty()) stack_.pop_back();
                last = c;
                break;
            case ':': case ',': last = c; break;
            case ' ': case '\t': case '\n': case '\r': break;
            default: last = 'v'; break;
        }
        ++i;
    }
    if (!changed) return in;
    out_.append(in.substr(flushed));
    return out_;
}

bool clean_untrusted_json(std::string& json) {
    UntrustedJsonCleaner cleaner;
    const std::string_view cleaned = cleaner.clean(json);
    if (cleaned.data() == json.data() && cleaned.size() == json.size()) return false;
    json.assign(cleaned);
    return true;
}

}  // namespace agency::base
