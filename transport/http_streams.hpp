// The channels an HTTP answer's messages travel through while the core answers it: collected
// for an inline answer, or relayed as Server-Sent Events for a streamed one.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <httplib.h>

#include "server/mcp_server.hpp"

namespace agency::mcp {

// One JSON-RPC message as an SSE event.
inline std::string sse_event(const std::string& message) {
    std::string out;
    out.reserve(message.size() + 24);
    out += "event: message\ndata: ";
    out += message;
    out += "\n\n";
    return out;
}

// A call answered in one body: it runs on a worker and collects the notifications it sends
// meanwhile; the connection thread waits for its reply, and cancels the call when the client
// goes away.
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

    void finish(std::optional<Reply> reply) {
        {
            std::lock_guard lock(mutex_);
            reply_ = std::move(reply);
            done_ = true;
        }
        done_cv_.notify_all();
    }
    // Waits for finish(). Every `poll` it asks `gone`; once the client is gone the call is
    // cancelled (stop_token()) and the wait goes on until the call has ended.
    std::optional<Reply> wait(const std::function<bool()>& gone, std::chrono::milliseconds poll) {
        std::unique_lock lock(mutex_);
        while (!done_cv_.wait_for(lock, poll, [this] { return done_; }))
            if (!cancel_.stop_requested() && gone()) cancel_.request_stop();
        return std::move(reply_);
    }
    std::stop_token stop_token() const { return cancel_.get_token(); }
    std::stop_source cancel_source() const { return cancel_; }

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    std::vector<std::string> messages_;
    std::optional<Reply> reply_;
    bool done_ = false;
    std::stop_source cancel_;
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

    void finish(std::optional<Reply> reply) {
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
    std::optional<std::optional<Reply>> finished_quietly(std::chrono::milliseconds grace) {
        std::unique_lock lock(mutex_);
        ready_.wait_for(lock, grace, [this] { return done_ || !events_.empty(); });
        if (done_ && events_.empty()) {
            relayed_ = true;
            return std::move(reply_);
        }
        return std::nullopt;
    }
    std::stop_token stop_token() const { return closed_.get_token(); }

    // Runs on the connection thread until the call has finished. Every `poll` it asks `gone`
    // (the client closed the connection): the call is cancelled then, not at the next write.
    void relay(httplib::DataSink& sink, std::chrono::milliseconds keepalive,
               const std::function<bool()>& gone, std::chrono::milliseconds poll) {
        static const std::string comment = ":\n\n";
        std::unique_lock lock(mutex_);
        for (;;) {
            const auto quiet_until = std::chrono::steady_clock::now() + keepalive;
            bool woke = false;
            while (!(woke = ready_.wait_for(lock, std::min(poll, keepalive),
                                            [this] { return done_ || !events_.empty(); })) &&
                   std::chrono::steady_clock::now() < quiet_until)
                if (!closed_.stop_requested() && gone()) closed_.request_stop();
            std::deque<std::string> batch;
            batch.swap(events_);
            bool finished = done_;
            if (finished && reply_ && !relayed_) {
                batch.push_back(sse_event(reply_->text));
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
    std::optional<Reply> reply_;
    bool done_ = false;
    bool relayed_ = false;
};

}  // namespace agency::mcp
