#include "server/json_rpc.hpp"

#include <array>
#include <cstdint>
#include <cstring>

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

namespace {

// Extra bytes each byte takes once escaped: 1 for \" \\ \n \r \t \b \f, 5 for other
// control characters (\u00XX), 0 for the rest.
constexpr std::array<std::uint8_t, 256> kEscapeExtra = [] {
    std::array<std::uint8_t, 256> t{};
    for (int c = 0; c < 0x20; ++c) t[static_cast<std::size_t>(c)] = 5;
    for (unsigned char c : {'"', '\\', '\n', '\r', '\t', '\b', '\f'}) t[c] = 1;
    return t;
}();

}  // namespace

// Tool answers run every page of rows through here (content[0].text), so it is written for
// speed: one pass that the compiler vectorises counts what needs a backslash, the output grows
// once, and the common case (no control characters) copies without a branch per byte.
void append_json_string(std::string& out, std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    const auto* in = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t quotes = 0;  // '"' and '\\'
    unsigned control = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char c = in[i];
        quotes += static_cast<std::size_t>((c == '"') | (c == '\\'));
        control |= static_cast<unsigned>(c < 0x20);
    }
    const std::size_t at = out.size();
    if (control == 0) {
        out.resize(at + n + quotes + 2);
        char* w = out.data() + at;
        *w++ = '"';
        if (quotes == 0) {
            std::memcpy(w, in, n);
            w += n;
        } else {
            for (std::size_t i = 0; i < n; ++i) {
                const unsigned char c = in[i];
                *w = '\\';
                w += (c == '"') | (c == '\\');
                *w++ = static_cast<char>(c);
            }
        }
        *w = '"';
        return;
    }
    std::size_t extra = 0;
    for (std::size_t i = 0; i < n; ++i) extra += kEscapeExtra[in[i]];
    out.resize(at + n + extra + 2);
    char* w = out.data() + at;
    *w++ = '"';
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
    *w = '"';
}

}  // namespace agency::mcp
