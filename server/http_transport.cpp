#include "server/http_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <stdexcept>
#include <thread>

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "net/server_thread.hpp"
#include "net/socket_stream.hpp"
#include "net/work_queue.hpp"
#include "server/http_cors.hpp"
#include "server/http_drain.hpp"
#include "server/http_headers.hpp"
#include "server/http_replies.hpp"
#include "server/http_routes.hpp"
#include "server/http_streams.hpp"
#include "server/protocol.hpp"
#include "server/telemetry.hpp"

namespace agency::mcp {

struct HttpTransport::Impl {
    Server& server;
    HttpOptions options;
    net::PlainServer http;
    net::ServerThread listener;  // after http: stopped (and joined) before http is destroyed
    int port = 0;
    std::atomic<std::int64_t> last_sweep{0};
    std::vector<std::string> allowed_hosts;
    // Runs streamed calls so the connection thread can watch the stream.
    std::unique_ptr<net::WorkQueue> workers;
    std::vector<std::string> allowed_origins;  // normalized (lowercase)
    DrainGate gate;  // calls in flight; closed by drain()

    // Streamed answers open, in all, per legacy session and per caller (principal).
    std::mutex streams_mutex;
    std::size_t streams_open = 0;
    std::unordered_map<std::string, std::size_t> streams_per_session;
    std::unordered_map<std::string, std::size_t> streams_per_principal;

    // A streamed answer's place, held by its call and its stream until both are done.
    struct StreamSlot {
        StreamSlot(Impl* owner, std::string session, std::string caller)
            : impl(owner), session_id(std::move(session)), principal(std::move(caller)) {}
        StreamSlot(const StreamSlot&) = delete;
        StreamSlot& operator=(const StreamSlot&) = delete;
        Impl* impl;
        std::string session_id;
        std::string principal;
        static void release(std::unordered_map<std::string, std::size_t>& counts,
                            const std::string& key) {
            auto it = counts.find(key);
            if (it != counts.end() && --it->second == 0) counts.erase(it);
        }
        ~StreamSlot() {
            std::lock_guard lock(impl->streams_mutex);
            --impl->streams_open;
            count_stream(-1);
            release(impl->streams_per_principal, principal);
            if (!session_id.empty()) release(impl->streams_per_session, session_id);
        }
    };
    // The refusal's reason at a bound ("" when the stream may open); `slot` set otherwise.
    std::string open_stream(const std::string& session_id, const std::string& principal,
                            std::shared_ptr<StreamSlot>& slot) {
        std::lock_guard lock(streams_mutex);
        if (streams_open >= options.max_streams)
            return "too many streamed calls open (at most " + std::to_string(options.max_streams) +
                   "): try again later";
        const std::size_t mine =
            streams_per_principal.contains(principal) ? streams_per_principal[principal] : 0;
        if (mine >= options.max_streams_per_principal)
            return "too many of this caller's streamed calls open (at most " +
                   std::to_string(options.max_streams_per_principal) +
                   " per caller): let one finish, then try again";
        if (!session_id.empty()) {
            auto& n = streams_per_session[session_id];
            if (n >= options.max_streams_per_session)
                return "too many streamed calls open on this session (at most " +
                       std::to_string(options.max_streams_per_session) + "): try again later";
            ++n;
        }
        ++streams_per_principal[principal];
        ++streams_open;
        count_stream(1);
        slot = std::make_shared<StreamSlot>(this, session_id, principal);
        return {};
    }

    Impl(Server& s, HttpOptions o)
        : server(s), options(std::move(o)), workers(std::make_unique<net::WorkQueue>(options.workers)) {
        if (!options.authenticator) options.authenticator = key_authenticator(options.keys);
    }

    bool host_allowed(const std::string& host) const {
        return std::find(allowed_hosts.begin(), allowed_hosts.end(), host) != allowed_hosts.end();
    }
    bool any_host_route(const std::string& path) const {
        return std::any_of(options.routes.begin(), options.routes.end(),
                           [&](const HttpRoute& r) { return r.any_host && r.path == path; });
    }

    // Only a well-formed origin can pass: "http://127.0.0.1:80@evil.com" is not one.
    bool origin_allowed(const std::string& origin) const {
        std::string host;
        auto normal = parse_origin(origin, host);
        if (!normal) return false;
        return std::find(allowed_origins.begin(), allowed_origins.end(), *normal) !=
                   allowed_origins.end() ||
               host_allowed(host);
    }

