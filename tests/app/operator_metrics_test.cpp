// Issue 31 item 6, what an operator's dashboard reads, through the core and the Streamable
// HTTP transport over the sample gateway: a refusal by the per-caller rate limit is counted
// with what it refused (the tool, the resource template, the prompt) and the reason
// `rate_limited`, while other refusals keep their JSON-RPC code; every HTTP answer is counted
// by method, route and status, a path no route serves counting as "other". The real binary's
// process metrics and build info are in tests/app/metrics_cli_test.cpp.
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "base/metrics.hpp"
#include "server/json_rpc.hpp"
#include "server/mcp_server.hpp"
#include "tests/metrics_text.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"
#include "transport/http_transport.hpp"
#include "transport/metrics_listener.hpp"

namespace operator_metrics {

using agency::testing::ManualClock;
using agency::testing::metric_value;
using agency::testing::ToolHarness;
using json = nlohmann::json;
using Labels = std::map<std::string, std::string>;

double now_counted(const std::string& name, const Labels& labels) {
    return metric_value(agency::base::metrics::render(), name, labels);
}

// HTTP answers are counted once written, on the server's thread, a moment after the client
// has read them: waits (bounded) until `name` reaches `want`, and returns what it holds.
double counted_at_least(const std::string& name, const Labels& labels, double want) {
    double got = 0;
    (void)agency::testing::eventually(
        [&] {
            got = now_counted(name, labels);
            return got >= want;
        },
        std::chrono::milliseconds(1000), std::chrono::milliseconds(2));
    return got;
}

// The values `label` takes in the samples of family `name`.
std::set<std::string> label_values(const std::string& name, const std::string& label) {
    std::set<std::string> values;
    std::istringstream lines(agency::base::metrics::render());
    const std::string key = label + "=\"";
    for (std::string line; std::getline(lines, line);) {
        const auto at = line.find(key);
        if (line.rfind(name + "{", 0) != 0 || at == std::string::npos) continue;
        const auto from = at + key.size();
        values.insert(line.substr(from, line.find('"', from) - from));
    }
    return values;
}

// Every tool, resource and prompt over the sample gateway; each caller holds one unit at once
// and, on a clock that never moves, never gets another.
struct OneUnitEach {
    ManualClock clock;
    std::shared_ptr<agency::tools::ActionRuntime> rt =
        std::make_shared<agency::tools::ActionRuntime>(
            agency::testing::with_store(agency::tools::ActionSettings{}));
    ToolHarness h{agency::sample::Options{}, agency::tools::Settings{},
                  [](agency::mcp::Server&, const std::shared_ptr<agency::tools::Toolbox>&) {}};

    OneUnitEach() {
        agency::mcp::ServerOptions options;
        options.state_secret = "operator-metrics";
        options.clock = &clock;
        options.rate_limit = {.per_minute = 1, .burst = 1};
        h.server = std::make_unique<agency::mcp::Server>(options);
        agency::tools::register_all(*h.server, h.box, rt);
    }
    ~OneUnitEach() { rt->audits().stop(); }
};

int rpc_code(const json& reply) {
    return reply.contains("error") ? reply["error"].value("code", 0) : 0;
}

}  // namespace operator_metrics

using namespace operator_metrics;

