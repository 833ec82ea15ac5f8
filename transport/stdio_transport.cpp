#include "transport/stdio_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.hpp"

#include "base/work_queue.hpp"
#include "server/method_table.hpp"

namespace agency::mcp {

namespace {

class LineWriter {
public:
    explicit LineWriter(int fd) : fd_(fd) {}
    // The message and its newline in one system call (writev), not two.
    void write_line(const std::string& message) {
        static const char newline = '\n';
        iovec parts[2] = {{const_cast<char*>(message.data()), message.size()},
                          {const_cast<char*>(&newline), 1}};
        iovec* part = parts;
        int count = 2;
        std::lock_guard lock(mutex_);
        if (closed_) return;
        while (count > 0) {
            ssize_t n = ::writev(fd_, part, count);
            if (n < 0) {
                if (errno == EINTR) continue;
                return;  // the client went away; the reader will see EOF
            }
            auto done = static_cast<std::size_t>(n);
            while (count > 0 && done >= part->iov_len) {  // whole parts written
                done -= part->iov_len;
                ++part;
                --count;
            }
            if (count > 0) {  // a short write: the rest of this part next
                part->iov_base = static_cast<char*>(part->iov_base) + done;
                part->iov_len -= done;
            }
        }
    }

    // Drops every later message: the session ends, but a task it started may still report
    // (its status notifications) and must not write to a descriptor no longer ours.
    void close() {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }

private:
    int fd_;
    std::mutex mutex_;
    bool closed_ = false;
};

class StdioChannel : public Channel {
public:
    explicit StdioChannel(LineWriter& writer) : writer_(writer) {}
    void send(const std::string& message) override { writer_.write_line(message); }
    bool can_send_requests() const override { return true; }

private:
    LineWriter& writer_;
};

// Requests whose method may wait on a gateway or on the client run on workers; the rest
// inline, in order.
bool runs_on_worker(const Incoming& message) {
    return message.kind == MessageKind::request && message.entry &&
           message.entry->runs == Runs::on_worker;
}

// Waits until `in_fd` has bytes (or its end) or `stop_fd` is readable; false for a stop.
bool wait_for_input(int in_fd, int stop_fd) {
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    for (;;) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return true;  // let read() report it
        }
        if (fds[1].revents != 0) return false;
        if (fds[0].revents != 0) return true;
    }
}

// Newline-delimited framing with a bound per line: each complete line goes to `on_line`; a line
// over the bound is dropped whole (its bytes up to its newline) and `on_too_large` runs once.
class LineFramer {
public:
    LineFramer(std::size_t max_bytes, std::function<void()> on_too_large)
        : max_bytes_(max_bytes), on_too_large_(std::move(on_too_large)) {}

    template <typename OnLine>
    void feed(std::string_view data, OnLine&& on_line) {
        while (!data.empty()) {
            const auto newline = data.find('\n');
            const std::string_view piece = data.substr(0, newline);
            if (!discarding_) {
                if (buffer_.size() + piece.size() > max_bytes_) {
                    discarding_ = true;
                    buffer_.clear();
                    on_too_large_();
                } else {
                    buffer_.append(piece);
                }
            }
            if (newline == std::string_view::npos) return;
            data.remove_prefix(newline + 1);
            if (std::exchange(discarding_, false)) continue;
            on_line(std::exchange(buffer_, std::string()));
        }
    }
    // The input ended: a last line without its newline still counts.
    template <typename OnLine>
    void finish(OnLine&& on_line) {
        if (!discarding_ && !buffer_.empty()) on_line(std::exchange(buffer_, std::string()));
    }

private:
    std::size_t max_bytes_;
    std::function<void()> on_too_large_;
    std::string buffer_;
    bool discarding_ = false;  // inside an oversized line: bytes dropped until its newline
};

}  // namespace

int serve_stdio(Server& server, const StdioOptions& options, int in_fd, int out_fd) {
    // Shared with the session's notification path, which tasks keep after serve_stdio returns.
    const auto shared_writer = std::make_shared<LineWriter>(out_fd);
    LineWriter& writer = *shared_writer;
    StdioChannel channel(writer);
    auto session = server.create_session("");
    session->notify = [shared_writer](const std::string& m) { shared_writer->write_line(m); };
    server.register_session(session);
    std::stop_source shutdown;

    Inbound in;
    in.session = session;
    in.principal = options.principal;
    in.channel = &channel;
    in.stop = shutdown.get_token();

    base::WorkQueue workers(options.workers);
    base::WorkQueue read_workers(options.read_workers);
    LineFramer framer(options.max_message_bytes, [&] {
        writer.write_line(make_error_text(nullptr, error_code::invalid_request,
                                          "message too large: the limit is " +
                                              std::to_string(options.max_message_bytes) +
                                              " bytes per line"));
    });
    char chunk[65536];

    auto dispatch = [&](std::string&& text) {
        if (text.empty() || text.find_first_not_of(" \t\r") == std::string::npos) return;
        ParsedMessage parsed = parse_message(text, options.json_limits);
        if (parsed.error) {
            writer.write_line(parsed.error->text);
            return;
        }
        Incoming message = read_incoming(std::move(parsed.message));
        if (runs_on_worker(message)) {
            // Entered while it waits for a worker, so that notifications/cancelled reaches it
            // there too (the core's registry; the core finds this entry when it runs).
            auto call =
                server.calls_in_flight().enter(session.get(), in.principal.name, message.id);
            base::WorkQueue& lane = server.may_wait_long(message) ? workers : read_workers;
            lane.post([&, call, message = std::move(message)] {
                Inbound call_in = in;
                call_in.stop = call->token();
                std::stop_callback forward_shutdown(in.stop, [&call = *call] { call.cancel(); });
                // Cancelled before it started: drop it without an answer.
                if (!call->cancelled()) {
                    if (auto reply = server.handle_message(message, call_in))
                        writer.write_line(reply->text);
                }
            });
            return;
        }
        if (auto reply = server.handle_message(message, in)) writer.write_line(reply->text);
    };

    for (;;) {
        if (options.stop_fd >= 0 && !wait_for_input(in_fd, options.stop_fd)) {
            log::info("asked to stop: answering the calls in flight, then exiting");
            break;
        }
        ssize_t n = ::read(in_fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        framer.feed(std::string_view(chunk, static_cast<std::size_t>(n)), dispatch);
    }
    framer.finish(dispatch);
    // End of input: answer what is running (a piped script expects its replies), but do not
    // wait forever for calls that can no longer be answered by the client.
    const auto drain_until = std::chrono::steady_clock::now() + options.drain_timeout;
    const auto left = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(drain_until - std::chrono::steady_clock::now(),
                     std::chrono::steady_clock::duration::zero()));
    };
    if (!workers.drain_for(left()) || !read_workers.drain_for(left())) {
        shutdown.request_stop();
        workers.drain();
        read_workers.drain();
    }
    server.forget_session(session->id);
    writer.close();
    log::debug("stdin closed; exiting");
    return 0;
}

}  // namespace agency::mcp