    // Returns the caller, or nullopt after writing the refusal (401, 403, 503).
    std::optional<Principal> authenticate(const httplib::Request& req, httplib::Response& res) {
        if (!options.authenticator->required()) return options.anonymous;
        AuthDecision decision = options.authenticator->authenticate(request_view(req));
        if (decision.principal) return std::move(decision.principal);
        send_refusal(res, decision);
        return std::nullopt;
    }

    void sweep_sessions() {
        const base::Clock& clock = options.clock ? *options.clock : base::Clock::system();
        std::int64_t now = clock.steady_ms();
        std::int64_t last = last_sweep.load();
        if (now - last < 60'000 || !last_sweep.compare_exchange_strong(last, now)) return;
        if (auto n = server.expire_sessions(options.session_idle))
            log::info("expired {} idle session(s)", n);
    }

    // A POST's one message, read and classified.
    struct PostMessage {
        json message;
        MessageKind kind = MessageKind::invalid;
        json id;
        std::string method;
        DrainGate::Ticket ticket;  // a request's, held until its answer is written
    };
    // Where it goes: its era, and the legacy session (opened here for initialize).
    struct PostRoute {
        bool legacy = false;
        bool is_init = false;
        std::shared_ptr<Session> session;
        std::string traceparent;  // the W3C header, for the core's trace context
    };
    static Inbound http_inbound(const PostRoute& route, const Principal& principal) {
        Inbound in;
        in.traceparent = route.traceparent;
        in.era = route.legacy ? Era::legacy : Era::modern;
        in.session = route.session;
        in.principal = principal;
        in.http = true;
        return in;
    }

    // handle_post, step by step: each step but the last writes its error and stops the POST.
    void handle_post(const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader);
    std::optional<Principal> admit_post(const httplib::Request& req, httplib::Response& res);
    std::optional<PostMessage> read_message(const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader);
    std::optional<PostRoute> route_message(const httplib::Request& req, httplib::Response& res,
                                           const Principal& principal, const PostMessage& post);
    void stream_call(httplib::Response& res, PostMessage& post, const PostRoute& route,
                     const Principal& principal);
    void answer_call(httplib::Response& res, const PostMessage& post, const PostRoute& route,
                     const Principal& principal, bool accepts_sse);
    void handle_delete(const httplib::Request& req, httplib::Response& res);

    // HttpTransport::start, step by step.
    void allow_hosts_and_origins();
    void install_guards();
    void install_routes();
    int bind_and_listen();
};

// Returns the caller, or nullopt after refusing the request before its body is read.
std::optional<Principal> HttpTransport::Impl::admit_post(const httplib::Request& req,
                                                         httplib::Response& res) {
    auto principal = authenticate(req, res);
    if (!principal) {
        if (has_body(req)) close_after(res);
        return std::nullopt;
    }
    auto refuse = [&](int status, const std::string& why) -> std::optional<Principal> {
        if (has_body(req)) close_after(res);
        send_json_error(res, status, nullptr, error_code::invalid_request, why);
        return std::nullopt;
    };
    std::string content_type = base::ascii_lower(req.get_header_value("Content-Type"));
    if (content_type.find("application/json") == std::string::npos)
        return refuse(415, "Content-Type must be application/json");
    if (auto problem = narrow_by_headers(req, server, *principal)) return refuse(400, *problem);
    return principal;
}

// Reads and classifies the one message of a POST; nullopt after writing the error.
std::optional<HttpTransport::Impl::PostMessage> HttpTransport::Impl::read_message(
    const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    std::string text;
    if (!read_bounded_body(req, res, reader, options.max_body_bytes, text)) return std::nullopt;
    ParsedMessage parsed = parse_message(text, options.json_limits);
    if (!parsed.error.empty()) {
        res.status = 400;
        set_body(res, std::move(parsed.error), "application/json");
        return std::nullopt;
    }
    PostMessage post{std::move(parsed.message)};
    if (post.message.is_array()) {
        send_json_error(res, 400, nullptr, error_code::invalid_request,
                        "batch requests are not supported: send one message per POST");
        return std::nullopt;
    }
    post.kind = classify(post.message);
    post.id = post.message.is_object() ? post.message.value("id", json()) : json();
    if (post.kind == MessageKind::invalid) {
        send_json_error(res, 400, post.id, error_code::invalid_request,
                        "invalid request: expected a JSON-RPC 2.0 request, notification or "
                        "response");
        return std::nullopt;
    }
    post.method = post.message.value("method", "");
    return post;
}

// Decides the era and finds (or, for initialize, opens) the legacy session; nullopt after
// writing the error.
std::optional<HttpTransport::Impl::PostRoute> HttpTransport::Impl::route_message(
    const httplib::Request& req, httplib::Response& res, const Principal& principal,
    const PostMessage& post) {
    const json& id = post.id;
    const std::string session_id = req.get_header_value(std::string(kHeaderSessionId));
    const std::string version_header = req.get_header_value(std::string(kHeaderProtocolVersion));
    const json no_params = json::object();
    const json& params = post.message.contains("params") && post.message["params"].is_object()
                             ? post.message["params"]
                             : no_params;
    const bool has_meta = params.contains("_meta") && params["_meta"].is_object();

    // Era routing: a session id, or a legacy version header without _meta, is legacy;
    // otherwise a version header or _meta is modern. Plain initialize is legacy.
    const bool modern = session_id.empty() && (!version_header.empty() || has_meta) &&
                        !(!has_meta && is_legacy_version(version_header));
    PostRoute route{!modern,
                    !modern && post.kind == MessageKind::request && post.method == "initialize",
                    nullptr, req.get_header_value("traceparent")};
    if (route.is_init) {
        sweep_sessions();
        // A caller at its share, or a full server, closes the least recently used session of
        // whoever holds the most (server/sessions.cpp): one caller cannot lock the others out.
        server.make_room_for_session(principal.name, options.max_sessions,
                                     options.max_sessions_per_principal);
        if (server.session_count() >= options.max_sessions) {  // others initializing at once
            send_busy(res, id, "too many sessions open: try again later");
            return std::nullopt;
        }
        route.session = server.create_session(crypto::random_hex(16));
    } else if (!modern) {
        if (session_id.empty()) {
            send_json_error(res, 400, id, error_code::invalid_request,
                            "missing Mcp-Session-Id header: call initialize first (or, for "
                            "protocol 2026-07-28, send MCP-Protocol-Version and params._meta)");
            return std::nullopt;
        }
        // Any supported version is accepted on a live session (some clients send an older one).
        if (!version_header.empty() && !is_supported_version(version_header)) {
            send_json_error(res, 400, id, error_code::invalid_request,
                            "unsupported MCP-Protocol-Version: " + version_header);
            return std::nullopt;
        }
        route.session = server.find_session(session_id);
        if (!route.session || route.session->principal.name != principal.name) {
            send_json_error(res, 404, id, error_code::invalid_request,
                            "unknown or expired session: initialize a new one");
            return std::nullopt;
        }
    } else if (post.kind == MessageKind::request || post.kind == MessageKind::notification) {
        // Modern: the routing headers must agree with the body.
        if (auto why = routing_mismatch(req, params, post.method, version_header, server)) {
            send_json_error(res, 400, id, error_code::header_mismatch, "header mismatch: " + *why);
            return std::nullopt;
        }
    }
    return route;
}

void HttpTransport::Impl::handle_post(const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
    // Who is calling, and whether the body is wanted at all, is known before it is read.
    auto principal = admit_post(req, res);
    if (!principal) return;
    auto post = read_message(req, res, reader);
    if (!post) return;
    auto route = route_message(req, res, *principal, *post);
    if (!route) return;
    if (principal->may_step_up && post->kind == MessageKind::request)  // before the call runs
        if (auto scope = server.missing_scope(post->message, *principal))
            return send_refusal(res, options.authenticator->refuse_scope(*principal, *scope));
    if (post->kind == MessageKind::request && !(post->ticket = gate.enter()))
        return refuse_while_draining(res, post->id);
    if (post->kind != MessageKind::request) {
        server.handle_message(post->message, http_inbound(*route, *principal));
        res.status = 202;
        return;
    }
    const std::string accept = base::ascii_lower(req.get_header_value("Accept"));
    const bool accepts_sse = accept.find("text/event-stream") != std::string::npos;
    // Streamed: calls that talk back mid-call, and modern tool calls (so that closing the
    // stream cancels them, as 2026-07-28 requires).
    const bool modern_call = !route->legacy && post->method == "tools/call";
    if (accepts_sse && (modern_call || server.may_stream(post->message, route->session.get())))
        return stream_call(res, *post, *route, *principal);
    answer_call(res, *post, *route, *principal, accepts_sse);
}

// Runs a request on a worker and relays its messages as an SSE stream (or answers in one
// body when it finishes within the grace period).
void HttpTransport::Impl::stream_call(httplib::Response& res, PostMessage& post,
                                      const PostRoute& route, const Principal& principal) {
    // Each streamed call holds a connection thread and waits for a worker: bounded.
    std::shared_ptr<StreamSlot> slot;
    const std::string full =
        open_stream(route.session ? route.session->id : std::string(), principal.name, slot);
    if (!slot) return send_busy(res, post.id, full);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    const bool legacy = route.legacy;
    auto channel = std::make_shared<StreamChannel>(legacy);
    auto call_in = std::make_shared<Inbound>(http_inbound(route, principal));
    call_in->channel = channel.get();
    call_in->stop = channel->stop_token();
    workers->post([this, channel, call_in, slot, ticket = post.ticket,
                   message = std::move(post.message)] {
        channel->finish(server.handle_message(message, *call_in));
    });
    if (auto quick = channel->finished_quietly(options.stream_grace)) {
        if (!*quick) {
            res.status = 202;
            return;
        }
        set_reply_status(res, **quick, legacy);
        set_body(res, std::move(**quick), "application/json");
        return;
    }
    res.set_chunked_content_provider(
        "text/event-stream", [this, channel, slot, ticket = post.ticket](std::size_t,
                                                                         httplib::DataSink& sink) {
            channel->relay(sink, options.keepalive);
            sink.done();
            return true;
        });
}

// Runs a request here and answers in one body (SSE when it sent messages and the caller
// accepts a stream).
void HttpTransport::Impl::answer_call(httplib::Response& res, const PostMessage& post,
                                      const PostRoute& route, const Principal& principal,
                                      bool accepts_sse) {
    BufferChannel buffer;
    Inbound in = http_inbound(route, principal);
    in.channel = &buffer;
    auto reply = server.handle_message(post.message, in);
    if (!reply) {
        res.status = 202;
        return;
    }
    if (route.is_init && reply->find(R"("result":)") != std::string::npos) {
        server.register_session(route.session);
        res.set_header(std::string(kHeaderSessionId), route.session->id);
    }
    set_reply_status(res, *reply, route.legacy);
    auto notes = buffer.take();
    if (!notes.empty() && accepts_sse) {
        std::string body;
        for (const auto& n : notes) body += sse_event(n);
        body += sse_event(*reply);
        res.set_header("Cache-Control", "no-cache");
        set_body(res, std::move(body), "text/event-stream");
        return;
    }
    set_body(res, std::move(*reply), "application/json");
}

void HttpTransport::Impl::handle_delete(const httplib::Request& req, httplib::Response& res) {
    auto principal = authenticate(req, res);
    if (!principal) return;
    std::string session_id = req.get_header_value(std::string(kHeaderSessionId));
    if (session_id.empty()) {
        res.set_header("Allow", "POST");
        send_json_error(res, 405, nullptr, error_code::invalid_request,
                        "DELETE ends a legacy session and needs Mcp-Session-Id");
        return;
    }
    auto session = server.find_session(session_id);
    if (!session || session->principal.name != principal->name) {
        send_json_error(res, 404, nullptr, error_code::invalid_request, "unknown session");
        return;
    }
    server.forget_session(session_id);
    res.status = 200;
}

HttpTransport::HttpTransport(Server& server, HttpOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

HttpTransport::~HttpTransport() { stop(); }

// Refuses to serve beyond loopback without keys, then lists the Host names and origins that
// may reach the server (DNS rebinding).
void HttpTransport::Impl::allow_hosts_and_origins() {
    if (!is_loopback_host(options.host) && !options.authenticator->required())
        throw std::runtime_error("refusing to listen on " + options.host +
                                 " without authentication: create a key with 'agency-mcp keys "
                                 "add', configure OAuth (--oauth-issuer, --oauth-resource), or "
                                 "listen on 127.0.0.1");
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
