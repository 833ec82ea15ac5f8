// What the fuzz targets share: quiet logs, the product's tool server on the in-process sample
// gateway (wired as app/main.cpp wires it), and an in-memory httplib::Stream.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
#include <memory>
#include <string>
#include <string_view>

#include <httplib.h>
#include "base/log.hpp"

#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "server/mcp_server.hpp"
#include "state/sqlite_store.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/registry.hpp"

namespace agency::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Fuzzing runs millions of calls: the server's warnings would be most of the work.
inline void quiet_logs() {
    log::set_level(std::getenv("AGENCY_FUZZ_LOG") ? log::Level::debug : log::Level::off);
}

// The real server: every tool registered (reads and actions, a state database in memory) over
// the built-in sample gateway on a loopback port, as `agency-mcp serve` starts without a
// gateway URL. Short timeouts, so that a call that waits on something never stalls a run.
struct ToolServer {
    std::unique_ptr<sample::Server> sample;
    std::shared_ptr<gateway::Client> gateway;
    std::shared_ptr<tools::Toolbox> toolbox;
    std::shared_ptr<tools::ActionRuntime> actions;
    std::unique_ptr<mcp::Server> server;

    static constexpr const char* kSecret = "agency-fuzz-secret";

    explicit ToolServer(std::chrono::milliseconds ask_timeout = std::chrono::milliseconds(200)) {
        sample = std::make_unique<sample::Server>(std::make_shared<sample::Gateway>());
        sample->start("127.0.0.1", 0);
        gateway::Config config;
        config.base_url = sample->base_url();
        config.read_timeout = std::chrono::seconds(5);
        config.action_timeout = std::chrono::seconds(5);
        config.connect_timeout = std::chrono::seconds(2);
        config.max_attempts = 2;
        config.backoff_base = std::chrono::milliseconds(1);
        gateway = std::make_shared<gateway::Client>(config);

        tools::ActionSettings action_settings;
        action_settings.store = std::make_shared<state::SqliteStore>(":memory:");  // in memory
        // Generation actions run (and reach their handlers) instead of being rate-limited.
        action_settings.credits.max_in_flight_per_client = 1'000'000;
        action_settings.credits.max_per_minute_per_client = 1'000'000;
        actions = std::make_shared<tools::ActionRuntime>(action_settings);

        mcp::ServerOptions options;
        options.state_secret = kSecret;
        options.task_store = actions->shared_store();
        // A legacy server-to-client request nobody answers must not hold a run for 10 minutes.
        options.ask_timeout = ask_timeout;
        server = std::make_unique<mcp::Server>(options);
        tools::Settings tool_settings;
        tool_settings.secret = kSecret;
        toolbox = std::make_shared<tools::Toolbox>(gateway, tool_settings);
        tools::register_all(*server, toolbox, actions);
    }

    ~ToolServer() {
        server.reset();
        actions.reset();
        sample->stop();
    }
};

// Runs `stop` when the process exits (libFuzzer's exit() after -runs or -max_total_time),
// last registered first, before static objects go away: the servers' threads must be joined
// while what they use still exists.
inline void at_exit(std::function<void()> stop) {
    static std::vector<std::function<void()>> stops;
    static const bool registered = [] {
        std::atexit([] {
            while (!stops.empty()) {
                auto f = std::move(stops.back());
                stops.pop_back();
                f();
            }
        });
        return true;
    }();
    (void)registered;
    stops.push_back(std::move(stop));
}

// The tool server for the whole run, shut down at exit.
inline ToolServer* start_tool_server(
    std::chrono::milliseconds ask_timeout = std::chrono::milliseconds(200)) {
    auto* server = new ToolServer(ask_timeout);
    at_exit([server] { delete server; });
    return server;
}

// The modern era's per-request _meta.
inline nlohmann::json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()}};
}

// An httplib::Stream reading from a buffer and discarding (or collecting) what is written.
class MemoryStream final : public httplib::Stream {
public:
    explicit MemoryStream(std::string_view input) : input_(input) {}
    bool is_readable() const override { return true; }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, size_t size) override {
        const std::size_t n = std::min(size, input_.size() - offset_);
        std::memcpy(ptr, input_.data() + offset_, n);
        offset_ += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* ptr, size_t size) override {
        output.append(ptr, size);
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 40000;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 8788;
    }
    socket_t socket() const override { return INVALID_SOCKET; }
    bool at_end() const { return offset_ == input_.size(); }

    std::string output;

private:
    std::string_view input_;
    std::size_t offset_ = 0;
};

}  // namespace agency::fuzz
