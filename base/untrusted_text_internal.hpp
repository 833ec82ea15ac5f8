// The pieces of base/untrusted_text.cpp that base/hidden_html.cpp shares.
#pragma once

#include <cstddef>
#include <vector>

#include "base/untrusted_text.hpp"

namespace agency::base::untrusted {

using Unit = UntrustedJsonCleaner::Unit;

// A byte that is not part of valid UTF-8 (or a lone surrogate escape): always removed.
constexpr char32_t kInvalid = 0xFFFFFFFF;

// A character removed wherever it stands (tag characters, bidi controls, zero-width spaces,
// control characters, ...).
bool always_invisible(char32_t cp);

// A character kept only in a plausible sequence (ZWJ in an emoji or an Indic word, ZWNJ in an
// Arabic or Indic word, a variation selector after a character that has variants).
bool contextual(char32_t cp);

// Removes hidden HTML (comments, script/style/..., elements marked hidden, character
// references to invisible characters) from `units`, in place; the number of units removed.
std::size_t remove_hidden_html(std::vector<Unit>& units);

}  // namespace agency::base::untrusted
