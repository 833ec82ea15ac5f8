// What one caller may hold of the Streamable HTTP transport's workers, and a call's end when its
// client goes (issue 33). Two keys call a `hold` tool that waits until the test lets it go (or
// its call is cancelled): one key's burst runs at most its share of a lane, the rest of its
// burst waits or is refused at once, and the other key's call still runs at once. A call
// answered in one JSON body, or streamed, is cancelled soon after its client closes the
// connection, not when it would next write.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "base/crypto.hpp"
#include "base/metrics.hpp"
#include "server/mcp_server.hpp"
#include "tests/metrics_text.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/wait.hpp"
#include "transport/http_transport.hpp"
#include "transport/keys.hpp"

namespace caller_share {

using agency::mcp::HttpOptions;
using agency::mcp::json;
using agency::mcp::KeyStore;
using agency::mcp::Server;
using namespace agency::testing::core_types;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

// Streamed calls open now (agency_mcp_open{what="streams"}). A streamed call (every call below:
// a modern tools/call that accepts a stream) holds its stream from just before its lane takes it
// (to run, or to wait for a worker) until it ends.
double open_streams() {
    return agency::testing::metric_value(agency::base::metrics::render(), "agency_mcp_open",
                                         {{"what", "streams"}});
}

// The `hold` tool's calls: how many run, how many ended by cancellation, and the gate that
// lets them all finish.
struct Holds {
    std::mutex mutex;
    std::condition_variable_any changed;
    int running = 0;
    int cancelled = 0;
    bool open = false;

    // Waits up to `within` for `done`; whether it came.
    template <class Done>
    bool wait(Done done, std::chrono::milliseconds within = 5000ms) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, within, [&] { return done(*this); });
    }
    void release() {
        {
            std::lock_guard lock(mutex);
            open = true;
        }
        changed.notify_all();
    }
};

class CallerShares : public ::testing::Test {
protected:
    void TearDown() override {
        holds_->release();
        if (transport_) transport_->stop();
        std::error_code ec;
        std::filesystem::remove(keys_path_, ec);
    }

    void start(HttpOptions options) {
        keys_path_ = (std::filesystem::temp_directory_path() /
                      ("agency-share-keys-" + agency::crypto::random_hex(6) + ".json"))
                         .string();
        alpha_ = KeyStore::add(keys_path_, "alpha", {"read", "write"});
        bravo_ = KeyStore::add(keys_path_, "bravo", {"read", "write"});
        options.keys = std::make_shared<const KeyStore>(KeyStore::load(keys_path_));
        ServerOptions server_options;
        server_options.state_secret = "share-secret";
        server_ = std::make_unique<Server>(server_options);
        ToolDef hold;
        hold.name = "hold";
        hold.description = "Waits until the test lets it go, or until it is cancelled.";
        hold.input_schema = {{"type", "object"}};
        hold.handler = [holds = holds_](const json&, RequestContext& ctx) {
            std::unique_lock lock(holds->mutex);
            ++holds->running;
            holds->changed.notify_all();
            const bool released =
                holds->changed.wait_for(lock, ctx.stop, 20s, [&] { return holds->open; });
            --holds->running;
            if (!holds->open && ctx.stop.stop_requested()) ++holds->cancelled;
            holds->changed.notify_all();
            return ToolResult::text(released && holds->open ? "let go" : "stopped");
        };
        server_->add_tool(std::move(hold));
        options.host = "127.0.0.1";
        options.port = 0;
        transport_ = std::make_unique<agency::mcp::HttpTransport>(*server_, options);
        port_ = transport_->start();
    }

