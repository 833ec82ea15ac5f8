// serve_stdio on a thread of the test, talking through two pipes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "server/mcp_server.hpp"
#include "transport/stdio_transport.hpp"

namespace agency::testing {

using namespace std::chrono_literals;
using Server = agency::mcp::Server;
using json = nlohmann::json;

class StdioHarness {
public:
    StdioHarness(Server& server, agency::mcp::StdioOptions options) {
        int in_pipe[2];
        int out_pipe[2];
        if (::pipe(in_pipe) != 0 || ::pipe(out_pipe) != 0) throw std::runtime_error("pipe");
        in_write_ = in_pipe[1];
        out_read_ = out_pipe[0];
        server_in_ = in_pipe[0];
        server_out_ = out_pipe[1];
        thread_ = std::thread([this, &server, options] {
            exit_code_ = agency::mcp::serve_stdio(server, options, server_in_, server_out_);
            {
                std::lock_guard lock(finished_mutex_);
                finished_ = true;
            }
            finished_changed_.notify_all();
        });
    }
    ~StdioHarness() {
        close_input();
        if (thread_.joinable()) thread_.join();
        for (int fd : {out_read_, server_in_, server_out_})
            if (fd >= 0) ::close(fd);
    }
    StdioHarness(const StdioHarness&) = delete;
    StdioHarness& operator=(const StdioHarness&) = delete;

    void write_raw(const std::string& data) {
        std::size_t done = 0;
        while (done < data.size()) {
            ssize_t n = ::write(in_write_, data.data() + done, data.size() - done);
            if (n <= 0) throw std::runtime_error("write to server failed");
            done += static_cast<std::size_t>(n);
        }
    }
    void write_line(const std::string& line) { write_raw(line + "\n"); }

    // Next output line, or nullopt after `timeout`.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout = 3000ms) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return line;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            pollfd p{out_read_, POLLIN, 0};
            int ready = ::poll(&p, 1, static_cast<int>(left.count()));
            if (ready <= 0) continue;
            char chunk[4096];
            ssize_t n = ::read(out_read_, chunk, sizeof chunk);
            if (n <= 0) return std::nullopt;
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }
    json read_json(std::chrono::milliseconds timeout = 3000ms) {
        auto line = read_line(timeout);
        if (!line) return nullptr;
        json parsed = json::parse(*line, nullptr, false);
        EXPECT_FALSE(parsed.is_discarded()) << *line;
        return parsed;
    }
    // Reads lines until one answers `id`; the others are collected in `before`.
    json read_response(const json& id, std::vector<json>* before = nullptr) {
        for (int i = 0; i < 50; ++i) {
            json message = read_json();
            if (message.is_null()) return nullptr;
            if (message.contains("id") && message["id"] == id &&
                (message.contains("result") || message.contains("error")))
                return message;
            if (before) before->push_back(message);
        }
        return nullptr;
    }

    void close_input() {
        if (in_write_ >= 0) {
            ::close(in_write_);
            in_write_ = -1;
        }
    }
    // Closes the input and waits for serve_stdio to return.
    bool finish(std::chrono::milliseconds limit = 3000ms) {
        close_input();
        {
            std::unique_lock lock(finished_mutex_);
            if (!finished_changed_.wait_for(lock, limit, [this] { return finished_.load(); }))
                return false;
        }
        if (thread_.joinable()) thread_.join();
        return true;
    }
    // Everything written after finish().
    std::vector<json> remaining() {
        std::vector<json> out;
        int flags = ::fcntl(out_read_, F_GETFL);
        ::fcntl(out_read_, F_SETFL, flags | O_NONBLOCK);
        for (;;) {
            auto line = read_line(50ms);
            if (!line) break;
            out.push_back(json::parse(*line, nullptr, false));
        }
        return out;
    }
    int exit_code() const { return exit_code_; }

private:
    int in_write_ = -1;
    int out_read_ = -1;
    int server_in_ = -1;
    int server_out_ = -1;
    std::string buffer_;
    std::thread thread_;
    std::mutex finished_mutex_;
    std::condition_variable finished_changed_;
    std::atomic<bool> finished_{false};
    int exit_code_ = -1;
};

}  // namespace agency::testing
