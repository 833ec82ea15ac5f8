// gateway::PlainClient (httplib's HTTP over a stream that reads 64 KiB at a time) against a
// real httplib server on a loopback port: bodies larger than its buffer with a length or
// chunked, bodies that arrive slowly, keep-alive, read timeouts and cancellation.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server/mcp_server.hpp"
#include "gateway/plain_client.hpp"
#include "tests/loopback_server.hpp"
#include "tests/support/wait.hpp"

namespace {

using namespace std::chrono_literals;
using agency::gateway::PlainClient;

// Bytes that differ from one position to the next, so a lost or repeated chunk shows.
std::string pattern(std::size_t size) {
    std::string out(size, '\0');
    for (std::size_t i = 0; i < size; ++i) out[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return out;
}

struct Server : agency::testing::LoopbackServer<> {
    Server() {
        http.Get("/big", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_content(pattern(5'000'003), "application/json");
        });
        http.Get("/chunked", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_chunked_content_provider("application/json", [](std::size_t offset,
                                                                     httplib::DataSink& sink) {
                const std::string all = pattern(3'000'000);
                if (offset >= all.size()) {
                    sink.done();
                    return true;
                }
                // Odd sizes so that chunk boundaries fall anywhere in the client's buffer.
                const std::size_t n = std::min<std::size_t>(70'001, all.size() - offset);
                return sink.write(all.data() + offset, n);
            });
        });
        http.Get("/slow", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            const std::string all = pattern(200'000);
            res.set_content_provider(all.size(), "application/json",
                                     [all](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                                         std::this_thread::sleep_for(2ms);
                                         const std::size_t n =
                                             std::min<std::size_t>(9'999, all.size() - offset);
                                         return sink.write(all.data() + offset, n);
                                     });
        });
        // httplib compresses a set_content body (/big) for a client that accepts it; a sized
        // provider is sent as it is.
        http.Get("/big-plain", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            auto all = std::make_shared<const std::string>(pattern(5'000'003));
            res.set_content_provider(all->size(), "application/json",
                                     [all](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                                         const std::size_t n =
                                             std::min<std::size_t>(300'007, all->size() - offset);
                                         return sink.write(all->data() + offset, n);
                                     });
        });
        http.Get("/small", [this](const httplib::Request& req, httplib::Response& res) {
            note(req);
            res.set_content("{}", "application/json");
        });
        // Announces 100,000 bytes, sends half, then stalls.
        http.Get("/half", [](const httplib::Request&, httplib::Response& res) {
            res.set_content_provider(100'000, "application/json",
                                     [](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                                         if (offset > 0) {
                                             std::this_thread::sleep_for(600ms);
                                             return false;
                                         }
                                         const std::string half = pattern(50'000);
                                         return sink.write(half.data(), half.size());
                                     });
        });
        http.Get("/stall", [](const httplib::Request&, httplib::Response& res) {
            std::this_thread::sleep_for(600ms);
            res.set_content("{}", "application/json");
        });
        http.set_keep_alive_max_count(100);  // httplib closes after 5 by default
        start();
    }
};

TEST(PlainClient, ReadsBodiesWithALengthChunkedOrSlowWhole) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    client.set_keep_alive(true);
    for (int round = 0; round < 2; ++round) {
        auto big = client.Get("/big");
        ASSERT_TRUE(big) << httplib::to_string(big.error());
        EXPECT_EQ(big->status, 200);
        EXPECT_TRUE(big->body == pattern(5'000'003));

        auto chunked = client.Get("/chunked");
        ASSERT_TRUE(chunked) << httplib::to_string(chunked.error());
        EXPECT_TRUE(chunked->body == pattern(3'000'000));

        auto slow = client.Get("/slow");
        ASSERT_TRUE(slow) << httplib::to_string(slow.error());
        EXPECT_TRUE(slow->body == pattern(200'000));
    }
    // Six answers, one connection: nothing read ahead was lost between them.
    EXPECT_EQ(server.connections(), 1u);
}

// As gateway::Client reads: the response handler announces the body's length, so the stream
// waits for all of it (SO_RCVLOWAT) instead of waking per segment. With a `sunk` flag the body
// is offered to be received straight into `body` (the content receiver is then handed only
// counts), and the flag says whether it was.
httplib::Result get_announced(PlainClient& client, const std::string& path, std::string& body,
                              bool* sunk = nullptr, const httplib::Headers& headers = {}) {
    body.clear();
    bool into = false;
    auto result = client.Get(
        path, headers,
        [&](const httplib::Response& res) {
            const std::string length = res.get_header_value("Content-Length");
            if (length.empty()) return true;
            if (sunk == nullptr) client.expect_body(std::stoul(length));
            else into = client.expect_body_into(res, std::stoul(length), body);
            return true;
        },
        [&](const char* data, std::size_t n) {
            if (!into) body.append(data, n);
            return true;
        });
    if (sunk != nullptr) *sunk = into;
    return result;
}

TEST(PlainClient, AnnouncedBodiesArriveWholeAndDoNotHoldUpTheNextAnswer) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    client.set_keep_alive(true);
    client.set_read_timeout(1s);
    std::string body;
    for (const auto& [path, size] : {std::pair<std::string, std::size_t>{"/slow", 200'000},
                                     {"/big", 5'000'003}}) {
        auto res = get_announced(client, path, body);
        ASSERT_TRUE(res) << path << ": " << httplib::to_string(res.error());
        EXPECT_TRUE(body == pattern(size)) << path;
        // A short answer right after: a wait still set for the last body's bytes would hold
        // it until the read timeout.
        const auto started = std::chrono::steady_clock::now();
        auto small = get_announced(client, "/small", body);
        ASSERT_TRUE(small) << httplib::to_string(small.error());
        EXPECT_EQ(body, "{}");
        EXPECT_LT(std::chrono::steady_clock::now() - started, 500ms);
    }
    EXPECT_EQ(server.connections(), 1u);
}

TEST(PlainClient, BodiesReceivedIntoTheCallersStringArriveWhole) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    client.set_keep_alive(true);
    client.set_read_timeout(1s);
    std::string body;
    bool sunk = false;
    for (int round = 0; round < 2; ++round) {
        for (const auto& [path, size] : {std::pair<std::string, std::size_t>{"/slow", 200'000},
                                         {"/big-plain", 5'000'003}}) {
            auto res = get_announced(client, path, body, &sunk);
            ASSERT_TRUE(res) << path << ": " << httplib::to_string(res.error());
            EXPECT_TRUE(sunk) << path;
            EXPECT_EQ(body.size(), size) << path;
            EXPECT_TRUE(body == pattern(size)) << path;
            EXPECT_TRUE(res->body.empty()) << path;
        }
        // A compressed body is decoded by httplib, so it comes through the receiver.
        auto big = get_announced(client, "/big", body, &sunk, {{"Accept-Encoding", "gzip"}});
        ASSERT_TRUE(big) << httplib::to_string(big.error());
        EXPECT_FALSE(big->get_header_value("Content-Encoding").empty());
        EXPECT_FALSE(sunk);
        EXPECT_TRUE(body == pattern(5'000'003));
        // An answer without a body after them reads as it should.
        auto chunked = client.Get("/chunked");
        ASSERT_TRUE(chunked) << httplib::to_string(chunked.error());
        EXPECT_TRUE(chunked->body == pattern(3'000'000));
    }
    // Eight answers, one connection: nothing was read past a body.
    EXPECT_EQ(server.connections(), 1u);
}

TEST(PlainClient, BodyIntoTheCallersStringThatStallsTimesOut) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    client.set_read_timeout(150ms);
    std::string body;
    bool sunk = false;
    const auto started = std::chrono::steady_clock::now();
    auto res = get_announced(client, "/half", body, &sunk);
    EXPECT_TRUE(sunk);
    EXPECT_FALSE(res);
    EXPECT_EQ(res.error(), httplib::Error::Read);
    EXPECT_LE(body.size(), 50'000u);  // never more than arrived
    EXPECT_LT(std::chrono::steady_clock::now() - started, 550ms);
}

TEST(PlainClient, AnnouncedBodyThatStallsTimesOut) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    client.set_read_timeout(150ms);
    std::string body;
    const auto started = std::chrono::steady_clock::now();
    auto res = get_announced(client, "/half", body);
    EXPECT_FALSE(res);
    EXPECT_EQ(res.error(), httplib::Error::Read);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 550ms);
}

TEST(PlainClient, ReadTimeoutFailsTheRequest) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    client.set_read_timeout(150ms);
    const auto started = std::chrono::steady_clock::now();
    auto res = client.Get("/stall");
    EXPECT_FALSE(res);
    EXPECT_EQ(res.error(), httplib::Error::Read);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 550ms);
}

TEST(PlainClient, StopAbortsATransferInFlight) {
    Server server;
    PlainClient client("127.0.0.1", server.port);
    std::atomic<bool> receiving{false};
    std::thread stopper([&] {
        // Bounded, so a transfer that fails before its first bytes cannot hang the test.
        (void)agency::testing::eventually([&] { return receiving.load(); }, 5000ms, 1ms);
        client.stop();
    });
    std::size_t got = 0;
    const auto started = std::chrono::steady_clock::now();
    auto res = client.Get("/slow", [&](const char*, std::size_t n) {
        got += n;
        receiving = true;
        return true;
    });
    stopper.join();
    EXPECT_TRUE(receiving.load());
    EXPECT_FALSE(res);
    EXPECT_LT(got, 200'000u);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

}  // namespace
