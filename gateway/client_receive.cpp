// What one exchange reads of the gateway's answer, counted: its head's headers, its body
// against the response limit (after decoding), and the call's deadline (issue 30). The
// plain-HTTP client counts the bytes underneath, head and framing included (plain_client.cpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>

#include <simdjson.h>

#include "gateway/client_internal.hpp"

namespace agency::gateway::internal {

std::string bytes_text(std::uint64_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes) / 1024;
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < std::size(kUnits)) {
        value /= 1024;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, value == std::floor(value) ? "%.0f %s" : "%.1f %s", value,
                  kUnits[unit]);
    return text;
}

namespace {

std::string response_limit_text(std::size_t cap) {
    return "the " + bytes_text(cap) + " limit on a response (--gateway-max-response-bytes)";
}

}  // namespace

bool Receiving::on_head(const httplib::Response& res) {
    status = res.status;
    // Over TLS, records already taken in may complete a head after the meter's limit.
    if (meter.hit != LimitHit::none) return false;
    meter.in_head = false;
    if (res.headers.size() > kMaxHeaderCount) {
        over_limit = "the gateway's answer carried " + std::to_string(res.headers.size()) +
                     " headers, over the limit of " + std::to_string(kMaxHeaderCount) +
                     "; its body was not read";
        return false;
    }
    std::size_t head_bytes = 0;
    for (const auto& [name, value] : res.headers) head_bytes += name.size() + value.size() + 4;
    if (head_bytes > kMaxHeadBytes) {
        over_limit = "the gateway's answer headers passed " + bytes_text(kMaxHeadBytes) +
                     "; its body was not read";
        return false;
    }
    const auto header = res.get_header_value("Content-Length");
    std::uint64_t length = 0;
    std::from_chars(header.data(), header.data() + header.size(), length);
    if (length > cap) {  // refused before a byte of the body is read
        over_limit = "the gateway announced an answer of " + bytes_text(length) + ", over " +
                     response_limit_text(cap) + "; none of it was read";
        return false;
    }
    if (length > 0) {
        out.reserve(static_cast<std::size_t>(length) + simdjson::SIMDJSON_PADDING);
        if (plain != nullptr) sinking = plain->expect_body_into(res, length, out);
    }
    return !stop.stop_requested();
}

bool Receiving::on_body(const char* data, std::size_t size) {
    if (stop.stop_requested() || meter.hit != LimitHit::none) return false;
    if (std::chrono::steady_clock::now() >= deadline) {
        deadline_hit = true;
        return false;
    }
    received += size;  // after decoding: a compressed body counts as what it becomes
    if (all_receiving != nullptr && all_receiving->fetch_add(size) + size > all_cap) {
        over_limit = "the gateway's answers being read at once passed " + bytes_text(all_cap) +
                     " (all connections together: many large answers at once); nothing more "
                     "of this one was read";
        return false;
    }
    if (received > cap) {
        over_limit =
            "the gateway's answer passed " + response_limit_text(cap) + "; nothing more was read";
        return false;
    }
    if (sinking) return true;  // already in `out`
    if (out.size() + size > out.capacity()) {
        // Doubling, but never past the limit: a body of unknown length holds at most that.
        const auto want = std::max(out.capacity() * 2, out.size() + size);
        out.reserve(std::min(want, cap) + simdjson::SIMDJSON_PADDING);
    }
    out.append(data, size);
    return true;
}

void Receiving::finish(Exchange& ex) const {
    ex.over_limit = over_limit;
    ex.deadline_hit = deadline_hit;
    if (over_limit.empty()) {
        switch (meter.hit) {
            case LimitHit::head:
                ex.over_limit = "the gateway's answer head (status line and headers) passed " +
                                bytes_text(kMaxHeadBytes) + "; nothing more was read";
                break;
            case LimitHit::total:
                ex.over_limit = "the gateway's answer passed " + response_limit_text(cap) +
                                " with its framing; nothing more was read";
                break;
            case LimitHit::deadline: ex.deadline_hit = true; break;
            case LimitHit::none: break;
        }
    }
    // What the gateway answered, when it got that far.
    if (!ex.over_limit.empty()) ex.status = status;
    if (ex.deadline_hit) ex.timed_out = true;
}

}  // namespace agency::gateway::internal
