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

// A caller over its rate limit hears 429 with Retry-After in either era (the JSON-RPC error's
// data says when); the status of any other reply is as before.
void set_reply_status(httplib::Response& res, const std::string& reply, bool legacy) {
    static const std::string kRateLimited =
        R"({"error":{"code":)" + std::to_string(error_code::rate_limited) + ",";
    if (reply.rfind(kRateLimited, 0) == 0) {
        const json parsed = json::parse(reply, nullptr, false);
        const json* data = parsed.is_object() ? &parsed["error"]["data"] : nullptr;
        const long long wait = data && data->is_object() ? data->value("retryAfterSeconds", 1LL) : 1LL;
        res.status = 429;
        res.set_header("Retry-After", std::to_string(wait < 1 ? 1 : wait));
        return;
    }
    if (!legacy) res.status = http_status_for_modern_error(reply);
}

}  // namespace agency::mcp
