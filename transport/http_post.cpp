// One POST or DELETE on the MCP endpoint, step by step: admitted (who calls, before the body
// is read), read once into an Incoming, routed (era, session, routing headers), then answered
// as one JSON body or streamed as SSE. Start, guards and routes are in http_transport.cpp.
#include "transport/http_transport_internal.hpp"

namespace agency::mcp {

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
    if (parsed.error) {
        res.status = 400;
        set_body(res, std::move(parsed.error->text), "application/json");
        return std::nullopt;
    }
    if (parsed.message.is_array()) {
        send_json_error(res, 400, nullptr, error_code::invalid_request,
                        "batch requests are not supported: send one message per POST");
        return std::nullopt;
    }
    PostMessage post{read_incoming(std::move(parsed.message))};
    if (post.in.kind == MessageKind::invalid) {
        send_json_error(res, 400, post.in.id, error_code::invalid_request,
                        "invalid request: expected a JSON-RPC 2.0 request, notification or "
                        "response");
        return std::nullopt;
    }
    return post;
}

// Decides the era and finds (or, for initialize, opens) the legacy session; nullopt after
// writing the error.
std::optional<HttpTransport::Impl::PostRoute> HttpTransport::Impl::route_message(
    const httplib::Request& req, httplib::Response& res, const Principal& principal,
    const PostMessage& post) {
    const Incoming& message = post.in;
    const json& id = message.id;
    const std::string session_id = req.get_header_value(std::string(kHeaderSessionId));
    const std::string version_header = req.get_header_value(std::string(kHeaderProtocolVersion));
    const json& params = message.params();
    const bool has_meta = params.contains("_meta") && params["_meta"].is_object();

    // Era routing: a session id, or a legacy version header without _meta, is legacy;
    // otherwise a version header or _meta is modern. Plain initialize is legacy.
    const bool modern = session_id.empty() && (!version_header.empty() || has_meta) &&
                        !(!has_meta && is_legacy_version(version_header));
    PostRoute route{!modern,
                    !modern && message.entry && message.entry->opens_session,
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
    } else if (message.kind == MessageKind::request || message.kind == MessageKind::notification) {
        // Modern: the routing headers must agree with the body.
        if (auto why = routing_mismatch(req, message, version_header, server)) {
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
    const Incoming& message = post->in;
    if (principal->may_step_up && message.kind == MessageKind::request)  // before the call runs
        if (auto scope = server.missing_scope(message, *principal))
            return send_refusal(res, options.authenticator->refuse_scope(*principal, *scope));
    if (message.kind == MessageKind::request && !(post->ticket = gate.enter()))
        return refuse_while_draining(res, message.id);
    if (message.kind != MessageKind::request) {
        server.handle_message(message, http_inbound(*route, *principal));
        res.status = 202;
        return;
    }
    const std::string accept = base::ascii_lower(req.get_header_value("Accept"));
    const bool accepts_sse = accept.find("text/event-stream") != std::string::npos;
    // Streamed: calls that talk back mid-call, and modern tool calls (so that closing the
    // stream cancels them, as 2026-07-28 requires).
    const bool modern_call = !route->legacy && message.method == "tools/call";
    if (accepts_sse && (modern_call || server.may_stream(message, route->session.get())))
        return stream_call(res, *post, *route, *principal);
    answer_call(res, *post, *route, *principal, accepts_sse);
}

namespace {

Reply lane_refusal(const json& id, const std::string& what) {
    return Reply::error(id, error_code::rate_limited, what, json{{"retryAfterSeconds", 1}});
}

}  // namespace

std::optional<Reply> HttpTransport::Impl::post_call(
    const json& id, bool long_wait, const std::string& caller,
    std::function<void(std::optional<Reply> late)> job) {
    base::WorkQueue& lane = this->lane(long_wait);
    const char* kind = long_wait ? "calls that may wait long (actions, tasks/result)" : "reads";
    const auto queued_at = std::chrono::steady_clock::now();
    const bool queued = lane.offer(caller, [this, id, kind, queued_at, job = std::move(job)] {
        const auto waited = std::chrono::steady_clock::now() - queued_at;
        if (waited <= options.max_queue_wait) return job(std::nullopt);
        job(lane_refusal(id, "the server is busy: this call waited more than " +
                                 std::to_string(options.max_queue_wait.count()) +
                                 " ms for a worker among " + std::string(kind) +
                                 " and did not run; try again"));
    });
    if (queued) return std::nullopt;
    const auto& share = lane.share();
    return lane_refusal(id, "this caller already holds its share of the server's workers for " +
                                std::string(kind) + " (" + std::to_string(share.running) +
                                " running, " + std::to_string(share.waiting) +
                                " more waiting): let one finish, then try again");
}

// Runs a request on a worker and relays its messages as an SSE stream (or answers in one
// body when it finishes within the grace period, or when no stream is to be had).
void HttpTransport::Impl::stream_call(httplib::Response& res, PostMessage& post,
                                      const PostRoute& route, const Principal& principal) {
    // Each streamed call holds a connection thread and waits for a worker: bounded.
    std::shared_ptr<StreamSlot> slot;
    const std::string full =
        open_stream(route.session ? route.session->id : std::string(), principal.name, slot);
    // No stream to be had (every stream, or this caller's or session's share, is in use): the
    // call is answered in one body instead of refused (issue 45, finding 5). It still runs on
    // its lane, within its caller's share, and is cancelled if its client goes; only what a
    // stream adds (progress as it comes, questions to the client mid-call) waits for the end
    // or is asked another way.
    if (!slot) {
        log::debug("no stream for a call ({}): answered in one body", full);
        return answer_call(res, post, route, principal, true);
    }
    const bool legacy = route.legacy;
    auto channel = std::make_shared<StreamChannel>(legacy);
    auto call_in = std::make_shared<Inbound>(http_inbound(route, principal));
    call_in->channel = channel.get();
    call_in->stop = channel->stop_token();
    // Calls that may wait long (actions, tasks/result) have a lane of their own: reads never
    // queue behind them.
    const json id = post.in.id;
    const bool long_wait = server.may_wait_long(post.in);  // before the message moves below
    auto refusal = post_call(id, long_wait, principal.name,
                             [this, channel, call_in, slot, ticket = post.ticket,
                              message = std::move(post.in)](std::optional<Reply> late) {
                                 channel->finish(late ? std::move(late)
                                                      : server.handle_message(message, *call_in));
                             });
    if (refusal) {
        set_reply_status(res, *refusal, legacy);
        return set_body(res, std::move(refusal->text), "application/json");
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    if (auto quick = channel->finished_quietly(options.stream_grace)) {
        if (!*quick) {
            res.status = 202;
            return;
        }
        set_reply_status(res, **quick, legacy);
        set_body(res, std::move((*quick)->text), "application/json");
        return;
    }
    res.set_chunked_content_provider(
        "text/event-stream", [this, channel, slot, ticket = post.ticket](std::size_t,
                                                                         httplib::DataSink& sink) {
            // A client gone while the call is quiet cancels it now, not at the next write.
            DisconnectWatch::Entry watched(watch, net::request_socket(), channel->close_source());
            channel->relay(sink, options.keepalive);
            sink.done();
            return true;
        });
}

// Runs a request and answers in one body (SSE when it sent messages and the caller accepts a
// stream). A call that may reach the gateway or wait takes a place in its lane, within its
// caller's share: here when one is free at once, else queued for a worker while this thread
// waits. Either way its socket is watched (DisconnectWatch): the call is cancelled when the
// client goes away.
void HttpTransport::Impl::answer_call(httplib::Response& res, const PostMessage& post,
                                      const PostRoute& route, const Principal& principal,
                                      bool accepts_sse) {
    auto buffer = std::make_shared<BufferChannel>();
    auto in = std::make_shared<Inbound>(http_inbound(route, principal));
    in->channel = buffer.get();
    std::optional<Reply> reply;
    const bool on_worker = !route.is_init && post.in.entry && post.in.entry->runs == Runs::on_worker;
    if (!on_worker) {
        reply = server.handle_message(post.in, *in);
    } else {
        in->stop = buffer->stop_token();
        DisconnectWatch::Entry watched(watch, net::request_socket(), buffer->cancel_source());
        const bool long_wait = server.may_wait_long(post.in);
        if (auto here = lane(long_wait).try_enter(principal.name)) {
            reply = server.handle_message(post.in, *in);  // no hand-off: the common case
        } else {
            // This thread waits for the job to finish, so the job may read the message in place.
            auto refusal = post_call(
                post.in.id, long_wait, principal.name,
                [this, buffer, in, message = &post.in](std::optional<Reply> late) {
                    buffer->finish(late ? std::move(late) : server.handle_message(*message, *in));
                });
            reply = refusal ? std::move(refusal) : buffer->wait();
        }
    }
    if (!reply) {
        res.status = 202;
        return;
    }
    if (route.is_init && !reply->is_error()) {
        server.register_session(route.session);
        res.set_header(std::string(kHeaderSessionId), route.session->id);
    }
    set_reply_status(res, *reply, route.legacy);
    auto notes = buffer->take();
    if (!notes.empty() && accepts_sse) {
        std::string body;
        for (const auto& n : notes) body += sse_event(n);
        body += sse_event(reply->text);
        res.set_header("Cache-Control", "no-cache");
        set_body(res, std::move(body), "text/event-stream");
        return;
    }
    set_body(res, std::move(reply->text), "application/json");
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

}  // namespace agency::mcp