// Before: a refused tools/call counted with gen_ai_tool_name="" and error_type="other", and
// nothing said which resource or prompt was refused.
TEST(OperatorMetrics, RateLimitRefusalsCarryWhatWasRefusedAndTheReason) {
    OneUnitEach s;
    const std::string refusals = "agency_mcp_rate_limit_refusals_total";
    const Labels limited_call{
        {"gen_ai_tool_name", "list_clients"}, {"outcome", "rate_limited"}, {"era", "modern"}};
    const Labels limited_duration{{"mcp_method_name", "tools/call"},
                                  {"gen_ai_tool_name", "list_clients"},
                                  {"error_type", "rate_limited"}};
    const Labels tool{{"mcp_method_name", "tools/call"}, {"target", "list_clients"}};
    const Labels unknown_tool{{"mcp_method_name", "tools/call"}, {"target", ""}};
    const Labels overview{{"mcp_method_name", "resources/read"},
                          {"target", "agency://clients/{client_id}/overview"}};
    const Labels usage{{"mcp_method_name", "resources/read"}, {"target", "agency://server/usage"}};
    const Labels unknown_uri{{"mcp_method_name", "resources/read"}, {"target", ""}};
    const Labels prompt{{"mcp_method_name", "prompts/get"}, {"target", "monthly_client_report"}};
    const Labels read_duration{{"mcp_method_name", "resources/read"},
                               {"error_type", "rate_limited"}};
    const Labels unknown_rpc{
        {"mcp_method_name", "tools/call"}, {"gen_ai_tool_name", ""}, {"error_type", "-32602"}};
    const Labels unknown_call{{"gen_ai_tool_name", ""}, {"outcome", "rpc_error"}};
    const auto calls = [](const Labels& l) {
        return now_counted("agency_mcp_tool_calls_total", l);
    };
    const auto durations = [](const Labels& l) {
        return now_counted("mcp_server_operation_duration_seconds_count", l);
    };
    const double calls0 = calls(limited_call), durations0 = durations(limited_duration),
                 tool0 = now_counted(refusals, tool),
                 unknown0 = now_counted(refusals, unknown_tool),
                 overview0 = now_counted(refusals, overview), usage0 = now_counted(refusals, usage),
                 uri0 = now_counted(refusals, unknown_uri), prompt0 = now_counted(refusals, prompt),
                 reads0 = durations(read_duration), rpc0 = durations(unknown_rpc),
                 unknown_calls0 = calls(unknown_call);

    ASSERT_FALSE(s.h.call("list_clients", json::object(), "runaway").is_error());
    const agency::testing::ToolReply refused = s.h.call("list_clients", json::object(), "runaway");
    ASSERT_EQ(refused.rpc_error, agency::mcp::error_code::rate_limited) << refused.response.dump();
    EXPECT_NE(refused.response["error"].value("message", "").find("tools/call of list_clients"),
              std::string::npos)
        << "the refusal names the tool: " << refused.response.dump();
    EXPECT_EQ(calls(limited_call), calls0 + 1);
    EXPECT_EQ(durations(limited_duration), durations0 + 1);
    EXPECT_EQ(now_counted(refusals, tool), tool0 + 1);

    // What the server does not have never becomes a label: it counts with an empty target.
    EXPECT_EQ(s.h.call("no_such_tool_7f3a", json::object(), "runaway").rpc_error,
              agency::mcp::error_code::rate_limited);
    EXPECT_EQ(now_counted(refusals, unknown_tool), unknown0 + 1);
    for (const std::string uri :
         {"agency://clients/demo-plumbing/overview", "agency://clients/demo-dental/overview",
          "agency://server/usage", "agency://nowhere/7f3a"})
        EXPECT_EQ(rpc_code(s.h.request("resources/read", {{"uri", uri}}, "runaway")),
                  agency::mcp::error_code::rate_limited)
            << uri;
    EXPECT_EQ(now_counted(refusals, overview), overview0 + 2) << "both clients' overviews";
    EXPECT_EQ(now_counted(refusals, usage), usage0 + 1);
    EXPECT_EQ(now_counted(refusals, unknown_uri), uri0 + 1);
    EXPECT_EQ(durations(read_duration), reads0 + 4);
    EXPECT_EQ(
        rpc_code(s.h.request("prompts/get",
                             {{"name", "monthly_client_report"},
                              {"arguments", {{"client_id", "demo-law"}, {"month", "2024-02"}}}},
                             "runaway")),
        agency::mcp::error_code::rate_limited);
    EXPECT_EQ(now_counted(refusals, prompt), prompt0 + 1);
    const auto targets = label_values(refusals, "target");
    for (const auto& target : targets)
        EXPECT_EQ(target.find("7f3a"), std::string::npos) << "a caller's text as a label";

    // Another refusal keeps its own JSON-RPC code: an unknown tool, from a caller with units.
    EXPECT_EQ(s.h.call("no_such_tool_7f3a", json::object(), "colleague").rpc_error,
              agency::mcp::error_code::invalid_params);
    EXPECT_EQ(durations(unknown_rpc), rpc0 + 1);
    EXPECT_EQ(calls(unknown_call), unknown_calls0 + 1);
    EXPECT_EQ(now_counted(refusals, unknown_tool), unknown0 + 1) << "not a rate-limit refusal";
}

