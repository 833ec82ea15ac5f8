// The Streamable HTTP transport: starting it (who may reach it: hosts and origins), the guards
// every request passes before its route, the routes, and stopping and draining it. What one
// POST on /mcp goes through is in http_post.cpp.
#include "transport/http_transport_internal.hpp"

namespace agency::mcp {

HttpTransport::HttpTransport(Server& server, HttpOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

HttpTransport::~HttpTransport() { stop(); }

// Refuses to serve beyond loopback without keys, then lists the Host names and origins that
// may reach the server (DNS rebinding).
void HttpTransport::Impl::allow_hosts_and_origins() {
    if (!is_loopback_host(options.host) && !options.authenticator->required())
        throw std::runtime_error(
            "refusing to listen on " + options.host +
            " without authentication: give a keys file (--keys-file FILE or AGENCY_KEYS_FILE; "
            "create it with: agency-mcp keys add --keys-file FILE --name NAME), configure OAuth "
            "(--oauth-issuer, --oauth-resource), or listen on 127.0.0.1");
    allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
    if (!is_loopback_host(options.host) && options.host != "0.0.0.0" && options.host != "::")
        allowed_hosts.push_back(base::ascii_lower(options.host));
    for (const auto& h : options.allowed_hosts) allowed_hosts.push_back(base::ascii_lower(h));
    allowed_origins.clear();
    for (const auto& origin : options.allowed_origins) {
        std::string host;
        if (auto normal = parse_origin(origin, host))
            allowed_origins.push_back(*normal);
        else
            log::warn("--allowed-origin {} is not an origin (scheme://host[:port]); ignored",
                      origin);
    }
}

// Connection bounds, and the checks every request passes before its route: Host, Origin,
// session id shape, where a body may go, the key and body size before "100 Continue".
void HttpTransport::Impl::install_guards() {
    net::ConnectionLimits limits;
    limits.max_connections = options.max_connections;
    limits.max_connections_per_peer = options.max_connections_per_peer;
    limits.head_timeout = options.head_timeout;
    // Each open stream holds a thread: plain requests keep `threads` of their own.
    limits.threads = options.threads + options.max_streams;
    limits.idle_threads = options.idle_threads;
    http.set_limits(limits);
    http.set_payload_max_length(options.max_body_bytes);
    http.set_keep_alive_max_count(100000);
    // An idle keep-alive connection holds no thread (PlainServer parks it in its epoll set).
    http.set_keep_alive_timeout(std::max<time_t>(1, options.idle_timeout.count()));
    http.set_tcp_nodelay(true);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        const auto refuse = [&](int status, const std::string& message) {
            // The body, if any, is never read: the connection ends with this answer.
            if (has_body(req)) close_after(res);
            send_json_error(res, status, nullptr, error_code::invalid_request, message);
            return httplib::Server::HandlerResponse::Handled;
        };
        // DNS rebinding: only our own names may reach us, from our own origins.
        std::string host = req.get_header_value("Host");
        if (!host.empty() && !host_allowed(host_part(host)) && !any_host_route(req.path))
            return refuse(403, "forbidden Host header: " + host);
        std::string origin = req.get_header_value("Origin");
        if (!origin.empty() && !origin_allowed(origin))
            return refuse(403, "forbidden Origin: " + origin);
        const std::string session_header(kHeaderSessionId);
        if (req.has_header(session_header) &&
            !valid_session_id(req.get_header_value(session_header)))
            return refuse(400, "invalid Mcp-Session-Id: session ids are visible ASCII");
        // Only a POST to the endpoint has a body worth reading (and reads it bounded).
        if (has_body(req) && !(req.method == "POST" && req.path == options.path)) {
            if (req.path != options.path)
                return refuse(404, "not found: the MCP endpoint is " + options.path);
            res.set_header("Allow", "POST, DELETE, OPTIONS");
            return refuse(405, "a request body is accepted only by POST");
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // "Expect: 100-continue": a caller without a valid key, or with a body over the bound, is
    // answered before it sends the body at all.
    http.set_expect_100_continue_handler([this](const httplib::Request& req,
                                                httplib::Response& res) {
        if (req.method != "POST" || req.path != options.path) return 100;
        if (!authenticate(req, res)) {
            close_after(res);
            return res.status;
        }
        if (req.has_header("Content-Length")) {
            const std::string announced = req.get_header_value("Content-Length");
            if (!announced.empty() && announced.size() <= 19 &&
                announced.find_first_not_of("0123456789") == std::string::npos &&
                std::stoull(announced) > options.max_body_bytes) {
                close_after(res);
                send_json_error(res, 413, nullptr, error_code::invalid_request,
                                "request body too large");
                return 413;
            }
        }
        return 100;
    });
    // Browsers: an origin that passes the Origin check may read our answers and the session id.
    http.set_post_routing_handler(allow_origin_to_read);
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 413)
            res.set_content(make_error_text(nullptr, error_code::invalid_request,
                                            "request body too large"),
                            "application/json");
        else if (res.status == 404)
            res.set_content(R"({"error":"not found: the MCP endpoint is /mcp"})",
                            "application/json");
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const std::system_error& e) {
                if (e.code() == std::errc::resource_unavailable_try_again) {
                    // No thread could be started for this request (the thread limit): this one
                    // request is refused as busy; the server recovers as idle threads leave, and
                    // readiness says so meanwhile (base/thread_set.hpp).
                    base::thread_start_failed();
                    log::warn("HTTP request refused: no thread could be started ({})", e.what());
                    res.set_header("Retry-After", "1");
                    send_json_error(res, 503, nullptr, error_code::internal_error,
                                    "the server is at its thread limit; try again in a moment");
                    return;
                }
                log::error("HTTP handler failed: {}", e.what());
            } catch (const std::exception& e) {
                log::error("HTTP handler failed: {}", e.what());
            }
            send_json_error(res, 500, nullptr, error_code::internal_error, "internal error");
        });
}

