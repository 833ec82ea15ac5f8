// The sanitiser of third-party text (base/untrusted_text.hpp), on any bytes: as plain text and
// as JSON text. Checks that cleaning never grows the text, that cleaning again changes nothing,
// and that JSON text the parser accepted is still accepted once cleaned (only whole characters
// or escapes inside strings are ever removed).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/untrusted_text.hpp"

namespace {

[[noreturn]] void fail(const char* what, std::string_view input, std::string_view output) {
    std::fprintf(stderr, "untrusted text: %s\ninput (%zu bytes): %.*s\noutput (%zu bytes): %.*s\n",
                 what, input.size(), static_cast<int>(std::min<std::size_t>(input.size(), 2000)),
                 input.data(), output.size(),
                 static_cast<int>(std::min<std::size_t>(output.size(), 2000)), output.data());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    using agency::base::clean_untrusted_text;

    const std::string text = clean_untrusted_text(input);
    if (text.size() > input.size()) fail("plain text grew", input, text);
    if (clean_untrusted_text(text) != text) fail("plain text: a second pass changed it", input, text);
    if (agency::base::holds_hidden_text(text)) fail("plain text: still holds hidden text", input, text);
    const std::string invisible = agency::base::strip_invisible_text(input);
    if (invisible.size() > input.size()) fail("strip_invisible grew", input, invisible);
    if (agency::base::strip_invisible_text(invisible) != invisible)
        fail("strip_invisible: a second pass changed it", input, invisible);

    agency::base::UntrustedJsonCleaner cleaner;
    const std::string once(cleaner.clean(input));
    if (once.size() > input.size()) fail("JSON grew", input, once);
    const std::string twice(cleaner.clean(once));
    if (twice != once) fail("JSON: a second pass changed it", input, once);
    if (nlohmann::json::accept(input) && !nlohmann::json::accept(once))
        fail("valid JSON became invalid", input, once);
    return 0;
}
