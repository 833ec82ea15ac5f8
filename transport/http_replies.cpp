// How the Streamable HTTP transport writes its answers (see http_replies.hpp).
#include "transport/http_replies.hpp"

#include <string_view>
#include <utility>

#include "server/telemetry.hpp"

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
int http_status_for_modern_error(int code) {
    switch (code) {
        case error_code::method_not_found: return 404;
        case error_code::internal_error: return 500;
        case 0: return 200;
        default: return 400;
    }
}

// A caller over its rate limit hears 429 with Retry-After in either era (the JSON-RPC error's
// data says when); the status of any other reply is as before.
void set_reply_status(httplib::Response& res, const Reply& reply, bool legacy) {
    if (reply.error_code == error_code::rate_limited) {
        res.status = 429;
        res.set_header("Retry-After", std::to_string(reply.retry_after_s));
        return;
    }
    if (!legacy) res.status = http_status_for_modern_error(reply.error_code);
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

// Reads the body (before: the caller's key has been checked), counting every byte against
// max_body_bytes whether its length was announced or it comes chunked (or compressed):
// reading stops at the bound with a 413. False after writing the error.
bool read_bounded_body(const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader, std::size_t limit, std::string& body) {
    const auto too_large = [&] {
        close_after(res);
        send_json_error(res, 413, nullptr, error_code::invalid_request,
                        "request body too large (the limit is " + std::to_string(limit) +
                            " bytes)");
        return false;
    };
    if (req.has_header("Content-Length")) {
        const std::string announced = req.get_header_value("Content-Length");
        if (announced.empty() || announced.size() > 19 ||
            announced.find_first_not_of("0123456789") != std::string::npos) {
            close_after(res);
            send_json_error(res, 400, nullptr, error_code::invalid_request,
                            "invalid Content-Length");
            return false;
        }
        const auto length = std::stoull(announced);
        if (length > limit) return too_large();
        body.reserve(static_cast<std::size_t>(length));
    }
    bool over = false;
    const bool read = reader([&](const char* data, std::size_t size) {
        if (size > limit - body.size()) {
            over = true;
            return false;
        }
        body.append(data, size);
        return true;
    });
    if (over) return too_large();
    if (!read) {
        close_after(res);
        send_json_error(res, 400, nullptr, error_code::invalid_request,
                        "the request body could not be read");
        return false;
    }
    return true;
}


// Exact paths: httplib matches a route's pattern as a regular expression.
static std::string exact_pattern(const std::string& path) {
    std::string out;
    for (char c : path) {
        if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

void install_extra_routes(httplib::Server& http, const std::vector<HttpRoute>& routes) {
    for (const auto& route : routes) {
        auto handler = [handle = route.handler](const httplib::Request& req,
                                                httplib::Response& res) {
            HttpReply reply = handle(request_view(req));
            for (const auto& [name, value] : reply.headers) res.set_header(name, value);
            res.status = reply.status;
            set_body(res, std::move(reply.body), reply.content_type.c_str());
        };
        const std::string pattern = exact_pattern(route.path);
        if (route.method == "POST")
            http.Post(pattern, handler);
        else if (route.method == "OPTIONS")
            http.Options(pattern, handler);
        else
            http.Get(pattern, handler);
    }
}

void count_answers(httplib::Server& http, const std::string& endpoint,
                   std::initializer_list<const std::vector<HttpRoute>*> route_lists) {
    std::vector<std::string> paths{endpoint};
    for (const auto* routes : route_lists)
        for (const auto& route : *routes) paths.push_back(route.path);
    // Called once each answer has been written (its stream too), on the connection's thread.
    http.set_logger([count = HttpAnswerCounter(std::move(paths))](const httplib::Request& req,
                                                                  const httplib::Response& res) {
        count(req.method, req.path, res.status);
    });
}

}  // namespace agency::mcp
