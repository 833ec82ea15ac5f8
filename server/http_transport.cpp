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

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "server/crypto.hpp"
#include "server/socket_stream.hpp"
#include "server/work_queue.hpp"

namespace agency::mcp {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// "host:port" or "[v6]:port" -> host (lowercase, brackets kept for v6).
std::string host_part(const std::string& authority) {
    if (!authority.empty() && authority.front() == '[') {
        auto end = authority.find(']');
        return lower(authority.substr(0, end == std::string::npos ? authority.size() : end + 1));
    }
    auto colon = authority.rfind(':');
    return lower(colon == std::string::npos ? authority : authority.substr(0, colon));
}

// An Origin header as browsers send it: scheme "://" host [":" port], nothing else (no
// userinfo, path, query or fragment). Returns "scheme://host[:port]" in lowercase with the
// host alone in `host` (v6 in brackets), or nullopt for anything else.
std::optional<std::string> parse_origin(const std::string& origin, std::string& host) {
    const auto scheme_end = origin.find("://");
    if (scheme_end == std::string::npos) return std::nullopt;
    const std::string scheme = lower(origin.substr(0, scheme_end));
    if (scheme != "http" && scheme != "https") return std::nullopt;
    const std::string rest = lower(origin.substr(scheme_end + 3));
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

// Session ids are visible ASCII (0x21-0x7E), as the spec requires of servers; anything else
// in the header is refused before any lookup.
bool valid_session_id(const std::string& id) {
    return std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

// A request that carries a body (announced by length or chunked).
bool has_body(const httplib::Request& req) {
    return req.has_header("Transfer-Encoding") ||
           (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

// The connection cannot carry another request: its body was left unread.
void close_after(httplib::Response& res) { res.set_header("Connection", "close"); }

std::string trim(const std::string& s) {
    auto begin = s.find_first_not_of(" \t");
    if (begin == std::string::npos) return {};
    auto end = s.find_last_not_of(" \t");
    return s.substr(begin, end - begin + 1);
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Decodes the "=?base64?...?=" form that clients use for non-ASCII header values; a value
// without both markers is literal. nullopt: the marked value is not valid (padded) base64.
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

// The text form an argument takes in an Mcp-Param-* header.
std::optional<std::string> header_form(const json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean() || value.is_number_integer()) return value.dump();
    return std::nullopt;
}

// Response::set_content as httplib 0.11 does it, but the body is moved in: set_content only
// copies (an answer of 100 rows is ~50 KB).
void set_body(httplib::Response& res, std::string&& body, const char* content_type) {
    res.body = std::move(body);
    res.headers.erase("Content-Type");
    res.set_header("Content-Type", content_type);
}

void send_json_error(httplib::Response& res, int status, const json& id, int code,
                     const std::string& message, const json& data = nullptr) {
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

std::string sse_event(const std::string& message) {
    std::string out;
    out.reserve(message.size() + 24);
    out += "event: message\ndata: ";
    out += message;
    out += "\n\n";
    return out;
}

// Collects notifications sent while a request is answered inline.
class BufferChannel : public Channel {
public:
    void send(const std::string& message) override {
        std::lock_guard lock(mutex_);
        messages_.push_back(message);
    }
    bool can_send_requests() const override { return false; }
    std::vector<std::string> take() {
        std::lock_guard lock(mutex_);
        return std::move(messages_);
    }

private:
    std::mutex mutex_;
    std::vector<std::string> messages_;
};

// One streamed answer: the call runs on a worker and queues its messages here; the connection
// thread relays them as SSE events and writes keepalive comments while the call is quiet. A
// failed write means the client closed the stream, which cancels the call.
class StreamChannel : public Channel {
public:
    explicit StreamChannel(bool legacy) : legacy_(legacy) {}
    void send(const std::string& message) override {
        {
            std::lock_guard lock(mutex_);
            if (closed_.stop_requested()) return;
            events_.push_back(sse_event(message));
        }
        ready_.notify_one();
    }
    bool can_send_requests() const override { return legacy_ && !closed_.stop_requested(); }

    void finish(std::optional<std::string> reply) {
        {
            std::lock_guard lock(mutex_);
            reply_ = std::move(reply);
            done_ = true;
        }
        ready_.notify_all();
    }

    // Waits up to `grace` for the call. When it finished without sending anything before its
    // reply, returns that reply (which may be "no reply"), so it can go out as plain JSON with
    // its proper HTTP status; otherwise nullopt: the answer will be streamed.
    std::optional<std::optional<std::string>> finished_quietly(std::chrono::milliseconds grace) {
        std::unique_lock lock(mutex_);
        ready_.wait_for(lock, grace, [this] { return done_ || !events_.empty(); });
        if (done_ && events_.empty()) {
            relayed_ = true;
            return std::move(reply_);
        }
        return std::nullopt;
    }
    std::stop_token stop_token() const { return closed_.get_token(); }

    // Runs on the connection thread until the call has finished.
    void relay(httplib::DataSink& sink, std::chrono::milliseconds keepalive) {
        static const std::string comment = ":\n\n";
        std::unique_lock lock(mutex_);
        for (;;) {
            bool woke = ready_.wait_for(lock, keepalive, [this] { return done_ || !events_.empty(); });
            std::deque<std::string> batch;
            batch.swap(events_);
            bool finished = done_;
            if (finished && reply_ && !relayed_) {
                batch.push_back(sse_event(*reply_));
                relayed_ = true;
            }
            lock.unlock();
            for (const auto& e : batch)
                if (!closed_.stop_requested() && !sink.write(e.data(), e.size())) closed_.request_stop();
            if (!woke && !closed_.stop_requested() && !sink.write(comment.data(), comment.size()))
                closed_.request_stop();
            lock.lock();
            if (finished && events_.empty()) return;
        }
    }

private:
    bool legacy_;
    std::stop_source closed_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::string> events_;
    std::optional<std::string> reply_;
    bool done_ = false;
    bool relayed_ = false;
};

}  // namespace

bool is_loopback_host(const std::string& host) {
    std::string h = lower(host);
    return h == "127.0.0.1" || h == "localhost" || h == "::1" || h == "[::1]" ||
           h.rfind("127.", 0) == 0;
}

struct HttpTransport::Impl {
    Server& server;
    HttpOptions options;
    net::PlainServer http;
    std::thread thread;
    int port = 0;
    std::atomic<std::int64_t> last_sweep{0};
    std::vector<std::string> allowed_hosts;
    // Runs streamed calls so the connection thread can watch the stream.
    std::unique_ptr<WorkQueue> workers;
    std::vector<std::string> allowed_origins;  // normalized (lowercase)

    // Streamed answers open, in all and per legacy session.
    std::mutex streams_mutex;
    std::size_t streams_open = 0;
    std::unordered_map<std::string, std::size_t> streams_per_session;

    // A streamed answer's place, held by its call and its stream until both are done.
    struct StreamSlot {
        StreamSlot(Impl* owner, std::string session) : impl(owner), session_id(std::move(session)) {}
        StreamSlot(const StreamSlot&) = delete;
        StreamSlot& operator=(const StreamSlot&) = delete;
        Impl* impl;
        std::string session_id;
        ~StreamSlot() {
            std::lock_guard lock(impl->streams_mutex);
            --impl->streams_open;
            if (session_id.empty()) return;
            auto it = impl->streams_per_session.find(session_id);
            if (it != impl->streams_per_session.end() && --it->second == 0)
                impl->streams_per_session.erase(it);
        }
    };
    // nullptr at a bound.
    std::shared_ptr<StreamSlot> open_stream(const std::string& session_id) {
        std::lock_guard lock(streams_mutex);
        if (streams_open >= options.max_streams) return nullptr;
        if (!session_id.empty()) {
            auto& n = streams_per_session[session_id];
            if (n >= options.max_streams_per_session) return nullptr;
            ++n;
        }
        ++streams_open;
        return std::make_shared<StreamSlot>(this, session_id);
    }

    Impl(Server& s, HttpOptions o)
        : server(s), options(std::move(o)), workers(std::make_unique<WorkQueue>(options.workers)) {}

    bool host_allowed(const std::string& host) const {
        return std::find(allowed_hosts.begin(), allowed_hosts.end(), host) != allowed_hosts.end();
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

    // Reads the body (before: the caller's key has been checked), counting every byte against
    // max_body_bytes whether its length was announced or it comes chunked (or compressed):
    // reading stops at the bound with a 413. False after writing the error.
    bool read_body(const httplib::Request& req, httplib::Response& res,
                   const httplib::ContentReader& reader, std::string& body) {
        const std::size_t limit = options.max_body_bytes;
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

    // Returns the caller, or nullopt after writing a 401.
    std::optional<Principal> authenticate(const httplib::Request& req, httplib::Response& res) {
        if (!options.keys || options.keys->empty()) return options.anonymous;
        std::string key = req.get_header_value("X-API-Key");
        std::string auth = req.get_header_value("Authorization");
        if (key.empty() && auth.size() > 7 && lower(auth.substr(0, 7)) == "bearer ")
            key = auth.substr(7);
        if (auto principal = options.keys->authenticate(key)) return principal;
        res.set_header("WWW-Authenticate",
                       key.empty() ? R"(Bearer realm="agency-mcp")"
                                   : R"(Bearer realm="agency-mcp", error="invalid_token")");
        send_json_error(res, 401, nullptr, error_code::invalid_request,
                        key.empty() ? "authentication required: send your agency-mcp key as "
                                      "X-API-Key or Authorization: Bearer"
                                    : "unknown API key");
        return std::nullopt;
    }

    void sweep_sessions() {
        std::int64_t now = now_ms();
        std::int64_t last = last_sweep.load();
        if (now - last < 60'000 || !last_sweep.compare_exchange_strong(last, now)) return;
        if (auto n = server.expire_sessions(options.session_idle))
            spdlog::info("expired {} idle session(s)", n);
    }

    void handle_post(const httplib::Request& req, httplib::Response& res,
                     const httplib::ContentReader& reader);
    void handle_delete(const httplib::Request& req, httplib::Response& res);
};

void HttpTransport::Impl::handle_post(const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
    // Who is calling, and whether the body is wanted at all, is known before it is read.
    auto principal = authenticate(req, res);
    if (!principal) {
        if (has_body(req)) close_after(res);
        return;
    }
    std::string content_type = lower(req.get_header_value("Content-Type"));
    if (content_type.find("application/json") == std::string::npos) {
        if (has_body(req)) close_after(res);
        send_json_error(res, 415, nullptr, error_code::invalid_request,
                        "Content-Type must be application/json");
        return;
    }
    std::string text;
    if (!read_body(req, res, reader, text)) return;
    ParsedMessage parsed = parse_message(text, options.json_limits);
    if (!parsed.error.empty()) {
        res.status = 400;
        set_body(res, std::move(parsed.error), "application/json");
        return;
    }
    json& message = parsed.message;
    if (message.is_array()) {
        send_json_error(res, 400, nullptr, error_code::invalid_request,
                        "batch requests are not supported: send one message per POST");
        return;
    }
    MessageKind kind = classify(message);
    json id = message.is_object() ? message.value("id", json()) : json();
    if (kind == MessageKind::invalid) {
        send_json_error(res, 400, id, error_code::invalid_request,
                        "invalid request: expected a JSON-RPC 2.0 request, notification or "
                        "response");
        return;
    }
    const std::string method = message.value("method", "");
    const std::string session_id = req.get_header_value("Mcp-Session-Id");
    const std::string version_header = req.get_header_value("MCP-Protocol-Version");
    const json no_params = json::object();
    const json& params = message.contains("params") && message["params"].is_object()
                             ? message["params"]
                             : no_params;
    const bool has_meta = params.contains("_meta") && params["_meta"].is_object();

    // Era routing: a session id, or a legacy version header without _meta, is legacy;
    // otherwise a version header or _meta is modern. Plain initialize is legacy.
    const bool modern = session_id.empty() && (!version_header.empty() || has_meta) &&
                        !(!has_meta && is_legacy_version(version_header));
    std::shared_ptr<Session> session;
    const bool is_init = !modern && kind == MessageKind::request && method == "initialize";
    if (is_init) {
        sweep_sessions();
        if (server.session_count() >= options.max_sessions)
            return send_busy(res, id, "too many sessions open: try again later");
        session = server.create_session(crypto::random_hex(16));
    } else if (!modern) {
        if (session_id.empty()) {
            send_json_error(res, 400, id, error_code::invalid_request,
                            "missing Mcp-Session-Id header: call initialize first (or, for "
                            "protocol 2026-07-28, send MCP-Protocol-Version and params._meta)");
            return;
        }
        // Any supported version is accepted on a live session (some clients send an older one).
        if (!version_header.empty() && !is_supported_version(version_header)) {
            send_json_error(res, 400, id, error_code::invalid_request,
                            "unsupported MCP-Protocol-Version: " + version_header);
            return;
        }
        session = server.find_session(session_id);
        if (!session || session->principal.name != principal->name) {
            send_json_error(res, 404, id, error_code::invalid_request,
                            "unknown or expired session: initialize a new one");
            return;
        }
    } else if (kind == MessageKind::request || kind == MessageKind::notification) {
        // Modern: the routing headers must agree with the body. Missing _meta fields are the
        // core's -32602, checked before any header comparison.
        auto mismatch = [&](const std::string& what) {
            send_json_error(res, 400, id, error_code::header_mismatch, "header mismatch: " + what);
        };
        if (version_header.empty())
            return mismatch("the MCP-Protocol-Version header is required");
        const json meta = has_meta ? params["_meta"] : json::object();
        auto meta_version = meta.find("io.modelcontextprotocol/protocolVersion");
        bool meta_complete = meta_version != meta.end() &&
                             meta.contains("io.modelcontextprotocol/clientCapabilities");
        if (meta_complete) {
            if (!meta_version->is_string() || *meta_version != version_header)
                return mismatch("MCP-Protocol-Version is " + version_header +
                                " but params._meta says " + meta_version->dump());
            if (!req.has_header("Mcp-Method"))
                return mismatch("the Mcp-Method header is required");
            std::string method_header = trim(req.get_header_value("Mcp-Method"));
            if (method_header != method)
                return mismatch("Mcp-Method is " + method_header + " but the body's method is " +
                                method);
            const char* name_field =
                method == "resources/read"                              ? "uri"
                : (method == "tools/call" || method == "prompts/get")   ? "name"
                : (method == "tasks/get" || method == "tasks/update" ||
                   method == "tasks/cancel")                            ? "taskId"
                                                                        : nullptr;
            if (name_field) {
                if (!req.has_header("Mcp-Name"))
                    return mismatch(std::string("the Mcp-Name header is required for ") + method);
                std::string name_header =
                    decode_header_value(trim(req.get_header_value("Mcp-Name"))).value_or("");
                std::string body_name =
                    params.contains(name_field) && params[name_field].is_string()
                        ? params[name_field].get<std::string>()
                        : std::string();
                if (name_header != body_name)
                    return mismatch("Mcp-Name is " + name_header + " but the body's " +
                                    name_field + " is " + body_name);
            }
            if (method == "tools/call") {
                const json& args = params.contains("arguments") && params["arguments"].is_object()
                                       ? params["arguments"]
                                       : no_params;
                auto tool_name = params.find("name");
                const std::string tool = tool_name != params.end() && tool_name->is_string()
                                             ? tool_name->get<std::string>()
                                             : std::string();
                for (const auto& [arg, header] : server.header_params(tool)) {
                    std::string header_name = "Mcp-Param-" + header;
                    auto it = args.find(arg);
                    std::optional<std::string> expected =
                        it == args.end() ? std::nullopt : header_form(*it);
                    if (!req.has_header(header_name)) {
                        if (expected) return mismatch("the " + header_name + " header is required");
                        continue;
                    }
                    auto got = decode_header_value(trim(req.get_header_value(header_name)));
                    if (!got) return mismatch(header_name + " is not valid base64");
                    if (!expected || *got != *expected)
                        return mismatch(header_name + " does not match the argument " + arg);
                }
            }
        }
    }
    const bool legacy = !modern;

    if (kind != MessageKind::request) {
        Inbound in;
        in.era = legacy ? Era::legacy : Era::modern;
        in.session = session;
        in.principal = *principal;
        in.http = true;
        server.handle_message(message, in);
        res.status = 202;
        return;
    }

    const std::string accept = lower(req.get_header_value("Accept"));
    const bool accepts_sse = accept.find("text/event-stream") != std::string::npos;
    // Streamed: calls that talk back mid-call, and modern tool calls (so that closing the
    // stream cancels them, as 2026-07-28 requires).
    const bool modern_call = !legacy && method == "tools/call";
    if (accepts_sse && (modern_call || server.may_stream(message, session.get()))) {
        // Each streamed call holds a connection thread and waits for a worker: bounded.
        auto slot = open_stream(session ? session->id : std::string());
        if (!slot) return send_busy(res, id, "too many streamed calls open: try again later");
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
        auto channel = std::make_shared<StreamChannel>(legacy);
        auto call_in = std::make_shared<Inbound>();
        call_in->era = legacy ? Era::legacy : Era::modern;
        call_in->session = session;
        call_in->principal = *principal;
        call_in->channel = channel.get();
        call_in->stop = channel->stop_token();
        call_in->http = true;
        workers->post([this, channel, call_in, slot, message = std::move(message)] {
            channel->finish(server.handle_message(message, *call_in));
        });
        if (auto quick = channel->finished_quietly(options.stream_grace)) {
            if (!*quick) {
                res.status = 202;
                return;
            }
            if (!legacy) res.status = http_status_for_modern_error(**quick);
            set_body(res, std::move(**quick), "application/json");
            return;
        }
        res.set_chunked_content_provider(
            "text/event-stream", [this, channel, slot](std::size_t, httplib::DataSink& sink) {
                channel->relay(sink, options.keepalive);
                sink.done();
                return true;
            });
        return;
    }

    BufferChannel buffer;
    Inbound in;
    in.era = legacy ? Era::legacy : Era::modern;
    in.session = session;
    in.principal = *principal;
    in.channel = &buffer;
    in.http = true;
    auto reply = server.handle_message(message, in);
    if (!reply) {
        res.status = 202;
        return;
    }
    if (is_init && reply->find(R"("result":)") != std::string::npos) {
        server.register_session(session);
        res.set_header("Mcp-Session-Id", session->id);
    }
    if (!legacy) res.status = http_status_for_modern_error(*reply);
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
    std::string session_id = req.get_header_value("Mcp-Session-Id");
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

int HttpTransport::start() {
    auto& o = impl_->options;
    bool authenticated = o.keys && !o.keys->empty();
    if (!is_loopback_host(o.host) && !authenticated)
        throw std::runtime_error("refusing to listen on " + o.host +
                                 " without authentication: create a key with 'agency-mcp keys "
                                 "add' (or listen on 127.0.0.1)");
    impl_->allowed_hosts = {"localhost", "127.0.0.1", "[::1]"};
    if (!is_loopback_host(o.host) && o.host != "0.0.0.0" && o.host != "::")
        impl_->allowed_hosts.push_back(lower(o.host));
    for (const auto& h : o.allowed_hosts) impl_->allowed_hosts.push_back(lower(h));
    impl_->allowed_origins.clear();
    for (const auto& origin : o.allowed_origins) {
        std::string host;
        if (auto normal = parse_origin(origin, host))
            impl_->allowed_origins.push_back(*normal);
        else
            spdlog::warn("--allowed-origin {} is not an origin (scheme://host[:port]); ignored",
                         origin);
    }

    auto& http = impl_->http;
    net::ConnectionLimits limits;
    limits.max_connections = o.max_connections;
    limits.max_connections_per_peer = o.max_connections_per_peer;
    limits.head_timeout = o.head_timeout;
    // Each open stream holds a thread: plain requests keep `threads` of their own.
    limits.threads = o.threads + o.max_streams;
    http.set_limits(limits);
    http.set_payload_max_length(o.max_body_bytes);
    http.set_keep_alive_max_count(100000);
    // An idle keep-alive connection holds no thread (PlainServer parks it in its epoll set).
    http.set_keep_alive_timeout(std::max<time_t>(1, o.idle_timeout.count()));
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
        if (!host.empty() && !impl_->host_allowed(host_part(host)))
            return refuse(403, "forbidden Host header: " + host);
        std::string origin = req.get_header_value("Origin");
        if (!origin.empty() && !impl_->origin_allowed(origin))
            return refuse(403, "forbidden Origin: " + origin);
        if (req.has_header("Mcp-Session-Id") &&
            !valid_session_id(req.get_header_value("Mcp-Session-Id")))
            return refuse(400, "invalid Mcp-Session-Id: session ids are visible ASCII");
        // Only a POST to the endpoint has a body worth reading (and reads it bounded).
        if (has_body(req) && !(req.method == "POST" && req.path == impl_->options.path)) {
            if (req.path != impl_->options.path)
                return refuse(404, "not found: the MCP endpoint is " + impl_->options.path);
            res.set_header("Allow", "POST, DELETE, OPTIONS");
            return refuse(405, "a request body is accepted only by POST");
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    // "Expect: 100-continue": a caller without a valid key, or with a body over the bound, is
    // answered before it sends the body at all.
    http.set_expect_100_continue_handler([this](const httplib::Request& req,
                                                httplib::Response& res) {
        if (req.method != "POST" || req.path != impl_->options.path) return 100;
        if (!impl_->authenticate(req, res)) {
            close_after(res);
            return res.status;
        }
        if (req.has_header("Content-Length")) {
            const std::string announced = req.get_header_value("Content-Length");
            if (!announced.empty() && announced.size() <= 19 &&
                announced.find_first_not_of("0123456789") == std::string::npos &&
                std::stoull(announced) > impl_->options.max_body_bytes) {
                close_after(res);
                send_json_error(res, 413, nullptr, error_code::invalid_request,
                                "request body too large");
                return 413;
            }
        }
        return 100;
    });
    // Browsers: an origin that passes the Origin check may read our answers and the session id.
    http.set_post_routing_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!req.has_header("Origin") || res.status == 403) return;
        res.set_header("Access-Control-Allow-Origin", req.get_header_value("Origin"));
        res.set_header("Access-Control-Expose-Headers", "Mcp-Session-Id");
        res.set_header("Vary", "Origin");
    });
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
                spdlog::error("HTTP handler failed: {}", e.what());
            }
            send_json_error(res, 500, nullptr, error_code::internal_error, "internal error");
        });
    http.Post(o.path, [this](const httplib::Request& req, httplib::Response& res,
                             const httplib::ContentReader& reader) {
        impl_->handle_post(req, res, reader);
    });
    // CORS preflight: origins that pass the Origin check (in the pre-routing handler; others
    // got 403 there) may send the MCP headers; the answer is cached for 10 minutes.
    http.Options(o.path, [](const httplib::Request& req, httplib::Response& res) {
        res.status = 204;
        res.set_header("Allow", "POST, DELETE, OPTIONS");
        if (!req.has_header("Origin")) return;
        res.set_header("Access-Control-Allow-Methods", "POST, DELETE, OPTIONS");
        // The fixed MCP headers, and the Mcp-Param-* headers a tool call may carry (their
        // names depend on the tool, so they are taken from the request).
        std::string allowed =
            "Content-Type, Accept, Authorization, X-API-Key, Mcp-Session-Id, "
            "MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID";
        const std::string requested = req.get_header_value("Access-Control-Request-Headers");
        for (std::size_t at = 0; at < requested.size();) {
            auto comma = requested.find(',', at);
            if (comma == std::string::npos) comma = requested.size();
            const std::string name = trim(requested.substr(at, comma - at));
            at = comma + 1;
            if (name.size() > 10 && lower(name.substr(0, 10)) == "mcp-param-" &&
                std::all_of(name.begin(), name.end(), [](unsigned char c) {
                    return std::isalnum(c) || c == '-' || c == '_';
                }))
                allowed += ", " + name;
        }
        res.set_header("Access-Control-Allow-Headers", allowed);
        res.set_header("Access-Control-Max-Age", "600");
    });
    http.Delete(o.path, [this](const httplib::Request& req, httplib::Response& res) {
        impl_->handle_delete(req, res);
    });
    http.Get(o.path, [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Allow", "POST, DELETE");
        send_json_error(res, 405, nullptr, error_code::invalid_request,
                        "this server offers no GET stream: POST JSON-RPC messages to this URL");
    });

    // httplib listens with a backlog of 5: a burst of new connections (16 clients at once) loses
    // SYNs, which the client resends only a second later. Keep the socket to deepen it below.
    auto listen_fd = std::make_shared<std::atomic<socket_t>>(INVALID_SOCKET);
    http.set_socket_options([listen_fd](socket_t sock) {
        httplib::default_socket_options(sock);
        listen_fd->store(sock);
    });
    if (o.port == 0) {
        impl_->port = http.bind_to_any_port(o.host);
        if (impl_->port <= 0) throw std::runtime_error("cannot listen on " + o.host);
    } else {
        if (!http.bind_to_port(o.host, o.port))
            throw std::runtime_error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                                     " (address in use or not available)");
        impl_->port = o.port;
    }
    if (listen_fd->load() != INVALID_SOCKET) ::listen(listen_fd->load(), SOMAXCONN);
    impl_->thread = std::thread([this] { impl_->http.listen_after_bind(); });
    while (!impl_->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return impl_->port;
}

void HttpTransport::stop() {
    if (impl_->thread.joinable()) {
        impl_->http.stop();
        impl_->thread.join();
        impl_->workers->drain();
    }
}

void HttpTransport::wait() {
    if (impl_->thread.joinable()) impl_->thread.join();
}

std::string HttpTransport::url() const {
    std::string host = impl_->options.host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    return "http://" + host + ":" + std::to_string(impl_->port) + impl_->options.path;
}

}  // namespace agency::mcp
