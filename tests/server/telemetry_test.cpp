// Trace context and metrics, against real parts: tool calls through Server::handle_message
// over the sample gateway on loopback, whose request log shows the traceparent each request
// carried; the Streamable HTTP transport for the header; base::metrics::render for the counts,
// and promtool for the exposition format.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "base/metrics.hpp"
#include "base/trace_context.hpp"
#include "gateway/client.hpp"
#include "server/mcp_server.hpp"
#include "tests/loopback_server.hpp"
#include "tests/metrics_text.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"
#include "transport/http_transport.hpp"
#include "transport/metrics_listener.hpp"

namespace {

using agency::testing::metric_value;
using agency::testing::ToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

constexpr const char* kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* kParent = "00f067aa0ba902b7";
const std::string kTraceparent = std::string("00-") + kTrace + "-" + kParent + "-01";

// A modern tools/call whose _meta carries `traceparent` (none when empty).
ToolReply traced_call(ToolHarness& h, const std::string& tool, const json& args,
                      const std::string& traceparent, const std::string& principal = "local") {
    json meta = ToolHarness::modern_meta();
    if (!traceparent.empty()) meta["traceparent"] = traceparent;
    const json message = {{"jsonrpc", "2.0"},
                          {"id", h.next_id++},
                          {"method", "tools/call"},
                          {"params", {{"name", tool}, {"arguments", args}, {"_meta", meta}}}};
    agency::mcp::Inbound in;
    in.principal.name = principal;
    ToolReply reply;
    reply.response = json::parse(h.server->handle_message(message, in)->text);
    if (reply.response.contains("error"))
        reply.rpc_error = reply.response["error"].value("code", 0);
    else
        reply.result = reply.response.value("result", json());
    return reply;
}

// Waits until the sample gateway has logged every request it received (it logs a request
// after answering it, so a call's answer can come back first).
void settle(const ToolHarness& h) {
    (void)agency::testing::eventually([&] { return h.gw->requests_in_flight() == 0; },
                                      std::chrono::milliseconds(2000));
}

// The requests the sample gateway has logged, once it has logged all it received.
std::size_t logged(const ToolHarness& h) {
    settle(h);
    return h.requests();
}

// The traceparent headers of the gateway requests logged from `from` on.
std::vector<std::string> traceparents_since(const ToolHarness& h, std::size_t from) {
    settle(h);
    std::vector<std::string> out;
    const auto log = h.gw->request_log();
    for (std::size_t i = from; i < log.size(); ++i) out.push_back(log[i].traceparent);
    return out;
}

}  // namespace

TEST(TraceContext, ParsesOnlyWellFormedTraceparents) {
    const auto ok = agency::base::parse_traceparent(kTraceparent);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->trace_id_hex(), kTrace);
    EXPECT_EQ(ok->span_id_hex(), kParent);
    EXPECT_EQ(ok->flags, 1);
    EXPECT_EQ(ok->header(), kTraceparent);
    const std::string t = kTrace, p = kParent;
    for (const std::string& bad : std::vector<std::string>{
             std::string(""),
             "00-" + t + "-" + p,                                 // no flags
             "00-" + t + "-" + p + "-01-extra",                   // version 00 has no more fields
             "00-" + t + "-" + p + "-1",                          // flags one digit
             "00-4BF92F3577B34DA6A3CE929D0E0E4736-" + p + "-01",  // uppercase
             "00-00000000000000000000000000000000-" + p + "-01",  // zero trace id
             "00-" + t + "-0000000000000000-01",                  // zero parent id
             "ff-" + t + "-" + p + "-01",                         // version ff is invalid
             "00_" + t + "-" + p + "-01",                         // wrong separator
             "00-" + t + "-" + p + "-0g",                         // not hex
             "0-" + t + "-" + p + "-01",                          // short version
             " 00-" + t + "-" + p + "-01",                        // leading space
             "01-" + t + "-" + p + "-01x",                        // later version: '-' must follow
             "00-" + t.substr(0, 31) + "-" + p + "-01",           // short trace id
         })
        EXPECT_FALSE(agency::base::parse_traceparent(bad)) << bad;
    // A later version is read by its first four fields.
    const auto later = agency::base::parse_traceparent("cc-" + t + "-" + p + "-01-what-else");
    ASSERT_TRUE(later);
    EXPECT_EQ(later->trace_id_hex(), kTrace);
}

