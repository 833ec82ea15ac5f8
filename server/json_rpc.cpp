#include "server/json_rpc.hpp"

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

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    out.reserve(out.size() + text.size() + 2);
    out.push_back('"');
    std::size_t run_start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out.append(text.data() + run_start, i - run_start);
        run_start = i + 1;
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                out += "\\u00";
                out.push_back(hex[c >> 4]);
                out.push_back(hex[c & 0xF]);
        }
    }
    out.append(text.data() + run_start, text.size() - run_start);
    out.push_back('"');
}

}  // namespace agency::mcp
