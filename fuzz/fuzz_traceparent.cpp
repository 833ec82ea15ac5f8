// The W3C traceparent parser (base/trace_context.hpp), on any bytes: what a caller puts in
// params._meta.traceparent or the HTTP traceparent header. Checks that what is accepted is
// well formed (lowercase hex ids, not all zeros), that the header the server sends on for it
// parses back to the same trace, and that an accepted version-00 value is exactly that header.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/trace_context.hpp"

namespace {

[[noreturn]] void fail(const char* what, std::string_view input) {
    std::fprintf(stderr, "traceparent: %s\ninput (%zu bytes): %.*s\n", what, input.size(),
                 static_cast<int>(std::min<std::size_t>(input.size(), 200)), input.data());
    std::abort();
}

bool lower_hex_nonzero(std::string_view id) {
    bool nonzero = false;
    for (const char c : id) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
        nonzero = nonzero || c != '0';
    }
    return nonzero;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const auto parsed = agency::base::parse_traceparent(input);
    if (!parsed) return 0;
    if (!lower_hex_nonzero(parsed->trace_id_hex()) || !lower_hex_nonzero(parsed->span_id_hex()))
        fail("accepted an id that is not lowercase hex or is all zeros", input);
    const std::string header = parsed->header();
    if (header.size() != 55) fail("the header sent on is not 55 characters", input);
    const auto again = agency::base::parse_traceparent(header);
    if (!again || again->trace_id_hex() != parsed->trace_id_hex() ||
        again->span_id_hex() != parsed->span_id_hex() || again->flags != parsed->flags)
        fail("the header sent on does not parse back to the same trace", input);
    if (input.substr(0, 3) == "00-" && header != input)
        fail("an accepted version-00 value differs from the header made of it", input);
    const auto child = agency::base::child_span(*parsed);
    if (child.trace_id_hex() != parsed->trace_id_hex() || !lower_hex_nonzero(child.span_id_hex()))
        fail("a child span left the trace or has a bad span id", input);
    return 0;
}
