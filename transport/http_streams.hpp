// The channels an HTTP answer's messages travel through while the core answers it: collected
// for an inline answer, or relayed as Server-Sent Events for a streamed one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
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

// A call answered in one body: collects the notifications it sends meanwhile. Run on a worker,
// it hands its reply over with finish() to the connection thread waiting in wait().
// cancel_source() is the call's cancellation (its client gone: DisconnectWatch).
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
    std::optional<Reply> wait() {
        std::unique_lock lock(mutex_);
        done_cv_.wait(lock, [this] { return done_; });
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
    // Closing the stream from outside (its client gone: DisconnectWatch) cancels the call.
    std::stop_source close_source() const { return closed_; }

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
