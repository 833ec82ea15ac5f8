// Third-party text as an assistant may read it. Whatever a gateway returns (articles, reviews,
// e-mails, call transcripts, page titles) may carry instructions aimed at the assistant where a
// person reading the same text would not see them: invisible Unicode (tag characters, bidi
// controls, zero-width characters) and hidden HTML (comments, script and style, elements
// marked hidden). These functions remove exactly that; visible text stays as it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agency::base {

// `text` without invisible characters and hidden HTML (docs/security.md, "Threat model:
// untrusted text", lists what is removed). Never longer than `text`; cleaning twice changes
// nothing more.
std::string clean_untrusted_text(std::string_view text);

// `text` without invisible characters only; HTML stays (for text that is already plain, where a
// '<' is visible: a preview built from cleaned parts).
std::string strip_invisible_text(std::string_view text);

// Whether clean_untrusted_text would change `text` (no allocation for clean text).
bool holds_hidden_text(std::string_view text);

// Cleans every string of JSON text (member names too) in one linear pass over the text, with
// no DOM: the values of id members (`id`, `*_id`, `*_ids`, `*Id`, `uuid`, ...) stay exact,
// since later calls pass them back. Only whole characters or escapes inside strings are
// removed, so the output is valid JSON whenever the input was, never longer, and cleaning it
// again changes nothing. Literal UTF-8 and \uXXXX escapes (surrogate pairs too) are read
// alike; what is kept is copied as the input wrote it.
class UntrustedJsonCleaner {
public:
    // html = false: invisible characters only (JSON built from text that is already plain).
    explicit UntrustedJsonCleaner(bool html = true) : html_(html) {}

    // `json` itself when nothing in it needs removing (no copy), else a view of the cleaned
    // text, valid until the next call.
    std::string_view clean(std::string_view json);

    struct Unit {
        char32_t cp;        // the character (kInvalid: a byte that is not UTF-8)
        std::uint32_t at;   // where its text starts in the string's content
        std::uint32_t len;  // bytes of its text (a literal character or an escape)
    };

private:
    bool html_;
    std::string out_;
    std::vector<std::uint8_t> stack_;
    std::vector<Unit> units_;
    std::string key_;
};

// Cleans `json` in place; true when it changed.
bool clean_untrusted_json(std::string& json);

}  // namespace agency::base