// Before: no HTTP answer was counted at all.
TEST(OperatorMetrics, HttpAnswersAreCountedByRouteAndStatusWithBoundedLabels) {
    OneUnitEach s;
    agency::mcp::HttpOptions options;
    options.port = 0;
    options.routes.push_back(agency::mcp::metrics_route());
    agency::mcp::HttpTransport transport(*s.h.server, options);
    const int port = transport.start();
    httplib::Client client("127.0.0.1", port);
    const std::string family = "agency_mcp_http_responses_total";
    const auto answers = [](const char* method, const char* route, const char* status) {
        return Labels{{"http_request_method", method},
                      {"http_route", route},
                      {"http_response_status_code", status}};
    };
    const Labels ok = answers("POST", "/mcp", "200"), limited = answers("POST", "/mcp", "429"),
                 no_get = answers("GET", "/mcp", "405"), lost = answers("GET", "other", "404"),
                 scraped = answers("GET", "/metrics", "200");
    const double ok0 = now_counted(family, ok), limited0 = now_counted(family, limited),
                 no_get0 = now_counted(family, no_get), lost0 = now_counted(family, lost),
                 scraped0 = now_counted(family, scraped);

    const json body = {{"jsonrpc", "2.0"},
                       {"id", 1},
                       {"method", "tools/call"},
                       {"params",
                        {{"name", "list_clients"},
                         {"arguments", json::object()},
                         {"_meta", ToolHarness::modern_meta()}}}};
    const httplib::Headers headers{{"MCP-Protocol-Version", "2026-07-28"},
                                   {"Mcp-Method", "tools/call"},
                                   {"Mcp-Name", "list_clients"},
                                   {"Accept", "application/json, text/event-stream"}};
    auto res = client.Post("/mcp", headers, body.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    res = client.Post("/mcp", headers, body.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 429) << "one unit, spent: " << res->body;
    EXPECT_EQ(client.Get("/mcp")->status, 405);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(client.Get("/caller-chosen/path-7f3a-" + std::to_string(i))->status, 404);
    EXPECT_EQ(client.Get("/metrics")->status, 200);

    EXPECT_EQ(counted_at_least(family, ok, ok0 + 1), ok0 + 1);
    EXPECT_EQ(counted_at_least(family, limited, limited0 + 1), limited0 + 1);
    EXPECT_EQ(counted_at_least(family, no_get, no_get0 + 1), no_get0 + 1);
    EXPECT_EQ(counted_at_least(family, lost, lost0 + 3), lost0 + 3);
    EXPECT_EQ(counted_at_least(family, scraped, scraped0 + 1), scraped0 + 1);
    for (const auto& route : label_values(family, "http_route"))
        EXPECT_EQ(route.find("7f3a"), std::string::npos)
            << "a path no route serves became a label: " << route;
    transport.stop();
}

// The listener of --metrics-listen counts its own answers under the same family.
TEST(OperatorMetrics, MetricsListenerCountsItsAnswers) {
    agency::mcp::MetricsListener listener;
    const int port = listener.start("127.0.0.1", 0);
    httplib::Client client("127.0.0.1", port);
    const std::string family = "agency_mcp_http_responses_total";
    const Labels scraped{{"http_request_method", "GET"},
                         {"http_route", "/metrics"},
                         {"http_response_status_code", "200"}};
    const Labels lost{{"http_request_method", "GET"},
                      {"http_route", "other"},
                      {"http_response_status_code", "404"}};
    const double scraped0 = now_counted(family, scraped), lost0 = now_counted(family, lost);
    EXPECT_EQ(client.Get("/metrics")->status, 200);
    EXPECT_EQ(client.Get("/mcp")->status, 404);
    EXPECT_EQ(counted_at_least(family, scraped, scraped0 + 1), scraped0 + 1);
    EXPECT_EQ(counted_at_least(family, lost, lost0 + 1), lost0 + 1);
    listener.stop();
}
