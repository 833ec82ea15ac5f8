// Hidden HTML out of third-party text: what a browser shows no one but an assistant reading the
// text would read. Comments and bogus comments (<!...>, <?...>, </ ...>); elements whose
// content is never rendered (script, style, noscript, template, iframe, title, head, ...);
// elements marked hidden (the hidden attribute, aria-hidden="true", type="hidden", an inline
// style that hides, a class that conventionally hides); meta, link and base tags; character
// references to invisible characters (&#8203;). Visible markup and its attributes stay.
//
// Works on decoded characters (JSON escapes already read), in one pass per round: every search
// either removes what it scanned or is skipped over, and a failed search for '>' is
// remembered, so a round is linear in the text.
#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "base/untrusted_text_internal.hpp"

namespace agency::base::untrusted {

namespace {

constexpr std::size_t npos = static_cast<std::size_t>(-1);

char32_t lower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
bool letter(char32_t c) { return lower(c) >= 'a' && lower(c) <= 'z'; }
bool space(char32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (n == name) return true;
    return false;
}

// Elements whose text is raw (ends only at its own end tag) and never rendered.
bool raw_hidden(std::string_view name) {
    return one_of(name, {"script", "style", "noscript", "noembed", "noframes", "iframe", "title"});
}
bool void_element(std::string_view name) {
    return one_of(name, {"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen",
                         "link", "meta", "param", "source", "track", "wbr"});
}

struct Number {
    double value = 0;
    std::string_view unit;
    bool ok = false;
};

Number number(std::string_view v) {
    Number n;
    const char* end = v.data() + v.size();
    const char* start = v.data();
    if (start != end && *start == '+') ++start;
    auto [p, ec] = std::from_chars(start, end, n.value);
    if (ec != std::errc()) return n;
    n.unit = std::string_view(p, static_cast<std::size_t>(end - p));
    n.ok = true;
    return n;
}

// An inline style as CSS reads it: character references and CSS escapes decoded, comments
// out, lower case, no blanks ("display: n\6f ne" and "display&colon;none" both hide).
std::string normal_style(std::string_view raw) {
    std::string s;
    for (std::size_t i = 0; i < raw.size(); ++i) {  // character references
        if (raw[i] == '&') {
            static constexpr std::pair<std::string_view, char> kNamed[] = {
                {"colon;", ':'}, {"semi;", ';'}, {"lpar;", '('}, {"rpar;", ')'},
                {"bsol;", '\\'}, {"sol;", '/'}, {"ast;", '*'}, {"comma;", ','},
                {"period;", '.'}, {"percnt;", '%'}, {"quot;", '"'}, {"apos;", '\''},
                {"amp;", '&'}, {"num;", '#'}, {"excl;", '!'}, {"Tab;", ' '}, {"NewLine;", ' '}};
            bool done = false;
            for (const auto& [name, c] : kNamed)
                if (raw.substr(i + 1, name.size()) == name) {
                    s.push_back(c);
                    i += name.size();
                    done = true;
                    break;
                }
            if (!done && i + 1 < raw.size() && raw[i + 1] == '#') {
                std::size_t j = i + 2;
                const bool hex = j < raw.size() && (raw[j] == 'x' || raw[j] == 'X');
                if (hex) ++j;
                unsigned v = 0;
                auto [p, ec] = std::from_chars(raw.data() + j, raw.data() + raw.size(), v,
                                               hex ? 16 : 10);
                if (ec == std::errc() && p != raw.data() + j) {
                    s.push_back(v < 0x80 ? static_cast<char>(v) : '?');
                    i = static_cast<std::size_t>(p - raw.data());
                    if (i < raw.size() && raw[i] == ';') ++i;
                    --i;
                    done = true;
                }
            }
            if (done) continue;
        }
        s.push_back(raw[i]);
    }
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {  // a comment
            const std::size_t end = s.find("*/", i + 2);
            i = end == std::string::npos ? s.size() : end + 1;
            continue;
        }
        if (c == '\\' && i + 1 < s.size()) {  // a CSS escape
            std::size_t j = i + 1;
            unsigned v = 0;
            auto [p, ec] = std::from_chars(s.data() + j, s.data() + std::min(s.size(), j + 6), v,
                                           16);
            if (ec == std::errc() && p != s.data() + j) {
                j = static_cast<std::size_t>(p - s.data());
                if (j < s.size() && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n')) ++j;
                out.push_back(v < 0x80 ? static_cast<char>(v) : '?');
                i = j - 1;
            } else {
                out.push_back(s[j]);
                i = j;
            }
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') continue;
        out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    }
    return out;
}

bool tiny_length(const Number& n, double px, double relative) {
    if (!n.ok) return false;
    if (n.value <= 0) return true;
    if (n.unit.empty() || n.unit == "px" || n.unit == "pt") return n.value < px;
    return n.value < relative;
}

bool far_off(const Number& n) {
    if (!n.ok || n.value >= 0) return false;
    if (n.unit.empty() || n.unit == "px" || n.unit == "pt") return n.value <= -500;
    return n.value <= -50;
}

// Whether a colour is see-through: transparent, or an alpha of (almost) zero.
bool clear_colour(std::string_view v) {
    if (v == "transparent") return true;
    if (v.starts_with("#")) return (v.size() == 9 && v.ends_with("00")) ||
                                   (v.size() == 5 && v.ends_with("0"));
    if (!v.ends_with(")")) return false;
    const std::size_t sep = v.find_last_of(",/");
    if (sep == std::string_view::npos || !(v.starts_with("rgb") || v.starts_with("hsl")))
        return false;
    const Number a = number(v.substr(sep + 1, v.size() - sep - 2));
    return a.ok && (a.unit == "%" ? a.value <= 5 : a.value <= 0.05);
}

bool declaration_hides(std::string_view p, std::string_view v, bool& zero_size,
                       bool& clipped) {
    const Number n = number(v);
    if (p == "display") return v == "none";
    if (p == "visibility") return v == "hidden" || v == "collapse";
    if (p == "content-visibility") return v == "hidden";
    if (p == "opacity") return n.ok && (n.unit == "%" ? n.value <= 5 : n.value <= 0.05);
    if (p == "font-size") return tiny_length(n, 2, 0.1);
    if (p == "color") return clear_colour(v);
    if (p == "clip") return v.starts_with("rect(");
    if (p == "clip-path") {
        if (v.starts_with("circle(0") || v.starts_with("ellipse(0")) return true;
        const Number inset = v.starts_with("inset(") ? number(v.substr(6)) : Number{};
        return inset.ok && inset.unit.starts_with("%") && inset.value >= 50;
    }
    if (p == "transform")
        for (std::string_view f : {"scale(", "scalex(", "scaley(", "scale3d("})
            if (std::size_t at = v.find(f); at != std::string_view::npos) {
                const Number s = number(v.substr(at + f.size()));
                if (s.ok && s.value == 0) return true;
            }
    if (one_of(p, {"text-indent", "left", "top", "right", "margin-left", "margin-top"}))
        return far_off(n);
    if (one_of(p, {"width", "height", "max-width", "max-height"}) && tiny_length(n, 2, 0.01))
        zero_size = true;
    if ((p == "overflow" || p == "overflow-x" || p == "overflow-y") &&
        (v == "hidden" || v == "clip"))
        clipped = true;
    return false;
}

bool style_hides(std::string_view raw) {
    const std::string css = normal_style(raw);
    std::string_view rest = css;
    bool zero_size = false, clipped = false;
    while (!rest.empty()) {
        const std::size_t semi = rest.find(';');
        std::string_view decl = rest.substr(0, semi);
        rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
        if (const std::size_t bang = decl.find('!'); bang != std::string_view::npos)
            decl = decl.substr(0, bang);
        const std::size_t colon = decl.find(':');
        if (colon == std::string_view::npos) continue;
        if (declaration_hides(decl.substr(0, colon), decl.substr(colon + 1), zero_size, clipped))
            return true;
    }
    return zero_size && clipped;
}

bool class_hides(std::string_view value) {
    std::size_t i = 0;
    while (i < value.size()) {
        while (i < value.size() && space(static_cast<unsigned char>(value[i]))) ++i;
        std::size_t j = i;
        while (j < value.size() && !space(static_cast<unsigned char>(value[j]))) ++j;
        std::string token(value.substr(i, j - i));
        for (char& c : token) c = static_cast<char>(lower(static_cast<unsigned char>(c)));
        if (one_of(token, {"hidden", "hide", "is-hidden", "d-none", "invisible", "sr-only",
                           "visually-hidden", "visuallyhidden", "screen-reader-text"}))
            return true;
        i = j;
    }
    return false;
}

void put_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c <= 0x10FFFF) {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

struct Tag {
    std::string name;
    std::size_t end = 0;        // after its '>'
    bool terminated = false;    // false: no '>' closes it before the text ends
    bool hidden = false;        // an attribute hides it
    bool open = false;          // the open attribute (dialog)
};

class Scan {
public:
    explicit Scan(const std::vector<Unit>& u) : u_(u), n_(u.size()) {}
    char32_t at(std::size_t i) const { return i < n_ ? u_[i].cp : 0; }
    std::size_t size() const { return n_; }

    // After the first '>' at or after i; npos when none (remembered).
    std::size_t after_gt(std::size_t i) {
        if (i >= no_gt_from_) return npos;
        for (std::size_t j = i; j < n_; ++j)
            if (u_[j].cp == '>') return j + 1;
        no_gt_from_ = i;
        return npos;
    }

    // Whether the text at i is `name` (any case) ending there (a tag name's end follows).
    bool name_at(std::size_t i, std::string_view name) const {
        for (std::size_t k = 0; k < name.size(); ++k)
            if (lower(at(i + k)) != static_cast<unsigned char>(name[k])) return false;
        const char32_t next = at(i + name.size());
        return next == 0 || space(next) || next == '/' || next == '>';
    }

    // The end of the comment opened at i ("<!--"); the text's end when unterminated.
    std::size_t comment_end(std::size_t i) const {
        std::size_t j = i + 4;
        if (at(j) == '>') return j + 1;  // <!-->
        if (at(j) == '-' && at(j + 1) == '>') return j + 2;  // <!--->
        for (; j < n_; ++j) {
            if (at(j) != '-' || at(j + 1) != '-') continue;
            if (at(j + 2) == '>') return j + 3;
            if (at(j + 2) == '!' && at(j + 3) == '>') return j + 4;
        }
        return n_;
    }

    // After the end tag of the raw-text element `name` at or after j; the text's end if none.
    std::size_t raw_end(std::string_view name, std::size_t j) {
        for (; j < n_; ++j)
            if (at(j) == '<' && at(j + 1) == '/' && name_at(j + 2, name)) {
                const std::size_t e = after_gt(j + 2);
                return e == npos ? n_ : e;
            }
        return n_;
    }

    Tag read_tag(std::size_t i);
    std::size_t element_end(const std::string& name, std::size_t j);
    std::pair<std::size_t, bool> construct(std::size_t i);
    std::size_t reference_end(std::size_t i) const;

private:
    void attribute(Tag& tag, const std::string& name, const std::string& value) const;

    const std::vector<Unit>& u_;
    std::size_t n_;
    std::size_t no_gt_from_ = static_cast<std::size_t>(-1);
};

void Scan::attribute(Tag& tag, const std::string& name, const std::string& value) const {
    std::string v;
    for (char c : value) v.push_back(static_cast<char>(lower(static_cast<unsigned char>(c))));
    while (!v.empty() && space(static_cast<unsigned char>(v.back()))) v.pop_back();
    while (!v.empty() && space(static_cast<unsigned char>(v.front()))) v.erase(0, 1);
    if (name == "hidden" || (name == "aria-hidden" && v == "true") ||
        (name == "type" && v == "hidden") || (name == "style" && style_hides(value)) ||
        (name == "class" && class_hides(value)))
        tag.hidden = true;
    if (name == "open") tag.open = true;
}

// The start tag at i ('<' and a letter), read as a browser reads it: name, attributes (values
// quoted or not; a '>' inside quotes does not end the tag), up to its '>'.
Tag Scan::read_tag(std::size_t i) {
    Tag tag;
    if (after_gt(i) == npos) return tag;  // no '>' anywhere after: plain text such as "a<b"
    std::size_t j = i + 1;
    for (; j < n_ && !space(at(j)) && at(j) != '/' && at(j) != '>'; ++j)
        if (tag.name.size() < 32) tag.name.push_back(static_cast<char>(at(j) < 0x80 ? lower(at(j)) : '?'));
    while (j < n_) {
        while (j < n_ && (space(at(j)) || at(j) == '/')) ++j;
        if (j >= n_) break;
        if (at(j) == '>') {
            tag.end = j + 1;
            tag.terminated = true;
            return tag;
        }
        std::string name, value;
        for (; j < n_ && !space(at(j)) && at(j) != '/' && at(j) != '>' &&
               (name.empty() || at(j) != '=');
             ++j)
            if (name.size() < 64) name.push_back(static_cast<char>(at(j) < 0x80 ? lower(at(j)) : '?'));
        std::size_t k = j;
        while (k < n_ && space(at(k))) ++k;
        if (at(k) == '=') {
            j = k + 1;
            while (j < n_ && space(at(j))) ++j;
            const char32_t quote = at(j) == '"' || at(j) == '\'' ? at(j) : 0;
            if (quote) ++j;
            for (; j < n_ && (quote ? at(j) != quote : !space(at(j)) && at(j) != '>'); ++j)
                if (value.size() < 4096) put_utf8(value, at(j));
            if (quote) {
                if (j >= n_) break;
                ++j;
            }
        }
        attribute(tag, name, value);
    }
    return tag;  // unterminated, though a '>' follows: a browser shows nothing from i on
}

// After the end tag closing the element `name` whose content starts at j (same-name elements
// nest; comments and raw text inside are skipped); the text's end when it is never closed.
std::size_t Scan::element_end(const std::string& name, std::size_t j) {
    int depth = 1;
    while (j < n_) {
        if (at(j) != '<') {
            ++j;
            continue;
        }
        if (at(j + 1) == '!' && at(j + 2) == '-' && at(j + 3) == '-') {
            j = comment_end(j);
        } else if (at(j + 1) == '/' && name_at(j + 2, name)) {
            const std::size_t e = after_gt(j + 2);
            if (e == npos) return n_;
            if (--depth == 0) return e;
            j = e;
        } else if (letter(at(j + 1))) {
            const Tag t = read_tag(j);
            if (!t.terminated) {
                if (after_gt(j) != npos) return n_;
                ++j;
                continue;
            }
            if (raw_hidden(t.name)) {
                j = raw_end(t.name, t.end);
                continue;
            }
            if (t.name == name) ++depth;
            j = t.end;
        } else {
            ++j;
        }
    }
    return n_;
}

// After a character reference at i ('&') to an invisible character; i when it is not one.
std::size_t Scan::reference_end(std::size_t i) const {
    std::size_t j = i + 1;
    if (at(j) == '#') {
        ++j;
        const bool hex = lower(at(j)) == 'x';
        if (hex) ++j;
        char32_t v = 0;
        std::size_t digits = 0;
        for (;; ++j, ++digits) {
            const char32_t c = lower(at(j));
            const int d = c >= '0' && c <= '9' ? static_cast<int>(c - '0')
                          : hex && c >= 'a' && c <= 'f' ? static_cast<int>(c - 'a' + 10)
                                                        : -1;
            if (d < 0 || digits > 8) break;
            v = v * (hex ? 16 : 10) + static_cast<char32_t>(d);
        }
        if (digits == 0 || digits > 8) return i;
        if (at(j) == ';') ++j;
        return always_invisible(v) || contextual(v) || v > 0x10FFFF ? j : i;
    }
    static constexpr std::string_view kInvisible[] = {
        "zwj;", "zwnj;", "shy;", "lrm;", "rlm;", "ZeroWidthSpace;", "NoBreak;",
        "InvisibleTimes;", "InvisibleComma;", "ApplyFunction;", "it;", "ic;", "af;"};
    for (std::string_view name : kInvisible) {
        std::size_t k = 0;
        while (k < name.size() && at(j + k) == static_cast<unsigned char>(name[k])) ++k;
        if (k == name.size()) return j + k;
    }
    return i;
}

// The construct at i ('<' or '&'): its end and whether it hides. Not a construct: {i + 1,
// false}. A visible tag is skipped whole, so '<' inside its attributes is not read again.
std::pair<std::size_t, bool> Scan::construct(std::size_t i) {
    if (at(i) == '&') {
        const std::size_t e = reference_end(i);
        return e > i ? std::pair{e, true} : std::pair{i + 1, false};
    }
    const char32_t next = at(i + 1);
    if (next == '!' && at(i + 2) == '-' && at(i + 3) == '-') return {comment_end(i), true};
    if (next == '!' || next == '?' || (next == '/' && !letter(at(i + 2)))) {
        const std::size_t e = after_gt(i + 1);  // a bogus comment, or "</>"
        return e == npos ? std::pair{i + 1, false} : std::pair{e, true};
    }
    if (next == '/') {  // an end tag: visible (nothing), skipped whole
        const std::size_t e = after_gt(i + 2);
        return {e == npos ? i + 1 : e, false};
    }
    if (!letter(next)) return {i + 1, false};
    const Tag tag = read_tag(i);
    if (!tag.terminated) return after_gt(i) == npos ? std::pair{i + 1, false} : std::pair{n_, true};
    if (raw_hidden(tag.name)) return {raw_end(tag.name, tag.end), true};
    if (void_element(tag.name))
        return {tag.end, tag.hidden || one_of(tag.name, {"meta", "link", "base"})};
    if (tag.hidden || one_of(tag.name, {"template", "head", "datalist"}) ||
        (tag.name == "dialog" && !tag.open))
        return {element_end(tag.name, tag.end), true};
    return {tag.end, false};
}

}  // namespace

std::size_t remove_hidden_html(std::vector<Unit>& u) {
    Scan scan(u);
    const std::size_t n = u.size();
    std::size_t w = 0, removed = 0;
    for (std::size_t i = 0; i < n;) {
        const char32_t c = u[i].cp;
        if (c != '<' && c != '&') {
            u[w++] = u[i++];
            continue;
        }
        const auto [end, hides] = scan.construct(i);
        if (hides) {
            removed += end - i;
        } else {
            for (std::size_t k = i; k < end; ++k) u[w++] = u[k];
        }
        i = end;
    }
    u.resize(w);
    return removed;
}

}  // namespace agency::base::untrusted
