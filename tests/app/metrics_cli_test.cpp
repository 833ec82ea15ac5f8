// The real binary in stdio mode with --metrics-listen and --log-format json: /metrics answers
// on its own address while stdout carries only protocol, the counts follow the calls, promtool
// accepts the exposition, and every log line is one JSON object, those of a call carrying its
// trace id, tool and principal (also from the audit worker's thread), never the gateway key.
// Over HTTP (serve --http): rate-limit refusals by tool and reason, HTTP answers by route and
// status, the process metrics and agency_build_info.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/metrics_text.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/tool_call.hpp"
#include "tests/support/wait.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kTrace = "0af7651916cd43dd8448eb211c80319c";
constexpr const char* kTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
constexpr const char* kGatewayKey = "gw-secret-key-7f3a9c";

using agency::testing::free_port;

// `agency-mcp serve` on pipes, with the gateway key in its environment.
class ServeProcess : public agency::testing::ServeProcess {
public:
    ServeProcess(const fs::path& dir, const std::string& args)
        : agency::testing::ServeProcess(dir, args,
                                        std::string("AGENCY_API_KEY=") + kGatewayKey) {}
};

json call(int id, const std::string& tool, const json& args) {
    json request = agency::testing::modern_tool_call(id, tool, args);
    request["params"]["_meta"]["traceparent"] = kTraceparent;
    return request;
}

}  // namespace

