// How one message is handled, from the moment a transport has read it to the reply it gets:
// reading it into an Incoming (its kind and its method's entry, found once), the guard that
// turns anything thrown into a JSON-RPC error (the one place), responses and notifications,
// the request's era, and the call of its method's handler. The registry and the server object
// are in server_object.cpp; the handlers in methods.cpp, tool_calls.cpp and task_runtime.cpp.
#include <limits>
#include <memory>
#include <stop_token>

#include "base/log.hpp"
#include "server/method_table.hpp"
#include "server/server_impl.hpp"
#include "server/telemetry.hpp"

namespace agency::mcp {

Incoming read_incoming(json message) {
    Incoming in;
    in.kind = classify(message);
    if (message.is_object()) {
        if (auto id = message.find("id"); id != message.end()) in.id = *id;
        if (auto method = message.find("method"); method != message.end() && method->is_string())
            in.method = method->get<std::string>();
    }
    if (in.kind == MessageKind::request || in.kind == MessageKind::notification)
        in.entry = find_method(in.method);
    in.message = std::move(message);
    return in;
}

const json& Incoming::params() const {
    static const json empty = json::object();
    auto it = message.find("params");
    return it != message.end() && it->is_object() ? *it : empty;
}


std::optional<Reply> Server::handle(std::string_view text, const Inbound& in) {
    ParsedMessage parsed = parse_message(text, impl_->options.json_limits);
    if (parsed.error) return std::move(parsed.error);
    return handle_message(read_incoming(std::move(parsed.message)), in);
}

std::optional<Reply> Server::handle_message(const json& message, const Inbound& in) {
    return handle_message(read_incoming(message), in);
}

// Whatever a message holds, it is answered (or dropped, for a notification or a response) and
// the server keeps serving: nothing thrown here may reach a transport's thread. This is the one
// place where what a handler throws becomes a JSON-RPC error.
std::optional<Reply> Server::handle_message(const Incoming& message, const Inbound& in) {
    const json& id = message.id;
    const std::string& method = message.method;
    // A notification or a response gets no answer, even when handling it failed.
    const bool answered =
        !message.message.is_object() || (!id.is_null() && message.message.contains("method"));
    // Its trace for the thread (log lines, gateway requests) and its metrics.
    RequestObserver observed(message, in);
    auto error = [&](int code, const std::string& text, json data) -> std::optional<Reply> {
        observed.rpc_error(code);
        if (!answered) return std::nullopt;
        return Reply::error(id, code, text, data);
    };
    try {
        return dispatch_message(message, in);
    } catch (const RpcError& e) {
        return error(e.code(), e.what(), e.data());
    } catch (const json::type_error& e) {
        // A value of the wrong type in the params that a handler read without checking.
        impl_->refusals->write(log::Level::info, "params of the wrong type", in.principal.name,
                               "{}: params of the wrong type from {}: {}", method,
                               in.principal.name, e.what());
        std::string what = e.what();
        if (auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
        return error(error_code::invalid_params,
                     "invalid params: a value has the wrong type (" + what + ")", json());
    } catch (const std::exception& e) {
        // Internals stay in the server's log; the caller gets a generic message.
        log::error("internal error handling {}: {}", method, e.what());
    } catch (...) {
        log::error("internal error handling {}", method);
    }
    return error(error_code::internal_error, "internal error", json());
}

RpcError client_error(const json& error) {
    if (!error.is_object())
        return RpcError(error_code::internal_error,
                        "the client answered with a malformed error (not an object)");
    auto code = error.find("code");
    auto message = error.find("message");
    auto data = error.find("data");
    return RpcError(code != error.end() && code->is_number_integer() &&
                            code->get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                            code->get<std::int64_t>() <= std::numeric_limits<int>::max()
                        ? static_cast<int>(code->get<std::int64_t>())
                        : error_code::internal_error,
                    "the client answered with an error: " +
                        (message != error.end() && message->is_string()
                             ? message->get<std::string>().substr(0, 512)
                             : std::string("(no message)")),
                    data != error.end() ? *data : json());
}

void Server::Impl::deliver_response(const json& message, const json& id, const Inbound& in) {
    std::shared_ptr<PendingRequest> request;
    if (id.is_string()) {
        std::lock_guard lock(requests.mutex);
        auto it = requests.pending.find(id.get<std::string>());
        std::string sid = in.session ? in.session->id : std::string();
        // Only the session that was asked may answer.
        if (it != requests.pending.end() && it->second->session_id == sid) {
            request = it->second;
            requests.pending.erase(it);
        }
    }
    if (!request) return;
    if (auto err = message.find("error"); err != message.end())
        request->promise.set_value({.result = nullptr, .error = *err});
    else
        request->promise.set_value({.result = message["result"], .error = std::nullopt});
}

void Server::Impl::handle_notification(const std::string& method, const json& params,
                                       const Inbound& in) {
    // Notifications are never answered: what fails here is only logged.
    try {
        if (method == "notifications/initialized") {
            if (in.session) in.session->initialized = true;
        } else if (method == "notifications/cancelled") {
            auto rid = params.find("requestId");
            if (rid != params.end()) calls.cancel(in.session.get(), in.principal.name, *rid);
        }
    } catch (const std::exception& e) {
        log::debug("ignored notification {}: {}", method, e.what());
    }
}

std::optional<Reply> Server::dispatch_message(const Incoming& message, const Inbound& in) {
    if (message.message.is_array())
        return Reply::error(nullptr, error_code::invalid_request,
                            "batch requests are not supported: send one message at a time");
    const MessageKind kind = message.kind;
    const json& id = message.id;
    if (kind == MessageKind::invalid) {
        return Reply::error(id, error_code::invalid_request,
                            "invalid request: expected a JSON-RPC 2.0 object with \"jsonrpc\":"
                            "\"2.0\", a string \"method\", an object \"params\" and a string "
                            "or integer \"id\"");
    }
    if (kind == MessageKind::response) {
        impl_->deliver_response(message.message, id, in);
        return std::nullopt;
    }
    const std::string& method = message.method;
    const json& params = message.params();
    if (kind == MessageKind::request) begin_work_unless_probe(*this, method);
    if (kind == MessageKind::notification) {
        impl_->handle_notification(method, params, in);
        return std::nullopt;
    }

    RequestContext ctx;
    ctx.server_ = this;
    ctx.channel_ = in.channel;
    ctx.request_id = id;
    ctx.principal = in.principal;
    // notifications/cancelled finds the call by (session, id) while it runs (the one registry,
    // server/calls_in_flight.hpp; a transport that queued it entered it already).
    const auto call = impl_->calls.enter(in.session.get(), in.principal.name, id);
    ctx.stop = call->token();
    std::optional<std::stop_callback<std::function<void()>>> forward;
    if (in.stop.stop_possible())
        forward.emplace(in.stop, std::function<void()>([&call = *call] { call.cancel(); }));

    resolve_era(message, in, ctx);
    return dispatch_request(message, ctx, in);
}

namespace {

// Checks a modern request's _meta (version, capabilities, log level) and returns its
// client capabilities.
const json& check_modern_meta(const json* meta) {
    if (!meta || !meta->contains(kMetaVersion))
        throw RpcError(error_code::invalid_params,
                       "params._meta[\"io.modelcontextprotocol/protocolVersion\"] is "
                       "required (protocol 2026-07-28)");
    const json& version = (*meta)[std::string(kMetaVersion)];
    auto caps = meta->find(kMetaCapabilities);
    if (caps == meta->end() || !caps->is_object())
        throw RpcError(error_code::invalid_params,
                       "params._meta[\"io.modelcontextprotocol/clientCapabilities\"] is "
                       "required (use {} for none)");
    if (!version.is_string() || version != kModernVersion) {
        throw RpcError(error_code::unsupported_protocol_version,
                       "unsupported protocol version; supported: " + std::string(kModernVersion) +
                           " (per request), or 2025-11-25, 2025-06-18, 2025-03-26 via "
                           "initialize",
                       {{"supported", supported_versions()}, {"requested", version}});
    }
    if (auto lvl = meta->find(kMetaLogLevel);
        lvl != meta->end() &&
        (!lvl->is_string() || log_level_index(lvl->get_ref<const std::string&>()) < 0))
        throw RpcError(error_code::invalid_params,
                       "invalid log level; use one of debug, info, notice, warning, "
                       "error, critical, alert, emergency");
    return *caps;
}

}  // namespace

void Server::resolve_era(const Incoming& message, const Inbound& in, RequestContext& ctx) {
    const json& params = message.params();
    const json* meta = nullptr;
    if (auto it = params.find("_meta"); it != params.end() && it->is_object()) {
        meta = &*it;
        ctx.meta = *it;
        if (auto pt = it->find("progressToken"); pt != it->end()) ctx.progress_token = *pt;
    }
    const MethodEntry* entry = message.entry;
    const bool opens_session = entry && entry->opens_session;
    // The transport's verdict wins; otherwise per-request _meta makes a request modern, except
    // the one that opens a legacy session.
    const bool modern =
        in.era ? *in.era == Era::modern : !opens_session && meta && meta->contains(kMetaVersion);
    if (modern) {
        ctx.client_capabilities = check_modern_meta(meta);
        ctx.era = Era::modern;
        ctx.protocol_version = std::string(kModernVersion);
    } else if (opens_session) {
        ctx.era = Era::legacy;
    } else if (in.session && !in.session->protocol_version.empty()) {
        ctx.era = Era::legacy;
        ctx.session = in.session;
        ctx.protocol_version = in.session->protocol_version;
        ctx.client_capabilities = in.session->client_capabilities;
        in.session->last_used_ms = impl_->now_ms();
        in.session->last_used_seq = ++impl_->sessions.uses;
    } else if (entry && entry->before_initialize) {
        ctx.era = Era::legacy;
    } else {
        throw RpcError(error_code::invalid_params,
                       "no protocol version for this request: call initialize first "
                       "(protocol 2025-11-25 and earlier), or send "
                       "params._meta[\"io.modelcontextprotocol/protocolVersion\"] and "
                       "[\"io.modelcontextprotocol/clientCapabilities\"] (2026-07-28)",
                       {{"supported", supported_versions()}});
    }
}

std::optional<Reply> Server::dispatch_request(const Incoming& message, RequestContext& ctx,
                                              const Inbound& in) {
    const bool legacy = ctx.era == Era::legacy;
    const MethodEntry* entry = message.entry;
    const std::string& method = message.method;
    if (!entry || !(entry->eras & (legacy ? kLegacyEra : kModernEra))) {
        std::string_view note = entry && !entry->absent_note.empty() ? entry->absent_note
                                : legacy                             ? std::string_view()
                                         : " (not part of protocol 2026-07-28)";
        throw RpcError(error_code::method_not_found, "method not found: " + method +
                                                         std::string(note));
    }
    return entry->handler(*this, Request{method, message.id, message.params(), ctx, in});
}

}  // namespace agency::mcp
