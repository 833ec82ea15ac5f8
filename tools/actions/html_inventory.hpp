// What an article's or e-mail's HTML holds besides its text, as a reader of the published page
// or the e-mail meets it: forms and their fields, buttons, SVG text, frames and embeds, links
// whose text is not where they go, and images loaded from elsewhere. One answer to "what is
// published or sent", read by the preview's members, the form's and the two-step preview's
// message, and the approval view (issue 45).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tools/pipeline/pipeline.hpp"

namespace agency::tools {

// What html_inventory found. Lists are bounded (kMaxListed each, URLs cut at kMaxUrlChars);
// `counts` and `unlisted` count every item, listed or not. Every text is cleaned gateway text.
struct HtmlInventory {
    static constexpr std::size_t kMaxListed = 10;
    static constexpr std::size_t kMaxUrlChars = 300;
    // [{text, href, misleading}]: links whose visible text is not their target; misleading
    // when the text itself reads as an address elsewhere. Those come first.
    json links = json::array();
    json remote_images = json::array();  // [url]: images a reader's client loads from elsewhere
    // [{kind, description}]: what a text preview cannot show (form, input, button, select,
    // textarea, svg, math, iframe, embed, object, video, audio, canvas).
    json interactive = json::array();
    json counts = json::object();  // kind ("password_field" too) -> how many, listed or not
    std::size_t unlisted = 0;      // items left out of the three lists by the limits

    bool empty() const { return links.empty() && remote_images.empty() && interactive.empty(); }
};

// The inventory of `html` as a browser would show it: hidden parts (comments, hidden elements:
// base::clean_untrusted_text) are left to the hidden_text note and not listed here. Reads at
// most 256 KiB.
HtmlInventory html_inventory(std::string_view html);

// The lines a preview's message carries, each in brackets like the hidden-text note ("" when
// the inventory is empty). `what` is "article" or "e-mail".
std::string inventory_note(const HtmlInventory& inventory, std::string_view what);

// Adds the preview members: links, remote_images, interactive, interactive_counts and
// contents_unlisted (always present, empty when there is nothing).
void add_inventory(json& details, const HtmlInventory& inventory);

}  // namespace agency::tools
