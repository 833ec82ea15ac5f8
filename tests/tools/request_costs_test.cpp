// Issue 30, item 5: every request that costs the gateway counts against the caller's rate
// limit, weighted by what it costs (server/rate_limit.hpp, server/methods.cpp). Through the core
// with every tool and the surface registered over the sample gateway, on a ManualClock: a
// client overview (7 gateway reads) cannot amplify past the caller's units, prompts and
// completion are counted, a refusal reaches no gateway and names its cost, another caller keeps
// its own bucket. The same over HTTP with the real binary is in tests/app/flood_cli_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "server/json_rpc.hpp"
#include "server/mcp_server.hpp"
#include "server/rate_limit.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

namespace request_costs {

using agency::testing::ManualClock;
using agency::testing::ToolHarness;
using json = nlohmann::json;
using namespace std::chrono_literals;

const std::string kOverview = "agency://clients/demo-plumbing/overview";

// The sample gateway and every tool, resource, prompt and completion, on a server whose
// callers are held to `limit` on `clock`.
struct Limited {
    ManualClock clock;
    std::shared_ptr<agency::tools::ActionRuntime> rt =
        std::make_shared<agency::tools::ActionRuntime>(
            agency::testing::with_store(agency::tools::ActionSettings{}));
    ToolHarness h{agency::sample::Options{}, agency::tools::Settings{},
                  [](agency::mcp::Server&, const std::shared_ptr<agency::tools::Toolbox>&) {}};

    explicit Limited(agency::mcp::RateLimit limit) {
        agency::mcp::ServerOptions options;
        options.state_secret = "request-costs";
        options.clock = &clock;
        options.rate_limit = limit;
        h.server = std::make_unique<agency::mcp::Server>(options);
        agency::tools::register_all(*h.server, h.box, rt);
    }
    ~Limited() { rt->audits().stop(); }

