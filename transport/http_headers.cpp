#include "transport/http_headers.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "base/crypto.hpp"
#include "base/text.hpp"
#include "server/method_table.hpp"

namespace agency::mcp {

std::string host_part(const std::string& authority) {
    if (!authority.empty() && authority.front() == '[') {
        auto end = authority.find(']');
        return base::ascii_lower(
            authority.substr(0, end == std::string::npos ? authority.size() : end + 1));
    }
    auto colon = authority.rfind(':');
    return base::ascii_lower(colon == std::string::npos ? authority : authority.substr(0, colon));
}

std::optional<std::string> parse_origin(const std::string& origin, std::string& host) {
    const auto scheme_end = origin.find("://");
    if (scheme_end == std::string::npos) return std::nullopt;
    const std::string scheme = base::ascii_lower(origin.substr(0, scheme_end));
    if (scheme != "http" && scheme != "https") return std::nullopt;
    const std::string rest = base::ascii_lower(origin.substr(scheme_end + 3));
    std::size_t port_at = std::string::npos;
    if (!rest.empty() && rest.front() == '[') {
        const auto close = rest.find(']');
        if (close == std::string::npos || close == 1) return std::nullopt;
        for (std::size_t i = 1; i < close; ++i)
            if (!std::isxdigit(static_cast<unsigned char>(rest[i])) && rest[i] != ':' &&
                rest[i] != '.')
                return std::nullopt;
        host = rest.substr(0, close + 1);
        if (close + 1 < rest.size()) {
            if (rest[close + 1] != ':') return std::nullopt;
            port_at = close + 2;
        }
    } else {
        const auto colon = rest.find(':');
        host = rest.substr(0, colon);
        if (host.empty()) return std::nullopt;
        for (char c : host)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
                return std::nullopt;
        if (colon != std::string::npos) port_at = colon + 1;
    }
    if (port_at != std::string::npos) {
        const std::string port = rest.substr(port_at);
        if (port.empty() || port.size() > 5 ||
            port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
            return std::nullopt;
    }
    return scheme + "://" + rest;
}

bool valid_session_id(const std::string& id) {
    return std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

std::string trimmed(std::string_view value) { return std::string(base::trim(value)); }

std::optional<std::string> decode_header_value(const std::string& value) {
    if (value.size() < 11 || value.rfind("=?base64?", 0) != 0 ||
        value.compare(value.size() - 2, 2, "?=") != 0)
        return value;
    std::string b64 = value.substr(9, value.size() - 11);
    if (b64.size() % 4 != 0) return std::nullopt;
    auto pad = b64.find('=');
    if (pad != std::string::npos &&
        (b64.size() - pad > 2 || b64.find_first_not_of('=', pad) != std::string::npos))
        return std::nullopt;
    std::string body = b64.substr(0, pad == std::string::npos ? b64.size() : pad);
    for (char& c : body) {
        if (c == '+') c = '-';
        else if (c == '/') c = '_';
        else if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
    }
    return crypto::base64url_decode(body);
}

std::optional<std::string> header_form(const json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean() || value.is_number_integer()) return value.dump();
    return std::nullopt;
}

bool is_loopback_host(const std::string& host) {
    std::string h = base::ascii_lower(host);
    return h == "127.0.0.1" || h == "localhost" || h == "::1" || h == "[::1]" ||
           h.rfind("127.", 0) == 0;
}

namespace {

// The Mcp-Param-* headers a tool call mirrors its arguments into (x-mcp-header): each must be
// present when its argument is, and carry the argument's text form.
std::optional<std::string> param_headers_mismatch(const httplib::Request& req, const json& params,
                                                  const Server& server) {
    static const json no_arguments = json::object();
    const json& args = params.contains("arguments") && params["arguments"].is_object()
                           ? params["arguments"]
                           : no_arguments;
    auto tool_name = params.find("name");
    const std::string tool = tool_name != params.end() && tool_name->is_string()
                                 ? tool_name->get<std::string>()
                                 : std::string();
    for (const auto& [arg, header] : server.header_params(tool)) {
        std::string header_name = std::string(kHeaderParamPrefix) + header;
        auto it = args.find(arg);
        std::optional<std::string> expected = it == args.end() ? std::nullopt : header_form(*it);
        if (!req.has_header(header_name)) {
            if (expected) return "the " + header_name + " header is required";
            continue;
        }
        auto got = decode_header_value(trimmed(req.get_header_value(header_name)));
        if (!got) return header_name + " is not valid base64";
        if (!expected || *got != *expected)
            return header_name + " does not match the argument " + arg;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> routing_mismatch(const httplib::Request& req,
                                            const Incoming& message,
                                            const std::string& version_header,
                                            const Server& server) {
    const json& params = message.params();
    const std::string& method = message.method;
    if (version_header.empty()) return "the MCP-Protocol-Version header is required";
    const bool has_meta = params.contains("_meta") && params["_meta"].is_object();
    const json meta = has_meta ? params["_meta"] : json::object();
    auto meta_version = meta.find(kMetaVersion);
    if (meta_version == meta.end() || !meta.contains(kMetaCapabilities)) return std::nullopt;
    if (!meta_version->is_string() || *meta_version != version_header)
        return "MCP-Protocol-Version is " + version_header + " but params._meta says " +
               meta_version->dump();
    const std::string method_header_name(kHeaderMethod);
    if (!req.has_header(method_header_name)) return "the Mcp-Method header is required";
    std::string method_header = trimmed(req.get_header_value(method_header_name));
    if (method_header != method)
        return "Mcp-Method is " + method_header + " but the body's method is " + method;
    const MethodEntry* entry = message.entry;
    const std::string name_field(entry ? entry->name_param : std::string_view());
    if (!name_field.empty()) {
        const std::string name_header_name(kHeaderName);
        if (!req.has_header(name_header_name))
            return std::string("the Mcp-Name header is required for ") + method;
        std::string name_header =
            decode_header_value(trimmed(req.get_header_value(name_header_name))).value_or("");
        std::string body_name = params.contains(name_field) && params[name_field].is_string()
                                    ? params[name_field].get<std::string>()
                                    : std::string();
        if (name_header != body_name)
            return "Mcp-Name is " + name_header + " but the body's " + name_field + " is " +
                   body_name;
    }
    if (method == "tools/call") return param_headers_mismatch(req, params, server);
    return std::nullopt;
}

namespace {

// "a, b,c" -> {"a", "b", "c"}; blanks and empty items dropped.
std::vector<std::string> name_list(const std::string& value) {
    std::vector<std::string> names;
    std::size_t start = 0;
    while (start <= value.size()) {
        std::size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        std::string name = trimmed(std::string_view(value).substr(start, comma - start));
        if (!name.empty()) names.push_back(std::move(name));
        start = comma + 1;
    }
    return names;
}

}  // namespace

std::optional<std::string> narrow_by_headers(const httplib::Request& req, const Server& server,
                                             Principal& principal) {
    ToolSelection& selection = principal.selection;
    selection.groups = name_list(req.get_header_value("X-MCP-Toolsets"));
    selection.tools = name_list(req.get_header_value("X-MCP-Tools"));
    selection.exclude = name_list(req.get_header_value("X-MCP-Exclude-Tools"));
    if (selection.narrows()) {
        auto problem = server.check_tool_selection(selection);
        if (!problem.empty()) return "X-MCP-Toolsets/X-MCP-Tools/X-MCP-Exclude-Tools: " + problem;
    }
    if (req.has_header("X-MCP-Readonly")) {
        const std::string value = base::ascii_lower(trimmed(req.get_header_value("X-MCP-Readonly")));
        if (value == "true" || value == "1" || value == "yes") {
            std::erase(principal.scopes, std::string("write"));
            principal.may_step_up = false;  // the request asked for reads only
        }
        else if (value != "false" && value != "0" && value != "no")
            return "X-MCP-Readonly must be true or false, got \"" + value.substr(0, 40) + "\"";
    }
    return std::nullopt;
}

}  // namespace agency::mcp
