// How the Streamable HTTP transport writes its answers: bodies moved in, JSON-RPC errors with
// their HTTP status, "come back later" at a bound, and the status of a modern-era reply.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <httplib.h>

#include "server/json_rpc.hpp"
#include "transport/authenticator.hpp"
#include "transport/http_routes.hpp"

namespace agency::mcp {

// A request that carries a body (announced by length or chunked).
bool has_body(const httplib::Request& req);
// The connection cannot carry another request: its body was left unread.
void close_after(httplib::Response& res);
// Response::set_content as httplib 0.11 does it, but the body is moved in: set_content only
// copies (an answer of 100 rows is ~50 KB).
void set_body(httplib::Response& res, std::string&& body, const char* content_type);
void send_json_error(httplib::Response& res, int status, const json& id, int code,
                     const std::string& message, const json& data = nullptr);
// At a bound: come back later.
void send_busy(httplib::Response& res, const json& id, const std::string& message);
// Reads a body, counting every byte against `limit` whether its length was announced or it comes
// chunked: reading stops at the bound with a 413. False after writing the error.
bool read_bounded_body(const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader, std::size_t limit, std::string& body);
// Serves each route at its exact path (HttpOptions::routes).
void install_extra_routes(httplib::Server& http, const std::vector<HttpRoute>& routes);
// Counts every answer `http` sends, by method, route and status (server/telemetry.hpp,
// HttpAnswerCounter): the routes are `endpoint` and those of `route_lists`.
void count_answers(httplib::Server& http, const std::string& endpoint,
                   std::initializer_list<const std::vector<HttpRoute>*> route_lists);
// Modern-era JSON-RPC errors travel with a matching HTTP status (0: not an error, 200).
int http_status_for_modern_error(int code);
// The status of a reply: 429 with Retry-After for a caller over its rate limit (either era),
// else http_status_for_modern_error for the modern era (legacy: 200).
void set_reply_status(httplib::Response& res, const Reply& reply, bool legacy);
// What an authenticator or a route sees of a request; valid while `req` lives.
HttpRequestView request_view(const httplib::Request& req);
// An authenticator's refusal: its status, WWW-Authenticate and message (503: Retry-After).
void send_refusal(httplib::Response& res, const AuthDecision& decision);

}  // namespace agency::mcp
