#include "server/json_rpc.hpp"

#include <array>
#include <cstdint>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace agency::mcp {

MessageKind classify(const json& message) {
    if (!message.is_object()) return MessageKind::invalid;
    auto version = message.find("jsonrpc");
    if (version == message.end() || *version != "2.0") return MessageKind::invalid;
    auto id = message.find("id");
    bool has_id = id != message.end();
    // ids are strings or integers, never null (MCP narrows JSON-RPC here).
    if (has_id && !(id->is_string() || id->is_number_integer())) return MessageKind::invalid;
    auto method = message.find("method");
    if (method != message.end()) {
        if (!method->is_string()) return MessageKind::invalid;
        auto params = message.find("params");
        if (params != message.end() && !params->is_object() && !params->is_array())
            return MessageKind::invalid;
        return has_id ? MessageKind::request : MessageKind::notification;
    }
    if (has_id && (message.contains("result") || message.contains("error")))
        return MessageKind::response;
    return MessageKind::invalid;
}

std::string check_json_limits(std::string_view text, const JsonLimits& limits) {
    std::size_t depth = 0;
    bool in_string = false;
    std::size_t string_start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\0') return "the message contains a NUL byte";
        if (in_string) {
            if (c == '\\') {
                ++i;  // the escaped byte cannot end the string
                if (i < text.size() && text[i] == '\0') return "the message contains a NUL byte";
            } else if (c == '"') {
                in_string = false;
                if (i - string_start > limits.max_string_bytes)
                    return "a string is longer than " + std::to_string(limits.max_string_bytes) +
                           " bytes";
            }
            continue;
        }
        switch (c) {
            case '"':
                in_string = true;
                string_start = i + 1;
                break;
            case '[':
            case '{':
                if (++depth > limits.max_depth)
                    return "nested deeper than " + std::to_string(limits.max_depth) + " levels";
                break;
            case ']':
            case '}':
                if (depth > 0) --depth;  // unbalanced text is the parser's to refuse
                break;
            default: break;
        }
    }
    if (in_string && text.size() - string_start > limits.max_string_bytes)
        return "a string is longer than " + std::to_string(limits.max_string_bytes) + " bytes";
    return {};
}

ParsedMessage parse_message(std::string_view text, const JsonLimits& limits) {
    ParsedMessage out;
    if (std::string why = check_json_limits(text, limits); !why.empty()) {
        // A NUL byte makes the text invalid JSON; the other limits refuse valid JSON.
        const bool nul = why.find("NUL") != std::string::npos;
        out.error = Reply::error(nullptr,
                                 nul ? error_code::parse_error : error_code::invalid_request,
                                 (nul ? "parse error: " : "message refused: ") + why);
        return out;
    }
    out.message = json::parse(text, nullptr, false);
    if (out.message.is_discarded()) {
        out.message = nullptr;
        out.error = Reply::error(nullptr, error_code::parse_error,
                                 "parse error: the message is not valid JSON");
    }
    return out;
}

json make_error(const json& id, int code, std::string_view message, const json& data) {
    json error = {{"code", code}, {"message", message}};
    if (!data.is_null()) error["data"] = data;
    json out = {{"jsonrpc", "2.0"}, {"error", std::move(error)}};
    // An unreadable id is answered with null, as JSON-RPC requires.
    out["id"] = (id.is_string() || id.is_number_integer()) ? id : json(nullptr);
    return out;
}

std::string make_error_text(const json& id, int code, std::string_view message,
                            const json& data) {
    return make_error(id, code, message, data).dump(-1, ' ', false,
                                                    json::error_handler_t::replace);
}

Reply Reply::error(const json& id, int code, std::string_view message, const json& data) {
    Reply reply(make_error_text(id, code, message, data));
    reply.error_code = code;
    if (code == error_code::rate_limited) {
        const long long wait = data.is_object() ? data.value("retryAfterSeconds", 1LL) : 1LL;
        reply.retry_after_s = wait < 1 ? 1 : wait;
    }
    return reply;
}

namespace {

// Extra bytes each byte takes once escaped: 1 for \" \\ \n \r \t \b \f, 5 for other
// control characters (\u00XX), 0 for the rest.
constexpr std::array<std::uint8_t, 256> kEscapeExtra = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = 5;
    for (unsigned char c : {'"', '\\', '\n', '\r', '\t', '\b', '\f'}) t[c] = 1;
    return t;
}();

