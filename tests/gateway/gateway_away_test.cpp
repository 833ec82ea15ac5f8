// A gateway away when the server starts (issue 48): gateway::Client::serve_while_away answers
// every request at once with why, stands a provisional discovery meanwhile, and reaches the
// gateway once a sample gateway starts on the port it was given, without a new client; and a
// refused TLS certificate says which refusal it is.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/mcp_server.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "net/server_thread.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/gateway_names.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/test_ca.hpp"
#include "tests/support/wait.hpp"

namespace {

using namespace std::chrono_literals;
using namespace agency::testing::gateway_names;
using agency::gateway::Discovery;

using agency::testing::free_port;
using agency::testing::ManualClock;

TEST(GatewayAway, RequestsFailAtOnceWithWhyUntilTheGatewayAnswersThenGoThrough) {
    const int port = free_port();
    Config config;
    config.base_url = "http://127.0.0.1:" + std::to_string(port) + "/api";
    config.max_attempts = 1;  // each check one attempt: no backoff to step through
    // The reconnecter waits on the client's clock: the test steps it, no real second passes.
    ManualClock clock(ManualClock::Sleeps::until_advanced);
    Client client(config, clock);
    std::string why;
    try {
        client.check();
        FAIL() << "nothing listens on " << config.base_url;
    } catch (const Error& e) {
        ASSERT_EQ(e.reason(), ErrorReason::unavailable) << e.what();
        why = e.what();
    }
    auto provisional = std::make_shared<Discovery>();
    provisional->resources = {"clients", "keywords"};
    std::atomic<int> answered{0};
    client.serve_while_away(why, provisional, 1s, [&] { ++answered; });
    EXPECT_TRUE(client.away());

    // Every request: at once, unavailable, saying why and that the server keeps trying.
    for (int i = 0; i < 3; ++i) {
        try {
            client.read(ReadQuery{.resource = "clients"});
            FAIL() << "a read went through while away";
        } catch (const Error& e) {
            EXPECT_EQ(e.reason(), ErrorReason::unavailable);
            const std::string text = e.what();
            EXPECT_EQ(text.rfind("cannot reach the gateway at " + config.base_url, 0), 0u) << text;
            EXPECT_NE(text.find("keeps trying"), std::string::npos) << text;
        }
    }
    EXPECT_EQ(client.discovery()->resources, provisional->resources);
    EXPECT_FALSE(client.discovery_health().failure.empty()) << "readiness must say not ready";

    // A second passes with the gateway still away: the client tries once more, fails, and
    // waits again (1 s, as max_wait caps it).
    const auto waiting = [&](int n) {
        return agency::testing::eventually([&] { return clock.waits_begun() == n; });
    };
    ASSERT_TRUE(waiting(1)) << "the reconnecter is not waiting on the client's clock";
    clock.advance(1s);
    ASSERT_TRUE(waiting(2)) << "no second wait after a try: " << client.discovery_health().failure;
    EXPECT_TRUE(client.away());
    EXPECT_EQ(answered.load(), 0);

    // The gateway comes up on that port: at the next second the client reaches it by itself.
    auto gateway = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server server(gateway);
    ASSERT_EQ(server.start("127.0.0.1", port), port);
    clock.advance(1s);
    ASSERT_TRUE(agency::testing::eventually([&] { return answered.load() != 0; }))
        << "the gateway's answer was not noticed";
    EXPECT_EQ(answered.load(), 1);
    EXPECT_FALSE(client.away());
    EXPECT_TRUE(client.discovery_health().failure.empty());
    // The gateway's own discovery now, and reads go through.
    EXPECT_TRUE(client.discovery()->has_resource("backlinks"));
    const auto page = client.read(ReadQuery{.resource = "clients"});
    const auto body = nlohmann::json::parse(page.body);
    EXPECT_EQ(body["data"].size(), gateway->rows("clients", "").size()) << page.body.substr(0, 300);
}

// Stopping the client while it waits for the gateway ends the wait at once.
TEST(GatewayAway, ADestroyedClientStopsWaiting) {
    Config config;
    config.base_url = "http://127.0.0.1:" + std::to_string(free_port()) + "/api";
    config.max_attempts = 1;
    ManualClock clock(ManualClock::Sleeps::until_advanced);
    auto client = std::make_unique<Client>(config, clock);
    const std::string why = "cannot reach the gateway";
    client->serve_while_away(why, std::make_shared<Discovery>(), 30s, [] {});
    // The first retry runs at the first second and fails (its own failure replaces the one
    // given): the client then waits for the next, 2 s on.
    ASSERT_TRUE(agency::testing::eventually([&] { return clock.waits_begun() == 1; }));
    clock.advance(1s);
    ASSERT_TRUE(agency::testing::eventually([&] { return clock.waits_begun() == 2; }))
        << "the first retry did not run";
    EXPECT_NE(client->discovery_health().failure, why);
    const auto started = std::chrono::steady_clock::now();
    client.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

// The start's message for a TLS gateway whose certificate is refused says which refusal it is:
// a certificate made for another name than the URL's host, or an issuer this machine does not
// trust (then the private-CA hint), each with OpenSSL's or httplib's finding.
TEST(GatewayStart, ARefusedCertificateSaysWhyItWasRefused) {
    namespace fs = std::filesystem;
    const fs::path dir =
        fs::temp_directory_path() / ("agency-away-tls-" + std::to_string(::getpid()));
    // The server's certificate names 127.0.0.2 only; the server listens on 127.0.0.1.
    ASSERT_TRUE(agency::testing::make_test_ca(dir, "IP:127.0.0.2")) << "openssl failed";
    httplib::SSLServer http((dir / "server.pem").c_str(), (dir / "server.key").c_str());
    http.Get("/api", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"resources":[],"actions":[]})", "application/json");
    });
    agency::net::ServerThread serving;
    Config config;
    config.base_url = "https://127.0.0.1:" + std::to_string(serving.start(http, {})) + "/api";
    config.backoff_base = 5ms;
    const auto start_error = [&] {
        Client client(config);
        try {
            client.check();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string untrusted = start_error();  // the test CA is not trusted here
    ::setenv("SSL_CERT_FILE", (dir / "ca.pem").c_str(), 1);
    const std::string other_name = start_error();
    ::unsetenv("SSL_CERT_FILE");
    serving.stop();
    std::error_code ec;
    fs::remove_all(dir, ec);
    EXPECT_NE(other_name.find("certificate is for another host name than the gateway URL's"),
              std::string::npos) << other_name;
    EXPECT_EQ(other_name.find("private CA"), std::string::npos) << other_name;
    EXPECT_NE(untrusted.find("not signed by a CA this machine trusts"), std::string::npos)
        << untrusted;
    EXPECT_NE(untrusted.find("SSL_CERT_FILE"), std::string::npos) << untrusted;
}

}  // namespace
