#include "base/trace_context.hpp"

#include <random>
#include <utility>

namespace agency::base {

namespace {

thread_local std::shared_ptr<const CallTrace> t_current;

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

// `size` lowercase hex digits from `at`, not all zeros.
bool hex_id(std::string_view text, std::size_t at, std::size_t size) {
    bool nonzero = false;
    for (std::size_t i = at; i < at + size; ++i) {
        if (!is_lower_hex(text[i])) return false;
        nonzero = nonzero || text[i] != '0';
    }
    return nonzero;
}

// Trace ids need to be unique, not secret: a per-thread generator seeded once from the
// system's entropy costs a few nanoseconds per id.
void fill_random_hex(char* out, std::size_t size) {
    thread_local std::mt19937_64 generator{[] {
        std::random_device device;
        return (static_cast<std::uint64_t>(device()) << 32) ^ device();
    }()};
    static constexpr char kDigits[] = "0123456789abcdef";
    bool nonzero = false;
    while (!nonzero) {
        for (std::size_t i = 0; i < size; i += 16) {
            std::uint64_t bits = generator();
            for (std::size_t j = i; j < size && j < i + 16; ++j, bits >>= 4) {
                out[j] = kDigits[bits & 0xf];
                nonzero = nonzero || out[j] != '0';
            }
        }
    }
}

}  // namespace

std::string TraceParent::header() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(55);
    out += "00-";
    out.append(trace_id.data(), trace_id.size());
    out += '-';
    out.append(span_id.data(), span_id.size());
    out += '-';
    out += kDigits[flags >> 4];
    out += kDigits[flags & 0xf];
    return out;
}

std::optional<TraceParent> parse_traceparent(std::string_view text) {
    constexpr std::size_t kSize = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
    if (text.size() < kSize) return std::nullopt;
    if (!is_lower_hex(text[0]) || !is_lower_hex(text[1])) return std::nullopt;
    const std::string_view version = text.substr(0, 2);
    if (version == "ff") return std::nullopt;
    // Version 00 is exactly 55 characters; a later one may add fields after a '-'.
    if (text.size() != kSize && (version == "00" || text[kSize] != '-')) return std::nullopt;
    if (text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
    if (!hex_id(text, 3, 32) || !hex_id(text, 36, 16)) return std::nullopt;
    if (!is_lower_hex(text[53]) || !is_lower_hex(text[54])) return std::nullopt;
    TraceParent out;
    text.copy(out.trace_id.data(), 32, 3);
    text.copy(out.span_id.data(), 16, 36);
    out.flags = static_cast<std::uint8_t>(hex_value(text[53]) * 16 + hex_value(text[54]));
    return out;
}

TraceParent start_trace() {
    TraceParent out;
    fill_random_hex(out.trace_id.data(), out.trace_id.size());
    fill_random_hex(out.span_id.data(), out.span_id.size());
    return out;
}

TraceParent child_span(const TraceParent& parent) {
    TraceParent out = parent;
    fill_random_hex(out.span_id.data(), out.span_id.size());
    return out;
}

const CallTrace* current_call_trace() { return t_current.get(); }

std::shared_ptr<const CallTrace> shared_call_trace() { return t_current; }

CallTraceScope::CallTraceScope(std::shared_ptr<const CallTrace> trace)
    : previous_(std::exchange(t_current, std::move(trace))) {}

CallTraceScope::~CallTraceScope() { t_current = std::move(previous_); }

}  // namespace agency::base
