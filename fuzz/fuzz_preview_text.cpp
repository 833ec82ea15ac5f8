// The text a person approves (tools/actions/preview_text.cpp): a gateway's article or e-mail HTML as
// plain text for a confirmation form. Input: one byte for the character budget, then the HTML.
// Checks the budget (characters counted as UTF-8 lead bytes), that no character is split
// (whole UTF-8 in, whole UTF-8 out), and that a body no longer than the budget in plain text is never said to be cut.
// The same bytes as a caller's plain-text e-mail body (as_html, tools/actions/outreach_fields.cpp): the
// HTML a send posts shows a person the very words typed (blanks aside). The same HTML's inventory
// (tools/actions/html_inventory.cpp: forms, links elsewhere, remote images): its lists stay within their
// bounds, its URLs within their length, and its note stays whole UTF-8.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tools/actions/action_internal.hpp"
#include "tools/actions/html_inventory.hpp"
#include "tools/actions/outreach_internal.hpp"

namespace {

[[noreturn]] void fail(const char* what, std::string_view input) {
    std::fprintf(stderr, "preview text: %s\ninput (%zu bytes): %.*s\n", what, input.size(),
                 static_cast<int>(std::min<std::size_t>(input.size(), 2000)), input.data());
    std::abort();
}

// Lead bytes each followed by as many continuation bytes as they announce (the structure a
// cut could break; overlong forms and surrogates are not this check's business).
bool whole_utf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const std::size_t n = c < 0x80 ? 1 : c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3
                              : c >= 0xC0                          ? 2 : 0;
        if (n == 0 || i + n > text.size()) return false;
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
        i += n;
    }
    return true;
}

std::string without_blanks(std::string_view text) {
    std::string out;
    for (char c : text)
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != '\v') out += c;
    return out;
}

std::size_t characters(std::string_view text) {
    std::size_t n = 0;
    for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t budget = data[0] * 8u + 1;
    const std::string_view html(reinterpret_cast<const char*>(data + 1), size - 1);
    bool cut = false;
    const std::string text = agency::tools::plain_text(html, budget, &cut);
    if (characters(text) > budget) fail("more characters than the budget", html);
    // A cut never splits a character: whole UTF-8 in, whole UTF-8 out.
    if (whole_utf8(html) && !whole_utf8(text)) fail("a character was split", html);
    if (!cut && html.find('<') == std::string_view::npos && html.find('&') == std::string_view::npos &&
        characters(html) < budget / 2 && characters(text) > characters(html))
        fail("plain text grew", html);
    const auto inventory = agency::tools::html_inventory(html);
    using Inventory = agency::tools::HtmlInventory;
    for (const auto* list : {&inventory.links, &inventory.remote_images, &inventory.interactive})
        if (list->size() > Inventory::kMaxListed) fail("an inventory list past its bound", html);
    for (const auto& link : inventory.links)
        if (link.value("href", "").size() > Inventory::kMaxUrlChars + 3)
            fail("a listed URL past its length", html);
    if (whole_utf8(html) && !whole_utf8(agency::tools::inventory_note(inventory, "article")))
        fail("the inventory's note split a character", html);
    // A typed body without markup or entities: what is posted reads back as the words typed.
    if (html.find('<') == std::string_view::npos && html.find('&') == std::string_view::npos &&
        whole_utf8(html) && html.size() < 4096) {
        const std::string posted = agency::tools::as_html(html);
        if (without_blanks(agency::tools::plain_text(posted, 8192)) !=
            without_blanks(agency::tools::plain_text(html, 8192)))
            fail("a typed body reads back as other words", html);
    }
    return 0;
}