TEST(MetricsCli, StdioServesMetricsOnItsOwnAddressAndLogsJsonLines) {
    const fs::path dir =
        fs::temp_directory_path() / ("agency-metrics-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const int port = free_port();
    ServeProcess serve(dir, "serve --metrics-listen 127.0.0.1:" + std::to_string(port) +
                                " --log-format json --state-db '" + (dir / "state.db").string() +
                                "'");
    serve.send(call(1, "list_clients", json::object()));
    const json listed = serve.answer(1);
    ASSERT_TRUE(listed.is_object()) << serve.stderr_text();
    EXPECT_FALSE(listed["result"].value("isError", true)) << listed.dump().substr(0, 300);

    // An audit: its job runs on a worker thread after the answer; its log line carries the
    // call's trace all the same.
    serve.send(
        call(2, "run_seo_audit", {{"client_id", "demo-dental"}, {"url", "https://example.com/"}}));
    const json audit = serve.answer(2);
    ASSERT_TRUE(audit.is_object()) << serve.stderr_text();
    const std::string audit_id = audit["result"]["structuredContent"].value("audit_id", "");
    ASSERT_FALSE(audit_id.empty()) << audit.dump().substr(0, 400);
    std::string status;
    bool answered = true;
    int next_id = 3;
    (void)agency::testing::eventually(
        [&] {
            serve.send(call(next_id, "get_audit_status",
                            {{"client_id", "demo-dental"}, {"audit_id", audit_id}}));
            const json got = serve.answer(next_id++);
            answered = got.is_object();
            if (!answered) return true;
            status = got["result"]["structuredContent"].value("status", "");
            return status == "succeeded" || status == "failed";
        },
        4000ms, 20ms);
    ASSERT_TRUE(answered);
    EXPECT_EQ(status, "succeeded");

    httplib::Client metrics("127.0.0.1", port);
    const auto res = metrics.Get("/metrics");
    ASSERT_TRUE(res) << "no /metrics on 127.0.0.1:" << port << "\n" << serve.stderr_text();
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
    using agency::testing::metric_value;
    EXPECT_EQ(
        metric_value(res->body, "agency_mcp_tool_calls_total",
                     {{"gen_ai_tool_name", "list_clients"}, {"outcome", "ok"}, {"era", "modern"}}),
        1);
    EXPECT_EQ(metric_value(res->body, "agency_mcp_audit_jobs_total", {{"status", "succeeded"}}), 1);
    EXPECT_GE(
        metric_value(res->body, "agency_gateway_requests_total", {{"http_request_method", "POST"}}),
        1);
    EXPECT_EQ(metrics.Get("/mcp")->status, 404) << "only /metrics is served there";
    std::ofstream(dir / "metrics.txt") << res->body;
    const auto lint = agency::testing::promtool_check(dir / "metrics.txt");
    EXPECT_EQ(lint.first, 0) << lint.second;
    EXPECT_EQ(lint.second, "");

    EXPECT_EQ(serve.finish(), 0);
    const std::string err = serve.stderr_text();
    EXPECT_EQ(err.find(kGatewayKey), std::string::npos) << "the gateway key reached the log";
    std::istringstream lines(err);
    std::string line;
    bool audit_line = false;
    int n = 0;
    while (std::getline(lines, line)) {
        ++n;
        const json entry = json::parse(line, nullptr, false);
        ASSERT_TRUE(entry.is_object()) << "not a JSON line: " << line;
        EXPECT_TRUE(entry.contains("time") && entry.contains("level") && entry.contains("message"))
            << line;
        if (entry.value("message", "").find("audit job " + audit_id + " succeeded") == 0) {
            audit_line = true;
            EXPECT_EQ(entry.value("trace_id", ""), kTrace) << line;
            EXPECT_EQ(entry.value("tool", ""), "run_seo_audit") << line;
            EXPECT_EQ(entry.value("principal", ""), "local") << line;
        }
    }
    EXPECT_GT(n, 0);
    EXPECT_TRUE(audit_line) << err;
    fs::remove_all(dir);
}

namespace {

// `agency-mcp serve --http` on an ephemeral port, in the background, on the built-in sample
// gateway; `port` is 0 when it did not start.
class HttpServe {
public:
    HttpServe(const fs::path& dir, const std::string& args) : err_(dir / "http-stderr.txt") {
        const std::string command =
            "exec env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_RATE_LIMIT "
            "-u AGENCY_RATE_LIMIT_BURST -u AGENCY_METRICS_LISTEN '" +
            std::string(AGENCY_BINARY) + "' serve --http --listen 127.0.0.1:0 " + args +
            " < /dev/null > /dev/null 2> '" + err_.string() + "'";
        pid_ = ::fork();
        if (pid_ == 0) {
            ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        const std::string marker = "MCP over Streamable HTTP at http://127.0.0.1:";
        (void)agency::testing::eventually(
            [&] {
                const std::string text = stderr_text();
                if (const auto at = text.find(marker); at != std::string::npos)
                    port = std::atoi(text.c_str() + at + marker.size());
                return port != 0;
            },
            10000ms, 20ms);
    }
    ~HttpServe() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    std::string stderr_text() const {
        std::ifstream in(err_);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    int port = 0;

private:
    fs::path err_;
    pid_t pid_ = -1;
};

double seconds_since_epoch() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

// Issue 31 item 6, the real binary over HTTP: a caller over its rate limit is counted with the
// tool it asked for and the reason; every HTTP answer by route and status; the standard
// process metrics, true of the serving process; agency_build_info; and promtool accepts it all.
TEST(MetricsCli, HttpServeCountsRefusalsAnswersAndTheProcess) {
    const fs::path dir =
        fs::temp_directory_path() / ("agency-metrics-http-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const double launched = seconds_since_epoch();
    HttpServe serve(dir, "--state-db :memory: --rate-limit 1/minute --rate-limit-burst 1");
    ASSERT_GT(serve.port, 0) << serve.stderr_text();
    httplib::Client client("127.0.0.1", serve.port);
    const httplib::Headers headers{{"MCP-Protocol-Version", "2026-07-28"},
                                   {"Mcp-Method", "tools/call"},
                                   {"Mcp-Name", "list_clients"},
                                   {"Accept", "application/json, text/event-stream"}};
    const std::string body = call(1, "list_clients", json::object()).dump();
    auto res = client.Post("/mcp", headers, body, "application/json");
    ASSERT_TRUE(res) << serve.stderr_text();
    EXPECT_EQ(res->status, 200) << res->body;
    res = client.Post("/mcp", headers, body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 429) << "one unit a minute, spent: " << res->body;
    EXPECT_EQ(client.Get("/healthz")->status, 200);
    EXPECT_EQ(client.Get("/no-such-route")->status, 404);

    using agency::testing::metric_value;
    const auto answers = [](const std::string& text, const char* method, const char* route,
                            const char* status) {
        return metric_value(text, "agency_mcp_http_responses_total",
                            {{"http_request_method", method},
                             {"http_route", route},
                             {"http_response_status_code", status}});
    };
    // An answer is counted once written, on its connection's thread: the client can hear an
    // answer before its count lands, so the scrape waits until every one has.
    std::string text;
    bool scraped_ok = true;
    (void)agency::testing::eventually(
        [&] {
            auto scraped = client.Get("/metrics");
            scraped_ok = scraped && scraped->status == 200;
            if (!scraped_ok) return true;  // the scrape failed: nothing to wait for
            text = scraped->body;
            return answers(text, "POST", "/mcp", "200") >= 1 &&
                   answers(text, "POST", "/mcp", "429") >= 1 &&
                   answers(text, "GET", "/healthz", "200") >= 1 &&
                   answers(text, "GET", "other", "404") >= 1;
        },
        2000ms, 10ms);
    ASSERT_TRUE(scraped_ok) << "GET /metrics did not answer 200";
    EXPECT_EQ(metric_value(text, "agency_mcp_tool_calls_total",
                           {{"gen_ai_tool_name", "list_clients"}, {"outcome", "rate_limited"}}),
              1);
    EXPECT_EQ(metric_value(text, "agency_mcp_rate_limit_refusals_total",
                           {{"mcp_method_name", "tools/call"}, {"target", "list_clients"}}),
              1);
    EXPECT_EQ(metric_value(text, "mcp_server_operation_duration_seconds_count",
                           {{"gen_ai_tool_name", "list_clients"}, {"error_type", "rate_limited"}}),
              1);
    EXPECT_EQ(answers(text, "POST", "/mcp", "200"), 1);
    EXPECT_EQ(answers(text, "POST", "/mcp", "429"), 1);
    EXPECT_EQ(answers(text, "GET", "/healthz", "200"), 1);
    EXPECT_EQ(answers(text, "GET", "other", "404"), 1);

    // The process metrics are the serving process's, read at the scrape.
    const double started = metric_value(text, "process_start_time_seconds", {});
    EXPECT_GE(started, launched - 2) << text.substr(0, 2000);
    EXPECT_LE(started, seconds_since_epoch() + 1);
    const double resident = metric_value(text, "process_resident_memory_bytes", {});
    EXPECT_GT(resident, 1 << 20) << "a running server holds more than 1 MiB";
    EXPECT_GE(metric_value(text, "process_virtual_memory_bytes", {}), resident);
    const double fds = metric_value(text, "process_open_fds", {});
    EXPECT_GE(fds, 4) << "stdin, stdout, stderr and the listener at least";
    EXPECT_LE(fds, metric_value(text, "process_max_fds", {}));
    EXPECT_NE(text.find("\nprocess_cpu_seconds_total "), std::string::npos);
    EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
    EXPECT_EQ(metric_value(text, "agency_build_info", {{"version", AGENCY_VERSION}}), 1);
    // Readiness and the gateway's last discovery, for dashboards and alerts
    // (deploy/prometheus-alerts.yml).
    EXPECT_EQ(metric_value(text, "agency_mcp_ready", {}), 1) << client.Get("/readyz")->body;
    const double discovered =
        metric_value(text, "agency_gateway_last_discovery_timestamp_seconds", {});
    EXPECT_GE(discovered, launched - 2);
    EXPECT_LE(discovered, seconds_since_epoch() + 1);

    std::ofstream(dir / "http-metrics.txt") << text;
    const auto lint = agency::testing::promtool_check(dir / "http-metrics.txt");
    EXPECT_EQ(lint.first, 0) << lint.second;
    EXPECT_EQ(lint.second, "");
    fs::remove_all(dir);
}

// A gateway that never answered: not ready, and no discovery time (0), as the alerts expect.
TEST(MetricsCli, AServerWhoseGatewayNeverAnsweredSaysSoInItsGauges) {
    const fs::path dir =
        fs::temp_directory_path() / ("agency-metrics-away-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    HttpServe serve(dir, "--state-db :memory: --gateway-url http://127.0.0.1:" +
                             std::to_string(free_port()) + "/api");
    ASSERT_GT(serve.port, 0) << serve.stderr_text();
    httplib::Client client("127.0.0.1", serve.port);
    const auto scraped = client.Get("/metrics");
    ASSERT_TRUE(scraped);
    using agency::testing::metric_value;
    EXPECT_EQ(metric_value(scraped->body, "agency_mcp_ready", {}), 0);
    EXPECT_EQ(client.Get("/readyz")->status, 503);
    EXPECT_EQ(metric_value(scraped->body, "agency_gateway_last_discovery_timestamp_seconds", {}), 0);
    fs::remove_all(dir);
}
