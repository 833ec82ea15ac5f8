// How the Streamable HTTP transport writes its answers (see http_replies.hpp).
#include "server/http_replies.hpp"

#include <utility>

namespace agency::mcp {

// A request that carries a body (announced by length or chunked).
bool has_body(const httplib::Request& req) {
    return req.has_header("Transfer-Encoding") ||
           (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

// The connection cannot carry another request: its body was left unread.
void close_after(httplib::Response& res) { res.set_header("Connection", "close"); }

// Response::set_content as httplib 0.11 does it, but the body is moved in: set_content only
// copies (an answer of 100 rows is ~50 KB).
void set_body(httplib::Response& res, std::string&& body, const char* content_type) {
    res.body = std::move(body);
    res.headers.erase("Content-Type");
    res.set_header("Content-Type", content_type);
}

void send_json_error(httplib::Response& res, int status, const json& id, int code,
                     const std::string& message, const json& data) {
    res.status = status;
    set_body(res, make_error_text(id, code, message, data), "application/json");
}

// At a bound: come back later.
void send_busy(httplib::Response& res, const json& id, const std::string& message) {
    res.set_header("Retry-After", "1");
    send_json_error(res, 503, id, error_code::internal_error, message);
}

// Modern-era JSON-RPC errors travel with a matching HTTP status.
int http_status_for_modern_error(const std::string& reply) {
    if (reply.rfind(R"({"error":{"code":)", 0) != 0) return 200;
    json parsed = json::parse(reply, nullptr, false);
    int code = parsed.is_discarded() ? 0 : parsed["error"].value("code", 0);
    switch (code) {
        case error_code::method_not_found: return 404;
        case error_code::internal_error: return 500;
        case 0: return 200;
        default: return 400;
    }
}

HttpRequestView request_view(const httplib::Request& req) {
    HttpRequestView view;
    view.method = req.method;
    view.path = req.path;
    view.remote_addr = req.remote_addr;
    const auto query_at = req.target.find('?');
    if (query_at != std::string::npos) view.query = req.target.substr(query_at + 1);
    view.header = [&req](std::string_view name) {
        return req.get_header_value(std::string(name));
    };
    return view;
}

void send_refusal(httplib::Response& res, const AuthDecision& decision) {
    if (!decision.www_authenticate.empty())
        res.set_header("WWW-Authenticate", decision.www_authenticate);
    if (decision.status == 503) res.set_header("Retry-After", "5");
    send_json_error(res, decision.status, nullptr, error_code::invalid_request, decision.message);
}

}  // namespace agency::mcp
