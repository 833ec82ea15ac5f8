// The calls a server has taken and not yet answered, by (session, caller, request id): the one
// registry notifications/cancelled reaches. The caller is part of the key: two callers' request
// ids are their own (over HTTP without sessions they share one space), so one caller's
// notifications/cancelled never stops another's call. A transport that queues a call before a
// worker takes it enters it at once (stdio does), so a cancel reaches it while it waits; the core
// enters every call it dispatches, and an entry already made for the same key is the same call.
#pragma once

#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/json_rpc.hpp"

namespace agency::mcp {

struct Session;

class CallsInFlight {
public:
    // One call: stopped by cancel() or cancel_all(); gone from the registry when the last
    // holder lets go.
    class Call {
    public:
        Call(CallsInFlight& owner, std::string key) : owner_(owner), key_(std::move(key)) {}
        ~Call();
        Call(const Call&) = delete;
        Call& operator=(const Call&) = delete;
        std::stop_token token() const { return stop_.get_token(); }
        bool cancelled() const { return stop_.stop_requested(); }
        void cancel() { stop_.request_stop(); }

    private:
        CallsInFlight& owner_;
        std::string key_;
        std::stop_source stop_;
    };

    // The call `id` of `caller` in `session` (null: sessionless), entered now or the one already
    // entered.
    std::shared_ptr<Call> enter(const Session* session, std::string_view caller, const json& id);
    // notifications/cancelled: stops that call when it is in flight; nothing otherwise.
    void cancel(const Session* session, std::string_view caller, const json& id);
    // Stops every call in flight (the server stops).
    void cancel_all();

private:
    static std::string key_of(const Session* session, std::string_view caller, const json& id);
    std::mutex mutex_;  // guards calls_
    std::unordered_map<std::string, std::weak_ptr<Call>> calls_;
};

}  // namespace agency::mcp
