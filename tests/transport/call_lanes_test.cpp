// Reads never queue behind slow actions (issue 33): the Streamable HTTP transport runs calls
// that may wait long (actions, tasks/result) and the others in lanes of their own. Against the
// sample gateway holding every generate_blog for 2 s, with the slow lane full and more actions
// waiting for it, a read answers at once; and a wide lane's actions all wait at the gateway
// together.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server/mcp_server.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"
#include "transport/http_transport.hpp"

namespace call_lanes {

using agency::testing::ToolHarness;
using json = nlohmann::json;
using namespace std::chrono_literals;

json call_body(int id, const std::string& tool, const json& args) {
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", tool}, {"arguments", args}, {"_meta", ToolHarness::modern_meta()}}}};
}

// One modern tools/call over HTTP; the answer's text (JSON or the SSE stream).
std::string post_call(int port, int id, const std::string& tool, const json& args) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(30, 0);
    const httplib::Headers headers{{"MCP-Protocol-Version", "2026-07-28"},
                                   {"Mcp-Method", "tools/call"},
                                   {"Mcp-Name", tool},
                                   {"Accept", "application/json, text/event-stream"}};
    const auto res = client.Post("/mcp", headers, call_body(id, tool, args).dump(), "application/json");
    return res ? res->body : std::string();
}

// `actions` generate_article calls with a slow lane of `workers` threads; once the gateway
// holds `held` of them at once (each for `hold_ms`), a read must answer at once.
void expect_read_at_once(std::size_t workers, int actions, std::size_t held, int hold_ms) {
    agency::tools::ActionSettings settings;
    settings.credits = {.max_in_flight_per_client = 100, .max_per_minute_per_client = 1000};
    auto rt = std::make_shared<agency::tools::ActionRuntime>(agency::testing::with_store(settings));
    ToolHarness h({}, {}, [rt](agency::mcp::Server& server, const auto& box) {
        agency::tools::register_all(server, box, rt);
    });
    h.gw->inject({.target = "generate_blog", .mode = agency::sample::FaultMode::slow,
                  .count = 0, .percent = 100, .delay_ms = hold_ms});
    agency::mcp::HttpOptions options;
    options.host = "127.0.0.1";
    options.port = 0;  // an ephemeral port: ctest runs this file's two tests at once
    options.workers = workers;
    options.worker_share = workers;  // one caller here: the whole lane is its share
    options.read_workers = 2;
    agency::mcp::HttpTransport http(*h.server, options);
    const int port = http.start();

    std::vector<std::string> answers(static_cast<std::size_t>(actions));
    std::vector<std::thread> threads;
    for (int i = 0; i < actions; ++i)
        threads.emplace_back([&, i] {
            answers[static_cast<std::size_t>(i)] =
                post_call(port, 100 + i, "generate_article",
                          {{"client_id", "demo-law"}, {"keyword", "lane " + std::to_string(i)}});
        });
    // Queued actions follow the first ones as they end, so the lane stays full; a loaded
    // machine may start the callers late.
    (void)agency::testing::eventually([&] { return h.gw->requests_in_flight() >= held; }, 10000ms,
                                      5ms);
    EXPECT_EQ(h.gw->requests_in_flight(), held) << "held at the gateway at once";

    const std::string read =
        post_call(port, 7, "list_keywords", {{"client_id", "demo-law"}, {"limit", 3}});
    // Answered while the first actions are still held at the gateway: none has finished (the
    // gateway logs a request when it answers it), so the read did not wait behind them. No
    // clock here: a 1 s bound on the read failed under load.
    const std::size_t finished = h.gw->count_requests("POST", "generate_blog");
    EXPECT_NE(read.find("kw-law-"), std::string::npos) << read.substr(0, 300);
    EXPECT_EQ(finished, 0u) << "the read waited behind the actions";

    for (auto& t : threads) t.join();
    for (const auto& a : answers)
        EXPECT_NE(a.find("article_id"), std::string::npos) << a.substr(0, 300);
    http.stop();
    rt->audits().stop();
}

// The slow lane full (two threads), two more actions waiting for it.
TEST(CallLanes, AReadAnswersAtOnceWhileSlowActionsFillTheirLane) {
    expect_read_at_once(2, 4, 2, 3000);
}

// Forty generations wait at the gateway together, not in waves of the gateway client's
// connections (there were 16) or of the sample gateway's threads (32).
TEST(CallLanes, FortyActionsWaitAtTheGatewayTogether) {
    expect_read_at_once(40, 40, 40, 6000);
}

}  // namespace call_lanes