// Appends `text` escaped, starting at `w` (room reserved by the caller); returns the end.
char* escape_into(char* w, const unsigned char* in, std::size_t n) {
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char c = in[i];
        if (kEscapeExtra[c] == 0) {
            *w++ = static_cast<char>(c);
            continue;
        }
        *w++ = '\\';
        switch (c) {
            case '"': *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '\n': *w++ = 'n'; break;
            case '\r': *w++ = 'r'; break;
            case '\t': *w++ = 't'; break;
            case '\b': *w++ = 'b'; break;
            case '\f': *w++ = 'f'; break;
            default:
                *w++ = 'u';
                *w++ = '0';
                *w++ = '0';
                *w++ = hex[c >> 4];
                *w++ = hex[c & 0xF];
        }
    }
    return w;
}


#ifdef __SSE2__
// Bytes of a 16-byte block that are '"' or '\\'.
inline unsigned quote_mask(__m128i block) {
    return static_cast<unsigned>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')),
                     _mm_cmpeq_epi8(block, _mm_set1_epi8('\\')))));
}
// Bytes of a 16-byte block that are control characters (<= 0x1F).
inline unsigned control_mask(__m128i block) {
    const __m128i below_space = _mm_set1_epi8(0x1F);
    return static_cast<unsigned>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(block, below_space), below_space)));
}
#endif

}  // namespace

// Tool answers run every page of rows through here (content[0].text: a JSON text inside a JSON
// string, a quote every few bytes), so it works 16 bytes at a time where SSE2 is there: one
// pass counts the escapes (the output grows once, to its exact size), the second copies the
// runs between them with 16-byte stores.
std::size_t json_string_size(std::string_view text) {
    const auto* in = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t extra = 0;
    std::size_t i = 0;
#ifdef __SSE2__
    // Quotes are counted in byte lanes (a match is -1, so subtracting adds one), summed before
    // a lane can overflow; control characters are rare and looked up one by one.
    __m128i lanes = _mm_setzero_si128();
    int blocks = 0;
    auto sum_lanes = [&] {
        const __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
        extra += static_cast<std::size_t>(_mm_cvtsi128_si32(sums)) +
                 static_cast<std::size_t>(_mm_extract_epi16(sums, 4));
        lanes = _mm_setzero_si128();
        blocks = 0;
    };
    for (; i + 16 <= n; i += 16) {
        const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        lanes = _mm_sub_epi8(lanes, _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')),
                                                 _mm_cmpeq_epi8(block, _mm_set1_epi8('\\'))));
        if (++blocks == 255) sum_lanes();
        for (unsigned c = control_mask(block); c != 0; c &= c - 1)
            extra += kEscapeExtra[in[i + static_cast<std::size_t>(__builtin_ctz(c))]];
    }
    sum_lanes();
#endif
    for (; i < n; ++i) extra += kEscapeExtra[in[i]];
    return n + extra + 2;
}

void append_json_string(std::string& out, std::string_view text) {
    append_json_string(out, text, json_string_size(text));
}

void append_json_string(std::string& out, std::string_view text, std::size_t literal_size) {
    const auto* in = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    // 16 bytes of slack for the block stores, cut off at the end.
    const std::size_t at = out.size();
    const std::size_t size = literal_size;
    out.resize(at + size + 16);
    char* w = out.data() + at;
    *w++ = '"';
    i = 0;
#ifdef __SSE2__
    // Each store copies 16 bytes from the read position, so reads stay within `text` only
    // while a block and the one after it are whole.
    for (; i + 32 <= n; i += 16) {
        const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        unsigned mask = quote_mask(block) | control_mask(block);
        std::size_t j = i;  // next byte to copy
        for (; mask != 0; mask &= mask - 1) {
            const std::size_t e = i + static_cast<std::size_t>(__builtin_ctz(mask));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(w),
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j)));
            w += e - j;
            const unsigned char c = in[e];
            if (c == '"' || c == '\\') {
                w[0] = '\\';
                w[1] = static_cast<char>(c);
                w += 2;
            } else {
                w = escape_into(w, in + e, 1);
            }
            j = e + 1;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(w),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j)));
        w += i + 16 - j;
    }
#endif
    w = escape_into(w, in + i, n - i);
    *w = '"';
    out.resize(at + size);
}

}  // namespace agency::mcp