    static std::string call_body(int id) {
        return json{{"jsonrpc", "2.0"},
                    {"id", id},
                    {"method", "tools/call"},
                    {"params",
                     {{"name", "hold"},
                      {"arguments", json::object()},
                      {"_meta",
                       {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                        {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
            .dump();
    }
    static std::string headers(const std::string& key, bool sse) {
        return "Authorization: Bearer " + key +
               "\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: "
               "hold\r\nAccept: " +
               (sse ? "application/json, text/event-stream" : "application/json") + "\r\n";
    }

    // One call with `key`, on a client of its own; the HTTP status and body.
    std::pair<int, std::string> call(const std::string& key, int id) const {
        httplib::Client client("127.0.0.1", port_);
        client.set_read_timeout(30, 0);
        const auto res = client.Post(
            "/mcp",
            {{"Authorization", "Bearer " + key},
             {"MCP-Protocol-Version", "2026-07-28"},
             {"Mcp-Method", "tools/call"},
             {"Mcp-Name", "hold"},
             {"Accept", "application/json, text/event-stream"}},
            call_body(id), "application/json");
        return res ? std::pair{res->status, res->body} : std::pair{0, std::string()};
    }

    // Sends one call on a raw connection and returns the socket (the caller closes it).
    int send_raw(const std::string& key, int id, bool sse) const {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<std::uint16_t>(port_));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        const std::string body = call_body(id);
        const std::string request = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                    "application/json\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n" + headers(key, sse) +
                                    "\r\n" + body;
        EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(request.size()));
        return fd;
    }

    // Closes the connection of a running call; whether the call was cancelled within `within`.
    bool cancelled_when_closed(int fd, std::chrono::milliseconds within) {
        EXPECT_TRUE(holds_->wait([](Holds& h) { return h.running == 1; }));
        ::close(fd);
        return holds_->wait([](Holds& h) { return h.cancelled == 1; }, within);
    }

    std::shared_ptr<Holds> holds_ = std::make_shared<Holds>();
    std::unique_ptr<Server> server_;
    std::unique_ptr<agency::mcp::HttpTransport> transport_;
    std::string keys_path_, alpha_, bravo_;
    int port_ = 0;
};

// A lane of 4 workers, 2 a caller: alpha's burst of 4 runs its 2, borrows one idle worker
// (issue 45, finding 5: capacity nobody else wants is lent) and queues the fourth, leaving the
// reserve; its fifth call is refused at once (429, retryable), and bravo's call runs at once
// on the reserved worker beside alpha's three.
TEST_F(CallerShares, OneCallersBurstLeavesTheOtherWorkersToTheOthers) {
    HttpOptions options;
    options.workers = 4;
    options.worker_share = 2;
    start(options);
    const double streams_before = open_streams();
    std::vector<std::thread> burst;
    std::vector<std::pair<int, std::string>> answers(5);
    for (int i = 0; i < 4; ++i)
        burst.emplace_back([&, i] { answers[static_cast<std::size_t>(i)] = call(alpha_, 10 + i); });
    ASSERT_TRUE(holds_->wait([](Holds& h) { return h.running == 3; }));
    // The fourth has arrived (its stream is open) and stays queued.
    EXPECT_TRUE(agency::testing::eventually(
        [&] { return open_streams() >= streams_before + 4; }, 10000ms, 2ms))
        << "the fourth call never arrived";

    const auto refused = call(alpha_, 20);
    EXPECT_EQ(holds_->running, 3) << "alpha borrows idle workers, never the reserve";
    EXPECT_EQ(refused.first, 429) << refused.second;
    const json error = json::parse(refused.second)["error"];
    EXPECT_EQ(error["code"], -32029) << refused.second;
    EXPECT_NE(error["message"].get<std::string>().find("its share"), std::string::npos)
        << refused.second;

    burst.emplace_back([&] { answers[4] = call(bravo_, 30); });
    EXPECT_TRUE(holds_->wait([](Holds& h) { return h.running == 4; }))
        << "bravo's call waited behind alpha's burst";
    holds_->release();
    for (auto& t : burst) t.join();
    for (const auto& [status, body] : answers) {
        EXPECT_EQ(status, 200) << body;
        EXPECT_NE(body.find("let go"), std::string::npos) << body;
    }
}

// A caller under its running share still holds no more than its share in all when the workers
// are busy with another caller's calls: bravo fills the lane of 2, alpha (share 2 running and 2
// waiting) queues 4 calls behind them and its fifth is refused at once.
TEST_F(CallerShares, ACallerQueuedBehindOthersHoldsNoMoreThanItsShare) {
    HttpOptions options;
    options.workers = 2;
    options.worker_share = 2;
    start(options);
    const double streams_before = open_streams();
    std::vector<std::thread> calls;
    std::vector<std::pair<int, std::string>> answers(6);
    for (int i = 0; i < 2; ++i)
        calls.emplace_back([&, i] { answers[static_cast<std::size_t>(i)] = call(bravo_, 10 + i); });
    ASSERT_TRUE(holds_->wait([](Holds& h) { return h.running == 2; }));
    for (int i = 2; i < 6; ++i)
        calls.emplace_back([&, i] { answers[static_cast<std::size_t>(i)] = call(alpha_, 10 + i); });
    // Alpha's four have arrived (bravo's two streams and theirs are open) and wait.
    EXPECT_TRUE(agency::testing::eventually(
        [&] { return open_streams() >= streams_before + 6; }, 10000ms, 2ms))
        << "alpha's four calls never arrived";
    const auto refused = call(alpha_, 20);
    EXPECT_EQ(refused.first, 429) << refused.second;
    EXPECT_NE(refused.second.find("its share"), std::string::npos) << refused.second;
    holds_->release();
    for (auto& t : calls) t.join();
    for (const auto& [status, body] : answers)
        EXPECT_NE(body.find("let go"), std::string::npos) << status << " " << body;
}

// A call that waited for a worker longer than max_queue_wait is refused (retryable) rather
// than run for a client that has likely given up.
TEST_F(CallerShares, ACallQueuedPastItsWaitIsRefusedNotRun) {
    HttpOptions options;
    options.workers = 1;
    options.worker_share = 1;
    options.max_queue_wait = 300ms;
    start(options);
    std::pair<int, std::string> first, queued;
    std::thread a([&] { first = call(alpha_, 1); });
    ASSERT_TRUE(holds_->wait([](Holds& h) { return h.running == 1; }));
    std::thread b([&] { queued = call(alpha_, 2); });
    std::this_thread::sleep_for(600ms);
    holds_->release();
    a.join();
    b.join();
    EXPECT_NE(first.second.find("let go"), std::string::npos) << first.second;
    // Streamed by then (it was quiet past stream_grace): the refusal is the stream's message.
    EXPECT_NE(queued.second.find("-32029"), std::string::npos) << queued.second;
    EXPECT_NE(queued.second.find("waited"), std::string::npos) << queued.second;
    EXPECT_EQ(queued.second.find("let go"), std::string::npos) << "it must not have run";
}

// A call answered in one JSON body: its thread cannot find out by writing, yet the call is
// cancelled soon after the client closes its connection.
TEST_F(CallerShares, AJsonCallIsCancelledWhenItsClientGoes) {
    start(HttpOptions{});
    EXPECT_TRUE(cancelled_when_closed(send_raw(alpha_, 1, false), 3000ms));
}

// A streamed call quiet for longer than the wait below (keepalive 30 s): cancelled when its
// client goes, not at the next keepalive write.
TEST_F(CallerShares, AStreamedCallIsCancelledWhenItsClientGoes) {
    HttpOptions options;
    options.keepalive = 30s;
    start(options);
    EXPECT_TRUE(cancelled_when_closed(send_raw(alpha_, 1, true), 3000ms));
}

}  // namespace caller_share
