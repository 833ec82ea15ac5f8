// Issue 30, items 5 and 8, through the real binary over HTTP (`serve --http`): one key held
// to 14 units (6 a minute) cannot make the client overview resource amplify into the gateway
// (the sample gateway's /_control/requests log counts what reached it), prompts and
// completion are counted, a second key is unaffected; and thousands of refusals (over the rate limit, an
// invalid OAuth token, an unknown API key) write a bounded number of lines to the server's log
// (stderr), never the token or key.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/support/oauth_issuer.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/text.hpp"
#include "transport/keys.hpp"

namespace flood_cli {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using agency::testing::slurp;

std::size_t count_lines_with(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
    return n;
}

class FloodCli : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-flood-" + agency::crypto::random_hex(6));
    fs::path keys = dir / "keys.json";
    fs::path err = dir / "server.err";
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};
    pid_t server_pid = -1;
    int port = 0;
    int gateway_port = 0;

    void SetUp() override {
        fs::create_directories(dir);
        gateway_port = gateway_server.start("127.0.0.1", 0);
    }
    void TearDown() override {
        stop_server();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    // `serve --http` in the background on the sample gateway; sets `port` (0: did not start).
    void start_server(const std::string& args) {
        const std::string command =
            "exec env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_LEVEL "
            "-u AGENCY_LOG_FILE -u AGENCY_RATE_LIMIT -u AGENCY_RATE_LIMIT_BURST '" +
            std::string(AGENCY_BINARY) +
            "' serve --http --listen 127.0.0.1:0 --state-db :memory: --gateway-url " +
            gateway_server.base_url() + " " + args + " < /dev/null > /dev/null 2> '" +
            err.string() + "'";
        server_pid = fork();
        if (server_pid == 0) {
            execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        const std::regex url(R"(MCP over Streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp)");
        const bool started = agency::testing::eventually(
            [&] {
                std::smatch m;
                const std::string text = slurp(err);
                if (!std::regex_search(text, m, url)) return false;
                port = std::stoi(m[1]);
                return true;
            },
            15000ms, 50ms);
        if (started) return;
        ADD_FAILURE() << "the server did not start: " << slurp(err);
    }
    // Stops the server (SIGTERM: it drains and exits) and returns its stderr.
    std::string stop_server() {
        if (server_pid <= 0) return slurp(err);
        kill(server_pid, SIGTERM);
        int status = 0;
        waitpid(server_pid, &status, 0);
        server_pid = -1;
        return slurp(err);
    }

    // One modern (stateless) request; `name` is the Mcp-Name header ("" for none).
    httplib::Result post(httplib::Client& client, const std::string& auth, const std::string& method,
                         json params, const std::string& name = "") {
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities", json::object()}};
        httplib::Headers headers{{"Accept", "application/json, text/event-stream"},
                                 {"MCP-Protocol-Version", "2026-07-28"},
                                 {"Mcp-Method", method}};
        if (!name.empty()) headers.emplace("Mcp-Name", name);
        if (!auth.empty()) headers.emplace("Authorization", "Bearer " + auth);
        const json body = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
        return client.Post("/mcp", headers, body.dump(), "application/json");
    }

    // Reads of gateway data the sample gateway logged (discovery left out).
    std::size_t gateway_reads() {
        httplib::Client control("127.0.0.1", gateway_port);
        auto res = control.Get("/_control/requests");
        if (!res || res->status != 200) return 0;
        std::size_t n = 0;
        for (const json& entry : json::parse(res->body))
            n += entry.value("method", "") == "GET" && !entry.value("target", "").empty();
        return n;
    }
    void clear_gateway_log() {
        httplib::Client control("127.0.0.1", gateway_port);
        control.Delete("/_control/requests");
    }
};


TEST_F(FloodCli, OverviewCannotAmplifyPastTheCallersLimitAndRefusalsLogOnce) {
    const std::string alice = agency::mcp::KeyStore::add(keys.string(), "alice", {"read"});
    const std::string bob = agency::mcp::KeyStore::add(keys.string(), "bob", {"read"});
    start_server("--keys-file " + keys.string() + " --rate-limit 6/minute --rate-limit-burst 14");
    ASSERT_GT(port, 0);
    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // headers and body in separate writes: no 40 ms stall each
    const std::string uri = "agency://clients/demo-plumbing/overview";
    clear_gateway_log();

    int ok = 0, refused = 0;
    json refusal;
    for (int i = 0; i < 200; ++i) {
        auto res = post(client, alice, "resources/read", {{"uri", uri}}, uri);
        ASSERT_TRUE(res);
        if (res->status == 200) {
            ++ok;
        } else {
            ASSERT_EQ(res->status, 429) << res->body;
            EXPECT_FALSE(res->get_header_value("Retry-After").empty());
            refusal = json::parse(res->body);
            ++refused;
        }
    }
    // 14 units at once, then one every 10 s: 2 reads of 7 units.
    EXPECT_EQ(ok, 2);
    EXPECT_EQ(refused, 198);
    const std::size_t reads = gateway_reads();
    EXPECT_LE(reads, 14u) << "one key held to 14 units caused " << reads << " gateway reads";
    ASSERT_TRUE(refusal.contains("error")) << refusal;
    EXPECT_EQ(refusal["error"]["code"], -32029);
    EXPECT_EQ(refusal["error"]["data"]["costUnits"], 7);
    EXPECT_NE(refusal["error"].value("message", "").find("costs 7 units"), std::string::npos)
        << refusal;

    // Prompts and completion are counted: alice's bucket is empty for them too.
    auto prompt = post(client, alice, "prompts/get",
                       {{"name", "monthly_client_report"},
                        {"arguments", {{"client_id", "demo-law"}, {"month", "2024-02"}}}},
                       "monthly_client_report");
    ASSERT_TRUE(prompt);
    EXPECT_EQ(prompt->status, 429) << prompt->body;
    auto completion = post(client, alice, "completion/complete",
                           {{"ref", {{"type", "ref/resource"},
                                     {"uri", "agency://clients/{client_id}/overview"}}},
                            {"argument", {{"name", "client_id"}, {"value", "demo"}}}});
    ASSERT_TRUE(completion);
    EXPECT_EQ(completion->status, 429) << completion->body;
    // Tool calls over the limit, by the thousand.
    for (int i = 0; i < 2000; ++i) {
        auto res = post(client, alice, "tools/call",
                        {{"name", "list_clients"}, {"arguments", json::object()}}, "list_clients");
        ASSERT_TRUE(res);
        if (res->status != 429) {
            EXPECT_EQ(res->status, 200);
        }
    }

    // A second key is unaffected.
    auto other = post(client, bob, "resources/read", {{"uri", uri}}, uri);
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 200) << other->body;

    const std::string log = stop_server();
    EXPECT_LE(count_lines_with(log, "over the rate limit"), 4u) << log.substr(0, 3000);
    EXPECT_GE(count_lines_with(log, "over the rate limit"), 1u) << log.substr(0, 3000);
    EXPECT_EQ(log.find(alice), std::string::npos) << "a key never reaches the log";
}

