// The gateway client against answers that cpp-httplib 0.11 would buffer without end before any
// callback of ours runs (header lines without end, hundreds of headers), a compressed body
// that decodes to far more than the limit, and actions whose answers are too large (issue 30;
// the real binaries against the hostile sample gateway are in hostile_gateway_test.cpp).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/mcp_server.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "net/server_thread.hpp"
#include "tests/support/gateway_names.hpp"
#include "tests/support/test_ca.hpp"
#include "tests/loopback_server.hpp"

namespace {

using namespace agency::testing::gateway_names;
using namespace std::chrono_literals;

constexpr std::size_t kLimit = 1 << 20;

Config config_for(const std::string& base_url) {
    Config c;
    c.base_url = base_url;
    c.max_response_bytes = kLimit;
    c.max_attempts = 3;
    c.backoff_base = 5ms;
    c.read_timeout = 5s;
    c.call_timeout = 10s;
    return c;
}

Error read_error(const std::string& base_url) {
    Client client(config_for(base_url));
    return expect_error([&] { client.read(ReadQuery{.resource = "keywords", .client_id = "c"}); });
}

// Accepts connections and answers each with a head whose one header line never ends (up to
// 64 MiB, so that a client without a bound fails the test instead of the machine).
class EndlessHeaderServer {
public:
    EndlessHeaderServer() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        socklen_t len = sizeof addr;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port = ntohs(addr.sin_port);
        ::listen(fd_, 16);
        thread_ = std::thread([this] { serve(); });
    }
    ~EndlessHeaderServer() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
    }
    int port = 0;
    std::atomic<std::size_t> connections{0};

private:
    void serve() {
        while (!stop_) {
            const int conn = ::accept(fd_, nullptr, nullptr);
            if (conn < 0) return;
            ++connections;
            char request[4096];
            (void)::recv(conn, request, sizeof request, 0);
            const std::string head = "HTTP/1.1 200 OK\r\nX-Endless: ";
            bool ok = ::send(conn, head.data(), head.size(), MSG_NOSIGNAL) > 0;
            const std::string fill(64 * 1024, 'a');
            for (int i = 0; ok && i < 1024 && !stop_; ++i)
                ok = ::send(conn, fill.data(), fill.size(), MSG_NOSIGNAL) > 0;
            ::close(conn);
        }
    }
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace

