// The Streamable HTTP transport's state, shared by its two files: http_transport.cpp (start,
// the guards every request passes, the routes, stop and drain) and http_post.cpp (one POST
// or DELETE on /mcp: admitted, read, routed and answered). Private to transport/.
#pragma once


#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <mutex>
#include <unordered_map>
#include <stdexcept>
#include <thread>

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "base/work_queue.hpp"
#include "net/server_thread.hpp"
#include "net/socket_stream.hpp"
#include "server/method_table.hpp"
#include "server/protocol.hpp"
#include "server/telemetry.hpp"
#include "transport/http_cors.hpp"
#include "transport/http_drain.hpp"
#include "transport/http_headers.hpp"
#include "transport/http_replies.hpp"
#include "transport/http_routes.hpp"
#include "transport/http_streams.hpp"
#include "transport/http_transport.hpp"
#include "transport/http_watch.hpp"

namespace agency::mcp {

struct HttpTransport::Impl {
    Server& server;
    HttpOptions options;
    net::PlainServer http;
    net::ServerThread listener;  // after http: stopped (and joined) before http is destroyed
    int port = 0;
    std::atomic<std::int64_t> last_sweep{0};
    std::vector<std::string> allowed_hosts;
    // Run calls while their connection threads wait (and watch the client), each caller
    // within its share of the lane (HttpOptions::worker_share).
    std::unique_ptr<base::WorkQueue> workers;       // calls that may wait long
    std::unique_ptr<base::WorkQueue> read_workers;  // the others
    // Cancels the calls whose client has gone (answered in one body or streamed).
    DisconnectWatch watch{std::chrono::milliseconds(200)};
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
        : server(s),
          options(std::move(o)),
          workers(make_lane(options.workers, options.worker_share, options.idle_threads)),
          read_workers(make_lane(options.read_workers, options.worker_share, options.idle_threads)) {
        if (!options.authenticator) options.authenticator = key_authenticator(options.keys);
    }

    static std::unique_ptr<base::WorkQueue> make_lane(std::size_t size, std::size_t share,
                                                      base::IdleThreads idle) {
        const std::size_t each = share != 0 ? share : std::max<std::size_t>(1, size / 4);
        return std::make_unique<base::WorkQueue>(size, base::WorkQueue::Share{each, each}, idle);
    }
    // Runs `job` on the lane of a call (`long_wait`: Server::may_wait_long) for its caller.
    // A call that waited for a worker past options.max_queue_wait gets its refusal instead of
    // running (`job` is called with it). Returns the refusal, queueing nothing, when the
    // caller holds its share of the lane.
    base::WorkQueue& lane(bool long_wait) { return long_wait ? *workers : *read_workers; }
    std::optional<Reply> post_call(const json& id, bool long_wait, const std::string& caller,
                                   std::function<void(std::optional<Reply> late)> job);

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
        const base::Clock& clock = base::Clock::or_system(options.clock);
        std::int64_t now = clock.steady_ms();
        std::int64_t last = last_sweep.load();
        if (now - last < 60'000 || !last_sweep.compare_exchange_strong(last, now)) return;
        if (auto n = server.expire_sessions(options.session_idle))
            log::info("expired {} idle session(s)", n);
    }

    // A POST's one message, read and classified.
    struct PostMessage {
        Incoming in;               // the message, read once (kind, id, method, its entry)
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

}  // namespace agency::mcp
