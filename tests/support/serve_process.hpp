// `agency-mcp serve` (stdio) as a child process on pipes: requests in, answers out, stderr into
// a file: the tests that drive the real binary as a client would, while it keeps running.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/paths.hpp"
#include "tests/support/wait.hpp"

namespace agency::testing {

// `agency-mcp serve` on pipes: requests in, answers out, stderr into a file.
class ServeProcess {
public:
    // `env`: VARIABLE=value words put before the binary (AGENCY_GATEWAY_URL is always unset:
    // the built-in sample gateway answers unless `args` names another).
    ServeProcess(const std::filesystem::path& dir, const std::string& args,
                 const std::string& env = "")
        : err_(dir / "stderr.txt") {
        int in[2], out[2];
        if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            ::dup2(err, 2);
            for (int fd : {in[0], in[1], out[0], out[1], err}) ::close(fd);
            const std::string command =
                "exec env -u AGENCY_GATEWAY_URL " + env + " '" + AGENCY_BINARY + "' " + args;
            ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        in_ = in[1];
        out_ = out[0];
    }
    ~ServeProcess() {
        close_input();
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (out_ >= 0) ::close(out_);
    }

    void send(const nlohmann::json& message) {
        const std::string line = message.dump() + "\n";
        ASSERT_EQ(::write(in_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    }
    // The answer to request `id` (other lines skipped), or null after 10 s.
    nlohmann::json answer(int id) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
                const nlohmann::json message = nlohmann::json::parse(buffer_.substr(0, nl), nullptr, false);
                buffer_.erase(0, nl + 1);
                EXPECT_FALSE(message.is_discarded()) << "stdout carries only JSON-RPC";
                if (message.is_object() && message.value("id", 0) == id) return message;
                continue;
            }
            pollfd p{out_, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            char chunk[8192];
            const ssize_t n = ::read(out_, chunk, sizeof chunk);
            if (n <= 0) break;
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
        return nullptr;
    }
    void close_input() {
        if (in_ >= 0) ::close(in_);
        in_ = -1;
    }
    // Closes stdin and waits for the exit code (-1 after 10 s).
    int finish() {
        close_input();
        int status = 0;
        const bool exited = eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; },
                                       std::chrono::seconds(10), std::chrono::milliseconds(10));
        if (!exited) return -1;
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::string stderr_text() const {
        std::ifstream in(err_);
        return {std::istreambuf_iterator<char>(in), {}};
    }

private:
    std::filesystem::path err_;
    pid_t pid_ = -1;
    int in_ = -1, out_ = -1;
    std::string buffer_;
};

}  // namespace agency::testing