// Thousands of invalid bearer tokens with OAuth on, and of unknown API keys: a few lines, with
// the peer, never the token or the key.
TEST_F(FloodCli, RefusedTokensAndKeysWriteABoundedNumberOfLines) {
    agency::testing::RsaKey key("k1");
    agency::testing::Issuer issuer;
    issuer.publish(key.jwk());
    agency::mcp::KeyStore::add(keys.string(), "alice", {"read"});
    start_server("--keys-file " + keys.string() + " --oauth-issuer " + issuer.url() +
                 " --oauth-resource http://127.0.0.1/mcp");
    ASSERT_GT(port, 0);
    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // headers and body in separate writes: no 40 ms stall each
    const std::string token = "not-a-token-" + agency::crypto::random_hex(8);
    for (int i = 0; i < 2000; ++i) {
        auto res = post(client, token, "tools/list", json::object());
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 401) << res->body;
    }
    const std::string bad_key = "ak_" + agency::crypto::random_hex(16);
    for (int i = 0; i < 1000; ++i) {
        httplib::Headers headers{{"Accept", "application/json, text/event-stream"},
                                 {"X-API-Key", bad_key}};
        auto res = client.Post("/mcp", headers,
                               R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})",
                               "application/json");
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 401) << res->body;
    }
    const std::string log = stop_server();
    const auto lines = static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n'));
    EXPECT_LE(count_lines_with(log, "token refused"), 3u) << log.substr(0, 3000);
    EXPECT_GE(count_lines_with(log, "token refused from 127.0.0.1"), 1u) << log.substr(0, 3000);
    EXPECT_LE(count_lines_with(log, "API key"), 3u) << log.substr(0, 3000);
    EXPECT_LE(lines, 40u) << "3,000 refusals, a bounded log: " << log.substr(0, 3000);
    EXPECT_EQ(log.find(token), std::string::npos) << "the token never reaches the log";
    EXPECT_EQ(log.find(bad_key), std::string::npos) << "the key never reaches the log";
}

}  // namespace flood_cli