TEST(TraceContext, ChildSpansKeepTheTraceAndNewTracesDiffer) {
    const auto parent = *agency::base::parse_traceparent(kTraceparent);
    const auto child = agency::base::child_span(parent);
    EXPECT_EQ(child.trace_id_hex(), parent.trace_id_hex());
    EXPECT_NE(child.span_id_hex(), parent.span_id_hex());
    EXPECT_EQ(child.flags, parent.flags);
    const auto a = agency::base::start_trace(), b = agency::base::start_trace();
    EXPECT_NE(a.trace_id_hex(), b.trace_id_hex());
    EXPECT_TRUE(agency::base::parse_traceparent(a.header())) << a.header();
    EXPECT_EQ(a.flags, 0);  // this server records no spans: not sampled
}

// A call's traceparent (params._meta) goes on to every gateway request made for it, with the
// same trace id and a span id of this server's.
TEST(Telemetry, MetaTraceparentReachesEveryGatewayRequestOfTheCall) {
    ToolHarness h;
    const std::size_t before = logged(h);
    const ToolReply r =
        traced_call(h, "list_keywords", {{"client_id", "demo-plumbing"}}, kTraceparent);
    ASSERT_FALSE(r.is_error()) << r.response.dump().substr(0, 400);
    const auto sent = traceparents_since(h, before);
    ASSERT_FALSE(sent.empty());
    for (const auto& header : sent) {
        const auto parsed = agency::base::parse_traceparent(header);
        ASSERT_TRUE(parsed) << "'" << header << "'";
        EXPECT_EQ(parsed->trace_id_hex(), kTrace);
        EXPECT_NE(parsed->span_id_hex(), kParent);
        EXPECT_EQ(parsed->flags, 1);
    }
}