    json read(const std::string& who, const std::string& uri = kOverview) {
        return h.request("resources/read", {{"uri", uri}}, who);
    }
    json prompt(const std::string& who) {
        return h.request("prompts/get",
                         {{"name", "monthly_client_report"},
                          {"arguments", {{"client_id", "demo-law"}, {"month", "2024-02"}}}},
                         who);
    }
    json complete(const std::string& who) {
        return h.request("completion/complete",
                         {{"ref", {{"type", "ref/resource"},
                                   {"uri", "agency://clients/{client_id}/overview"}}},
                          {"argument", {{"name", "client_id"}, {"value", "demo"}}}},
                         who);
    }
};

bool limited(const json& reply) {
    return reply.contains("error") &&
           reply["error"].value("code", 0) == agency::mcp::error_code::rate_limited;
}


TEST(RequestCosts, LimiterTakesUnitsAndACostBeyondTheBurstLeavesADebt) {
    ManualClock clock;
    agency::mcp::CallRateLimiter limiter({.per_minute = 60, .burst = 10}, clock);
    EXPECT_FALSE(limiter.take("a", 6));
    auto wait = limiter.take("a", 6);
    ASSERT_TRUE(wait) << "4 left, 6 asked";
    EXPECT_EQ(wait->count(), 2);
    EXPECT_FALSE(limiter.take("a", 4)) << "a refusal took nothing";
    // A request costing more than the bucket holds: only from a full bucket, leaving a debt.
    clock.advance(10s);
    EXPECT_FALSE(limiter.take("a", 25));
    wait = limiter.take("a", 1);
    ASSERT_TRUE(wait);
    EXPECT_EQ(wait->count(), 16) << "15 units owed, then one more";
    EXPECT_FALSE(limiter.take("b", 10)) << "another caller's bucket is its own";
}

// One caller held to 14 units at once reads the overview again and again: 2 reads pass, and
// the gateway sees at most 12 requests for all of them; the refusals reach no gateway, say
// what the read costs and what a unit is, and another caller still reads.
TEST(RequestCosts, OverviewCannotAmplifyPastTheCallersLimit) {
    Limited l({.per_minute = 60, .burst = 14});
    // The first request starts the server's work (gateway discovery): out of the count.
    EXPECT_TRUE(l.read("warm-up").contains("result"));
    const std::size_t before = l.h.requests();
    int passed = 0;
    json refusal;
    for (int i = 0; i < 50; ++i) {
        const json reply = l.read("runaway");
        if (limited(reply))
            refusal = reply["error"];
        else if (reply.contains("result"))
            ++passed;
        else
            ADD_FAILURE() << reply.dump();
    }
    EXPECT_EQ(passed, 2);
    EXPECT_LE(l.h.requests() - before, 14u) << "7 gateway reads per overview, 14 units";
    ASSERT_FALSE(refusal.is_null());
    EXPECT_EQ(refusal["data"]["costUnits"], 7);
    EXPECT_EQ(refusal["data"]["retryAfterSeconds"], 7);
    const std::string message = refusal.value("message", "");
    EXPECT_NE(message.find("resources/read of " + kOverview + " costs 7 units"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("a unit being one tool call or one gateway read"), std::string::npos)
        << message;
    EXPECT_NE(message.find("retry in 7 s"), std::string::npos) << message;

    const std::size_t at_refusal = l.h.requests();
    EXPECT_TRUE(limited(l.read("runaway")));
    EXPECT_EQ(l.h.requests(), at_refusal) << "a refused read reaches no gateway";

    EXPECT_TRUE(l.read("colleague").contains("result")) << "a second key is unaffected";
    l.clock.advance(7s);
    EXPECT_TRUE(l.read("runaway").contains("result")) << "7 units back after 7 s";
    // Tool calls draw on the same units: the bucket is empty again.
    const json call = l.h.request("tools/call",
                                  {{"name", "list_clients"}, {"arguments", json::object()}},
                                  "runaway");
    EXPECT_TRUE(limited(call)) << call.dump();
}

// prompts/get and completion/complete cost at least a unit each; a completion that must read
// the client list from the gateway costs its pages (5), and 1 once the list is cached.
TEST(RequestCosts, PromptsAndCompletionAreCounted) {
    Limited l({.per_minute = 60, .burst = 8});
    EXPECT_TRUE(l.complete("writer").contains("result")) << "5 units: the list is not cached";
    EXPECT_TRUE(l.complete("writer").contains("result")) << "1 unit: cached";
    EXPECT_TRUE(l.prompt("writer").contains("result"));
    EXPECT_TRUE(l.prompt("writer").contains("result"));
    const json over = l.prompt("writer");
    ASSERT_TRUE(limited(over)) << over.dump();
    EXPECT_EQ(over["error"]["data"]["costUnits"], 1);
    EXPECT_NE(over["error"].value("message", "").find("prompts/get of monthly_client_report"),
              std::string::npos)
        << over.dump();
    EXPECT_TRUE(limited(l.complete("writer")));
    EXPECT_TRUE(l.prompt("reader").contains("result")) << "a second key is unaffected";
    EXPECT_TRUE(l.complete("reader").contains("result"));
    l.clock.advance(1s);
    EXPECT_TRUE(l.prompt("writer").contains("result"));
}

// A resources/read the server answers without the gateway (the usage note, an unknown URI)
// still costs a unit; tools/list does not.
TEST(RequestCosts, EveryReadCostsAUnitAndListsDoNot) {
    Limited l({.per_minute = 60, .burst = 2});
    EXPECT_TRUE(l.read("c", "agency://server/usage").contains("result"));
    EXPECT_FALSE(limited(l.read("c", "agency://nothing/here")));
    EXPECT_TRUE(limited(l.read("c", "agency://server/usage")));
    EXPECT_TRUE(l.h.request("tools/list", json::object(), "c").contains("result"));
}

// Refusals over the limit write one line, then one summary per interval, however many.
TEST(RequestCosts, RefusalsOverTheLimitAreSummarisedInTheLog) {
    std::ostringstream captured;
    auto previous = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
    {
        Limited l({.per_minute = 60, .burst = 1});
        EXPECT_TRUE(l.prompt("flood").contains("result"));
        for (int i = 0; i < 2000; ++i) EXPECT_TRUE(limited(l.prompt("flood")));
        l.clock.advance(61s);
        EXPECT_FALSE(limited(l.prompt("flood")));  // the bucket holds one
        EXPECT_TRUE(limited(l.prompt("flood")));  // writes the summary of the 2000 before
    }
    spdlog::set_default_logger(previous);
    const std::string log = captured.str();
    std::size_t lines = 0;
    for (char c : log) lines += c == '\n';
    EXPECT_LE(lines, 6u) << log.substr(0, 2000);
    EXPECT_NE(log.find("prompts/get of flood refused: over the rate limit"), std::string::npos)
        << log.substr(0, 2000);
    EXPECT_NE(log.find("refused over the rate limit: 1999 more in the last 61 s"),
              std::string::npos)
        << log.substr(0, 2000);
}

}  // namespace request_costs