void HttpTransport::Impl::install_routes() {
    http.Post(options.path, [this](const httplib::Request& req, httplib::Response& res,
                             const httplib::ContentReader& reader) {
        handle_post(req, res, reader);
    });
    // CORS preflight (http_cors.cpp).
    http.Options(options.path, answer_preflight);
    http.Delete(options.path, [this](const httplib::Request& req, httplib::Response& res) {
        handle_delete(req, res);
    });
    const auto oauth_routes = options.authenticator->routes();  // RFC 9728 metadata
    install_extra_routes(http, options.routes);
    install_extra_routes(http, oauth_routes);
    count_answers(http, options.path, {&options.routes, &oauth_routes});
    http.Get(options.path, [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Allow", "POST, DELETE");
        send_json_error(res, 405, nullptr, error_code::invalid_request,
                        "this server offers no GET stream: POST JSON-RPC messages to this URL");
    });
}

int HttpTransport::Impl::bind_and_listen() {
    port = listener.start(http, {.host = options.host, .port = options.port});
    return port;
}

int HttpTransport::start() {
    impl_->allow_hosts_and_origins();
    impl_->install_guards();
    impl_->install_routes();
    return impl_->bind_and_listen();
}

void HttpTransport::stop() {
    if (impl_->listener.started()) {
        impl_->listener.stop();
        impl_->workers->drain();
        impl_->read_workers->drain();
    }
}

bool HttpTransport::drain(std::chrono::milliseconds timeout) {
    return drain_calls(impl_->gate, impl_->server, timeout);
}

void HttpTransport::wait() { impl_->listener.wait(); }

std::string HttpTransport::url() const {
    std::string host = impl_->options.host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    return "http://" + host + ":" + std::to_string(impl_->port) + impl_->options.path;
}

}  // namespace agency::mcp