// Without one (or with a malformed one, which is ignored rather than refused) the server starts
// a trace of its own for each call.
TEST(Telemetry, WithoutAValidTraceparentEachCallStartsItsOwnTrace) {
    ToolHarness h;
    std::vector<std::string> traces;
    for (const std::string& given :
         std::vector<std::string>{"", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}) {
        const std::size_t before = logged(h);
        const ToolReply r = traced_call(h, "list_clients", json::object(), given);
        ASSERT_FALSE(r.is_error() || r.rpc_error) << r.response.dump().substr(0, 400);
        const auto sent = traceparents_since(h, before);
        ASSERT_FALSE(sent.empty());
        const auto parsed = agency::base::parse_traceparent(sent.front());
        ASSERT_TRUE(parsed) << sent.front();
        EXPECT_NE(parsed->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        traces.emplace_back(parsed->trace_id_hex());
    }
    EXPECT_NE(traces[0], traces[1]);
}

// Over HTTP: the traceparent header counts when _meta has none, and /metrics (a route beside
// /mcp) shows the call.
TEST(Telemetry, HttpTraceparentHeaderReachesTheGatewayAndMetricsIsARoute) {
    ToolHarness h;
    agency::mcp::HttpOptions options;
    options.port = 0;
    options.routes.push_back(agency::mcp::metrics_route());
    agency::mcp::HttpTransport transport(*h.server, options);
    const int port = transport.start();
    httplib::Client client("127.0.0.1", port);
    const json body = {{"jsonrpc", "2.0"},
                       {"id", 1},
                       {"method", "tools/call"},
                       {"params",
                        {{"name", "list_clients"},
                         {"arguments", json::object()},
                         {"_meta", ToolHarness::modern_meta()}}}};
    const std::size_t before = logged(h);
    const auto res = client.Post("/mcp",
                                 {{"MCP-Protocol-Version", "2026-07-28"},
                                  {"Mcp-Method", "tools/call"},
                                  {"Mcp-Name", "list_clients"},
                                  {"Accept", "application/json, text/event-stream"},
                                  {"traceparent", kTraceparent}},
                                 body.dump(), "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << res->body;
    const auto sent = traceparents_since(h, before);
    ASSERT_FALSE(sent.empty());
    const auto parsed = agency::base::parse_traceparent(sent.front());
    ASSERT_TRUE(parsed) << sent.front();
    EXPECT_EQ(parsed->trace_id_hex(), kTrace);
    const auto scraped = client.Get("/metrics");
    ASSERT_TRUE(scraped);
    EXPECT_EQ(scraped->status, 200);
    EXPECT_EQ(scraped->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
    EXPECT_GE(metric_value(scraped->body, "agency_mcp_tool_calls_total",
                           {{"gen_ai_tool_name", "list_clients"}, {"era", "modern"}}),
              1);
    transport.stop();
}

// Counters move with real calls: the tool call by tool, outcome and era, its duration, and
// the gateway requests by method, status and retry.
TEST(Telemetry, ToolCallsAndGatewayRequestsAreCounted) {
    ToolHarness h;
    using Labels = std::map<std::string, std::string>;
    const Labels ok_call{
        {"gen_ai_tool_name", "list_clients"}, {"outcome", "ok"}, {"era", "modern"}};
    const Labels duration{{"mcp_method_name", "tools/call"}, {"gen_ai_tool_name", "list_clients"}};
    const Labels first_get{
        {"http_request_method", "GET"}, {"http_response_status_code", "200"}, {"retry", "false"}};
    const Labels retried_get{
        {"http_request_method", "GET"}, {"http_response_status_code", "200"}, {"retry", "true"}};
    const Labels failed_get{{"http_request_method", "GET"},
                            {"http_response_status_code", "500"},
                            {"error_type", "5xx"}};
    const Labels unknown{{"gen_ai_tool_name", ""}, {"outcome", "rpc_error"}};
    const Labels tool_error{{"gen_ai_tool_name", "list_keywords"}, {"outcome", "tool_error"}};
    const auto count = [](const Labels& labels, const char* name = "agency_mcp_tool_calls_total") {
        return metric_value(agency::base::metrics::render(), name, labels);
    };
    const double calls0 = count(ok_call),
                 durations0 = count(duration, "mcp_server_operation_duration_seconds_count"),
                 gets0 = count(first_get, "agency_gateway_requests_total"),
                 retried0 = count(retried_get, "agency_gateway_requests_total"),
                 failed0 = count(failed_get, "agency_gateway_requests_total"),
                 unknown0 = count(unknown), errors0 = count(tool_error);

    const std::size_t before = logged(h);
    ASSERT_FALSE(h.call("list_clients", json::object()).is_error());
    const double gets = static_cast<double>(logged(h) - before);
    EXPECT_EQ(count(ok_call), calls0 + 1);
    EXPECT_EQ(count(duration, "mcp_server_operation_duration_seconds_count"), durations0 + 1);
    EXPECT_EQ(count(first_get, "agency_gateway_requests_total"), gets0 + gets);

    // One 500, then the retry's 200.
    h.gw->inject(
        {.target = "keywords", .mode = agency::sample::FaultMode::fail_before, .count = 1});
    ASSERT_FALSE(h.call("list_keywords", {{"client_id", "demo-plumbing"}}).is_error());
    EXPECT_EQ(count(failed_get, "agency_gateway_requests_total"), failed0 + 1);
    EXPECT_EQ(count(retried_get, "agency_gateway_requests_total"), retried0 + 1);

    EXPECT_EQ(h.call("no_such_tool", json::object()).rpc_error, -32602);
    EXPECT_EQ(count(unknown), unknown0 + 1);
    EXPECT_TRUE(h.call("list_keywords", {{"client_id", "no-such-client"}}).is_error());
    EXPECT_EQ(count(tool_error), errors0 + 1);
}

// The values of `label` over the samples of the families named `names` in an exposition.
std::set<std::string> label_values(const std::string& text, const std::vector<std::string>& names,
                                   const std::string& label) {
    std::set<std::string> values;
    std::istringstream lines(text);
    const std::string key = label + "=\"";
    for (std::string line; std::getline(lines, line);) {
        bool named = false;
        for (const auto& name : names) named = named || line.rfind(name + "{", 0) == 0;
        const auto at = line.find(key);
        if (!named || at == std::string::npos) continue;
        const auto from = at + key.size();
        values.insert(line.substr(from, line.find('"', from) - from));
    }
    return values;
}

// Issue 30: a gateway answering random statuses grew /metrics to 879 status labels (2.18 MB).
// The status labels of gateway requests are the statuses HTTP defines, "0" and "other".
TEST(Telemetry, GatewayStatusLabelsStayBounded) {
    agency::testing::LoopbackServer<> gateway;
    std::atomic<int> next{200};
    gateway.http.Get(".*", [&](const httplib::Request&, httplib::Response& res) {
        res.status = next++;
        res.set_content(R"({"data":[],"pagination":{"has_more":false}})", "application/json");
    });
    gateway.start();
    agency::gateway::Config config;
    config.base_url = "http://127.0.0.1:" + std::to_string(gateway.port) + "/api";
    config.max_attempts = 1;
    config.read_timeout = std::chrono::milliseconds(2000);
    agency::gateway::Client client(config);
    const std::vector<std::string> families = {"agency_gateway_requests_total",
                                               "http_client_request_duration_seconds_count"};
    for (int i = 0; i < 2000 && next.load() < 1000; ++i) {
        try {
            client.read({.resource = "keywords", .client_id = "demo-bulk"});
        } catch (const agency::gateway::Error&) {
        }
    }
    EXPECT_GE(next.load(), 1000) << "the gateway answered every status from 200 to 999";
    const auto values =
        label_values(agency::base::metrics::render(), families, "http_response_status_code");
    EXPECT_TRUE(values.count("other")) << "statuses HTTP does not define";
    for (const auto& value : values) {
        if (value == "other" || value == "0") continue;
        const int status = std::stoi(value);
        EXPECT_TRUE(status >= 100 && status <= 511) << value;
        EXPECT_EQ(agency::base::metrics::http_status_label(status), value);
    }
    EXPECT_LE(values.size(), 70u) << values.size() << " status labels";
    EXPECT_EQ(agency::base::metrics::http_status_label(299), "other");
    EXPECT_EQ(agency::base::metrics::http_status_label(404), "404");
    EXPECT_EQ(agency::base::metrics::http_status_label(999), "other");
}

// The whole exposition, after real calls, is what Prometheus reads: promtool says so.
TEST(Telemetry, ExpositionPassesPromtool) {
    ToolHarness h;
    ASSERT_FALSE(h.call("list_clients", json::object()).is_error());
    const auto dir = std::filesystem::temp_directory_path() / "agency-promtool";
    std::filesystem::create_directories(dir);
    const auto file = dir / "metrics.txt";
    std::ofstream(file) << agency::base::metrics::render();
    const auto result = agency::testing::promtool_check(file);
    EXPECT_EQ(result.first, 0) << result.second;
    EXPECT_EQ(result.second, "") << result.second;
}

namespace {

// The server with every tool, the action tools over an in-memory runtime.
struct WithActions {
    std::shared_ptr<agency::tools::ActionRuntime> rt;
    std::unique_ptr<ToolHarness> h;

    explicit WithActions(agency::tools::ActionSettings settings = {})
        : rt(std::make_shared<agency::tools::ActionRuntime>(
              agency::testing::with_store(std::move(settings)))) {
        h = std::make_unique<ToolHarness>(
            agency::sample::Options{}, agency::tools::Settings{},
            [this](agency::mcp::Server& server,
                   const std::shared_ptr<agency::tools::Toolbox>& box) {
                agency::tools::register_all(server, box, rt);
            });
    }
    ~WithActions() { rt->audits().stop(); }  // workers stop before their gateway
};

double counted(const std::string& name, const std::map<std::string, std::string>& labels) {
    return metric_value(agency::base::metrics::render(), name, labels);
}

}  // namespace

// Confirmations asked, granted and refused; the credit limiter's refusals.
TEST(Telemetry, ConfirmationsAndCreditRefusalsAreCounted) {
    agency::tools::ActionSettings settings;
    settings.credits.max_per_minute_per_client = 1;
    WithActions a(settings);
    const std::string c = "agency_mcp_confirmations_total";
    const auto by_id = [&](const char* result) {
        return counted(c, {{"result", result}, {"via", "confirmation_id"}});
    };
    const double asked0 = by_id("asked"), granted0 = by_id("granted"), refused0 = by_id("refused");
    const double refusals0 =
        counted("agency_mcp_credit_refusals_total", {{"gen_ai_tool_name", "generate_article"}});

    const ToolReply made = a.h->call(
        "generate_article", {{"client_id", "demo-dental"}, {"keyword", "dental implants"}});
    ASSERT_FALSE(made.is_error()) << made.response.dump().substr(0, 400);
    const std::string article = made.structured().value("article_id", "");
    const ToolReply over = a.h->call(
        "generate_article", {{"client_id", "demo-dental"}, {"keyword", "teeth whitening"}});
    EXPECT_EQ(over.reason(), "rate_limited");
    EXPECT_EQ(
        counted("agency_mcp_credit_refusals_total", {{"gen_ai_tool_name", "generate_article"}}),
        refusals0 + 1);

    json args = {{"client_id", "demo-dental"}, {"article_id", article}};
    const ToolReply preview = a.h->call("deploy_article", args);
    ASSERT_FALSE(preview.is_error()) << preview.response.dump().substr(0, 400);
    EXPECT_EQ(by_id("asked"), asked0 + 1);
    args["confirmation_id"] = preview.structured().value("confirmation_id", "");
    EXPECT_FALSE(a.h->call("deploy_article", args).is_error());
    EXPECT_EQ(by_id("granted"), granted0 + 1);
    EXPECT_TRUE(a.h->call("deploy_article", args).is_error());  // spent: refused
    EXPECT_EQ(by_id("refused"), refused0 + 1);
}

// An audit runs on a worker thread after its call has been answered: its POST still carries
// the call's trace, and the job's states are counted.
TEST(Telemetry, AuditJobCarriesItsCallsTraceToTheGateway) {
    WithActions a;
    const std::string j = "agency_mcp_audit_jobs_total";
    const double queued0 = counted(j, {{"status", "queued"}}),
                 done0 = counted(j, {{"status", "succeeded"}});
    const ToolReply r =
        traced_call(*a.h, "run_seo_audit",
                    {{"client_id", "demo-dental"}, {"url", "https://example.com/"}}, kTraceparent);
    ASSERT_FALSE(r.is_error() || r.rpc_error) << r.response.dump().substr(0, 400);
    std::string header;
    (void)agency::testing::eventually(
        [&] {
            for (const auto& entry : a.h->gw->request_log())
                if (entry.method == "POST" && entry.target == "seo_audit")
                    header = entry.traceparent;
            return !header.empty();
        },
        std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
    const auto parsed = agency::base::parse_traceparent(header);
    ASSERT_TRUE(parsed) << "'" << header << "'";
    EXPECT_EQ(parsed->trace_id_hex(), kTrace);
    EXPECT_EQ(counted(j, {{"status", "queued"}}), queued0 + 1);
    (void)agency::testing::eventually(
        [&] { return counted(j, {{"status", "succeeded"}}) != done0; },
        std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
    EXPECT_EQ(counted(j, {{"status", "succeeded"}}), done0 + 1);
}