TEST(HostileAnswers, AHeaderLineWithoutEndIsCutAtTheHeadLimit) {
    EndlessHeaderServer server;
    const auto e = read_error("http://127.0.0.1:" + std::to_string(server.port) + "/api");
    EXPECT_EQ(e.reason(), ErrorReason::upstream) << e.what();
    EXPECT_NE(std::string(e.what()).find("head (status line and headers) passed 64 KiB"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(server.connections.load(), 1u) << "not retried as if transient";
}

TEST(HostileAnswers, TooManyHeadersAreRefused) {
    agency::testing::LoopbackServer<> server;
    server.http.Get("/api", [](const httplib::Request&, httplib::Response& res) {
        for (int i = 0; i < 400; ++i) res.set_header("X-H" + std::to_string(i), "v");
        res.set_content(
            R"({"data":[],"pagination":{"total":0,"limit":1,"offset":0,"has_more":false}})",
            "application/json");
    });
    server.start();
    const auto e = read_error("http://127.0.0.1:" + std::to_string(server.port) + "/api");
    EXPECT_EQ(e.reason(), ErrorReason::upstream) << e.what();
    EXPECT_NE(std::string(e.what()).find("headers, over the limit of 256"), std::string::npos)
        << e.what();
}

// gzip's output for a JSON page of 32 MiB (mostly spaces): ~32 KiB.
std::string gzip_bomb() {
    FILE* pipe = ::popen(R"({ printf '{"data":[],"pad":"'; head -c 33554432 /dev/zero | )"
                         R"(tr '\0' ' '; printf '"}'; } | gzip -c)",
                         "r");
    std::string out;
    char buffer[65536];
    while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    ::pclose(pipe);
    return out;
}

// httplib decodes gzip for us: the limit counts the decoded bytes, not the few on the wire.
TEST(HostileAnswers, ACompressedBodyCountsAsWhatItDecodesTo) {
    const auto bomb = std::make_shared<const std::string>(gzip_bomb());
    ASSERT_GT(bomb->size(), 1000u);
    ASSERT_LT(bomb->size(), kLimit);
    agency::testing::LoopbackServer<> server;
    server.http.Get("/api", [bomb](const httplib::Request&, httplib::Response& res) {
        res.set_header("Content-Encoding", "gzip");
        res.set_content_provider(
            bomb->size(), "application/json",
            [bomb](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                return sink.write(bomb->data() + offset, length);
            });
    });
    server.start();
    const auto e = read_error("http://127.0.0.1:" + std::to_string(server.port) + "/api");
    EXPECT_EQ(e.reason(), ErrorReason::upstream) << e.what();
    EXPECT_NE(std::string(e.what()).find("passed the 1 MiB limit on a response "
                                         "(--gateway-max-response-bytes)"),
              std::string::npos)
        << e.what();
}

// An action's answer too large to read: the POST reached the gateway, so whether it ran is
// not known; it is not sent again, and the error says so and names the limit.
TEST(HostileAnswers, AnActionWhoseAnswerIsTooLargeIsNotSentAgain) {
    using agency::sample::FaultMode;
    auto gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server srv(gw);
    srv.start();
    Client client(config_for(srv.base_url()));
    for (const auto mode : {FaultMode::huge, FaultMode::endless}) {
        gw->clear_log();
        gw->inject({.target = "generate_blog", .mode = mode, .bytes = 4u << 20});
        const auto e = expect_error([&] {
            client.act("generate_blog", "demo-law", {{"keyword", "large answers"}});
        });
        EXPECT_EQ(e.reason(), ErrorReason::outcome_unknown) << e.what();
        EXPECT_NE(std::string(e.what()).find("1 MiB limit on a response"), std::string::npos)
            << e.what();
        EXPECT_EQ(gw->stats().posts.at("generate_blog"), 1u);
    }
    // The connection was closed, not pooled mid-answer: the next request is answered.
    EXPECT_NO_THROW(client.read(ReadQuery{.resource = "keywords", .client_id = "demo-law"}));
}

// Hundreds of connections each receiving an answer under the response limit could still hold
// connections times that limit: the bytes all of them receive at once are bounded too. Here
// the bound (2 MiB) is under one 3 MiB answer (the response limit is 4 MiB): that answer
// ends naming the bound, and what it counted is given back (the next read is answered).
TEST(HostileAnswers, TheAnswersReceivedAtOnceAreBoundedTogether) {
    using agency::sample::FaultMode;
    auto gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server srv(gw);
    srv.start();
    Config config = config_for(srv.base_url());
    config.max_response_bytes = 4u << 20;
    config.max_answers_bytes = 2u << 20;
    Client client(config);
    for (int round = 0; round < 2; ++round) {
        gw->inject({.target = "keywords", .mode = FaultMode::huge, .bytes = 3u << 20});
        const auto e = expect_error(
            [&] { client.read(ReadQuery{.resource = "keywords", .client_id = "demo-law"}); });
        EXPECT_EQ(e.reason(), ErrorReason::upstream) << e.what();
        EXPECT_NE(std::string(e.what()).find("answers being read at once passed 2 MiB"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_NO_THROW(client.read(ReadQuery{.resource = "keywords", .client_id = "demo-law"}));
}

TEST(HostileAnswers, TheSampleGatewaysHostileModesParse) {
    using agency::sample::FaultMode;
    using agency::sample::parse_fault;
    const auto huge = parse_fault("keywords:huge:100:1073741824");
    EXPECT_EQ(huge.mode, FaultMode::huge);
    EXPECT_EQ(huge.bytes, 1ull << 30);
    EXPECT_EQ(parse_fault("*:dripping:100:50").delay_ms, 50);
    EXPECT_EQ(parse_fault("*:redirect:100:8080").redirect_port, 8080);
    EXPECT_EQ(parse_fault("*:endless").mode, FaultMode::endless);
    EXPECT_EQ(parse_fault("*:random_status:5").percent, 5);
    try {
        parse_fault("*:enormous");
        ADD_FAILURE() << "an unknown mode parsed";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("huge, endless, dripping, redirect, random_status"),
                  std::string::npos)
            << e.what();
    }
}

// Over TLS httplib reads through its own stream: the head is counted on the TLS records
// (gateway/tls_meter.cpp), so a head past 64 KiB stops while it is read, before httplib has it
// whole (the check on the parsed headers would say "headers passed" instead).
TEST(HostileAnswers, AnHttpsGatewaysHeadIsCountedOnItsRecords) {
    namespace fs = std::filesystem;
    const fs::path dir =
        fs::temp_directory_path() / ("agency-hostile-tls-" + std::to_string(::getpid()));
    ASSERT_TRUE(agency::testing::make_test_ca(dir, "IP:127.0.0.1")) << "openssl failed";
    httplib::SSLServer http((dir / "server.pem").c_str(), (dir / "server.key").c_str());
    http.Get("/api", [](const httplib::Request&, httplib::Response& res) {
        for (int i = 0; i < 60; ++i)
            res.set_header("X-Big-" + std::to_string(i), std::string(2000, 'v'));
        res.set_content(
            R"({"data":[],"pagination":{"total":0,"limit":1,"offset":0,"has_more":false}})",
            "application/json");
    });
    agency::net::ServerThread serving;
    const int port = serving.start(http, {});

    ::setenv("SSL_CERT_FILE", (dir / "ca.pem").c_str(), 1);
    const auto e = read_error("https://127.0.0.1:" + std::to_string(port) + "/api");
    ::unsetenv("SSL_CERT_FILE");
    serving.stop();
    std::error_code ec;
    fs::remove_all(dir, ec);
    EXPECT_EQ(e.reason(), ErrorReason::upstream) << e.what();
    EXPECT_NE(std::string(e.what()).find("head (status line and headers) passed 64 KiB"),
              std::string::npos)
        << e.what();
}
