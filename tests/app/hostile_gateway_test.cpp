// A hostile or broken gateway (issue 30): the real `agency-mcp serve --http` against the real
// `agency-mcp sample-gateway` in its hostile modes (huge, endless, dripping, redirect,
// random_status). Each answer ends the call with a clear error within the call's budget, the
// server keeps serving, and its memory comes back. Below them, the gateway client against
// answers httplib itself would buffer without end (headers without end, a compressed bomb)
// and an action whose answer is too large.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/loopback_server.hpp"
#include "tests/support/free_port.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/sanitized.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/text.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kModernVersion = "2026-07-28";
constexpr long kRssBoundKib = 100 * 1024;  // 100 MiB

using agency::testing::slurp;

// The binary under test: this tree's, or AGENCY_HOSTILE_BINARY's (how the tests were shown
// to fail on a build without the bounds; docs/security.md).
std::string binary() {
    const char* other = std::getenv("AGENCY_HOSTILE_BINARY");
    return other != nullptr && *other != '\0' ? other : AGENCY_BINARY;
}

using agency::testing::free_port;

// A child running `agency-mcp ARGS` (stdout and stderr to files), killed at the end.
class Child {
public:
    Child(const fs::path& dir, const std::string& name, const std::string& args)
        : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
        const std::string command =
            "exec env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_FILE -u "
            "AGENCY_API_KEY '" +
            binary() + "' " + args + " < /dev/null > '" + out_.string() +
            "' 2> '" + err_.string() + "'";
        pid_ = ::fork();
        if (pid_ == 0) {
            ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    ~Child() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    // The first match of `pattern`'s group 1 in the file, waiting up to 15 s for it.
    std::string wait_for(const std::regex& pattern, bool in_stdout) const {
        std::string match;
        bool found = false;
        (void)agency::testing::eventually(
            [&] {
                std::smatch m;
                const std::string text = slurp(in_stdout ? out_ : err_);
                if (std::regex_search(text, m, pattern)) {
                    match = m[1].str();
                    found = true;
                }
                return found || !alive();
            },
            15000ms, 50ms);
        if (found) return match;
        ADD_FAILURE() << "no match; stderr: " << slurp(err_);
        return {};
    }
    bool alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0 && !exited(); }
    bool exited() const {
        int status = 0;
        return ::waitpid(pid_, &status, WNOHANG) == pid_;
    }
    // Resident memory, from /proc/<pid>/status (KiB; -1 when it cannot be read).
    long rss_kib() const {
        std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
        std::string line;
        while (std::getline(status, line))
            if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
        return -1;
    }
    std::string stderr_text() const { return slurp(err_); }

private:
    fs::path out_, err_;
    pid_t pid_ = -1;
};

// What one tools/call came back with.
struct Called {
    json result;       // the JSON-RPC result (null when there was none)
    std::string text;  // its first text block
    Clock::duration took{};
    int http_status = 0;
};

// The sample gateway and two tool servers over it: `small` with a 1 MiB response limit and
// a 2 s call budget (the bounds shown fast), `plain` with the defaults (16 MiB).
class HostileGateway : public ::testing::Test {
protected:
    static inline fs::path dir;
    static inline std::unique_ptr<Child> gateway, small, plain;
    static inline int gateway_port = 0, small_port = 0, plain_port = 0;

    static void SetUpTestSuite() {
        dir = fs::temp_directory_path() / ("agency-hostile-" + agency::crypto::random_hex(6));
        fs::create_directories(dir);
        gateway_port = free_port();
        gateway = std::make_unique<Child>(
            dir, "gateway", "sample-gateway --listen 127.0.0.1:" + std::to_string(gateway_port));
        const std::string url = gateway->wait_for(std::regex(R"((http://\S+/api))"), true);
        const std::regex mcp(R"(MCP over Streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp)");
        const std::string common =
            "serve --http --listen 127.0.0.1:0 --state-db :memory: "
            "--rate-limit off --gateway-url " +
            url;
        small = std::make_unique<Child>(
            dir, "small", common + " --call-timeout 2 --gateway-max-response-bytes 1048576");
        plain = std::make_unique<Child>(dir, "plain", common);
        small_port = std::stoi("0" + small->wait_for(mcp, false));
        plain_port = std::stoi("0" + plain->wait_for(mcp, false));
    }
    static void TearDownTestSuite() {
        small.reset();
        plain.reset();
        gateway.reset();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    void SetUp() override {
        ASSERT_GT(small_port, 0);
        ASSERT_GT(plain_port, 0);
        clear_faults();
    }
    void TearDown() override { clear_faults(); }

    static void add_fault(const json& fault) {
        httplib::Client control("127.0.0.1", gateway_port);
        const auto res = control.Post("/_control/faults", fault.dump(), "application/json");
        ASSERT_TRUE(res);
        ASSERT_EQ(res->status, 200) << res->body;
    }
    static void clear_faults() {
        httplib::Client control("127.0.0.1", gateway_port);
        control.Delete("/_control/faults");
    }

    static Called call(int port, const std::string& tool, const json& args) {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(60, 0);  // an unbounded drip on a build without the fix
        const httplib::Headers headers{{"MCP-Protocol-Version", kModernVersion},
                                       {"Mcp-Method", "tools/call"},
                                       {"Mcp-Name", tool},
                                       {"Accept", "application/json, text/event-stream"}};
        const json body{{"jsonrpc", "2.0"},
                        {"id", 7},
                        {"method", "tools/call"},
                        {"params",
                         {{"name", tool},
                          {"arguments", args},
                          {"_meta",
                           {{"io.modelcontextprotocol/protocolVersion", kModernVersion},
                            {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}};
        Called out;
        const auto started = Clock::now();
        const auto res = client.Post("/mcp", headers, body.dump(), "application/json");
        out.took = Clock::now() - started;
        if (!res) return out;
        out.http_status = res->status;
        // A slow call is streamed (SSE): its answer is the data line that carries the id.
        json answer = json::parse(res->body, nullptr, false);
        if (answer.is_discarded()) {
            std::istringstream lines(res->body);
            for (std::string line; std::getline(lines, line);) {
                if (line.rfind("data:", 0) != 0) continue;
                json event = json::parse(line.substr(5), nullptr, false);
                if (event.is_object() && event.value("id", 0) == 7) answer = event;
            }
        }
        if (!answer.is_object() || !answer.contains("result")) return out;
        out.result = answer["result"];
        for (const auto& block : out.result.value("content", json::array()))
            if (block.value("type", "") == "text") {
                out.text = block.value("text", "");
                break;
            }
        return out;
    }
    static Called keywords(int port) {
        return call(port, "list_keywords", {{"client_id", "demo-law"}, {"limit", 5}});
    }

    // The server answers a normal call after the hostile one, and its memory came back.
    static void expect_recovered(int port, const Child& server) {
        const Called again = keywords(port);
        ASSERT_TRUE(again.result.is_object()) << server.stderr_text();
        EXPECT_FALSE(again.result.value("isError", false)) << again.text;
        const long rss = server.rss_kib();
        EXPECT_GT(rss, 0);
        ::testing::Test::RecordProperty(port == plain_port ? "rss_kib_16mib" : "rss_kib_1mib",
                                        static_cast<int>(rss));
        if (!AGENCY_SANITIZED_BUILD) {
            EXPECT_LT(rss, kRssBoundKib) << "VmRSS after the hostile answer: " << rss << " KiB";
        }
    }
};

void expect_error_naming(const Called& c, const std::string& words) {
    ASSERT_TRUE(c.result.is_object()) << "no tools/call result (HTTP " << c.http_status << ")";
    EXPECT_TRUE(c.result.value("isError", false)) << c.text;
    EXPECT_NE(c.text.find(words), std::string::npos) << c.text;
}

}  // namespace

// A 1 GiB answer with its Content-Length: refused from its head, none of it read.
TEST_F(HostileGateway, AGibibyteAnswerIsRefusedBeforeItsBodyIsRead) {
    add_fault({{"target", "keywords"}, {"mode", "huge"}, {"bytes", 1ull << 30}});
    const Called c = keywords(plain_port);
    expect_error_naming(c,
                        "the gateway announced an answer of 1 GiB, over the 16 MiB limit on "
                        "a response (--gateway-max-response-bytes); none of it was read");
    EXPECT_LT(c.took, 5s);
    expect_recovered(plain_port, *plain);

    add_fault({{"target", "keywords"}, {"mode", "huge"}, {"bytes", 3u << 20}});
    expect_error_naming(keywords(small_port), "an answer of 3 MiB, over the 1 MiB limit");
    expect_recovered(small_port, *small);
}

// A chunked answer that never ends: read up to the limit, then the connection is closed.
TEST_F(HostileGateway, AnEndlessAnswerEndsAtTheLimitAndMemoryReturns) {
    add_fault({{"target", "keywords"}, {"mode", "endless"}});
    Called c = keywords(plain_port);
    expect_error_naming(c,
                        "the gateway's answer passed the 16 MiB limit on a response "
                        "(--gateway-max-response-bytes); nothing more was read");
    EXPECT_LT(c.took, 10s);
    EXPECT_NE(c.text.find("read of keywords"), std::string::npos) << c.text;
    expect_recovered(plain_port, *plain);

    add_fault({{"target", "keywords"}, {"mode", "endless"}});
    c = keywords(small_port);
    expect_error_naming(c, "passed the 1 MiB limit on a response");
    expect_recovered(small_port, *small);
    // Not retried as if transient: the gateway saw one request for it.
    httplib::Client control("127.0.0.1", gateway_port);
    EXPECT_EQ(json::parse(control.Get("/_control/stats")->body)["faults_by_mode"]["endless"], 2);
}

// A byte every 40 ms: the head alone would take seconds; the call ends at its 2 s budget.
TEST_F(HostileGateway, ADrippingHeadEndsAtTheCallsBudget) {
    add_fault({{"target", "keywords"}, {"mode", "dripping"}, {"delay_ms", 40}});
    const Called c = keywords(small_port);
    expect_error_naming(c, "the call's budget of 2 s");
    EXPECT_LT(c.took, 4s);
    expect_recovered(small_port, *small);
}

// A byte every 5 ms: the head is in after a fraction of a second, the body would take a
// minute; the call still ends at its budget.
TEST_F(HostileGateway, ADrippingBodyEndsAtTheCallsBudget) {
    add_fault({{"target", "keywords"}, {"mode", "dripping"}, {"delay_ms", 5}});
    const Called c = keywords(small_port);
    expect_error_naming(c, "the call's budget of 2 s");
    EXPECT_LT(c.took, 4s);
    expect_recovered(small_port, *small);
}

// A gateway that ignores offset (every page the first, more always to come, issue 33): each
// scanning tool stops at the second page with an error that says so, within its budget, having
// asked for a handful of pages, not thousands; and nothing is read after the answer.
TEST_F(HostileGateway, AGatewayThatIgnoresOffsetEndsEveryScan) {
    httplib::Client control("127.0.0.1", gateway_port);
    const auto gets = [&] { return json::parse(control.Get("/_control/stats")->body)["gets"].get<long>(); };
    const std::vector<std::pair<std::string, json>> scans = {
        // A keyword no row has: the walk must go past the first page.
        {"list_rankings", {{"client_id", "demo-law"}, {"keyword", "no such keyword"}}},
        {"latest_rankings", {{"client_id", "demo-law"}, {"within_days", 3650}}},
        {"ranking_changes", {{"client_id", "demo-law"}, {"from", "2000-01-01"}, {"to", "2100-01-01"}}}};
    for (const auto& [tool, args] : scans) {
        add_fault({{"target", "keywords"}, {"mode", "ignores_offset"}, {"percent", 100},
                   {"count", 0}, {"size", 5000000}});
        const long before = gets();
        const Called c = call(small_port, tool, args);
        expect_error_naming(c, "it ignores offset");
        EXPECT_LT(c.took, 3s) << tool;
        // A page read ahead may still land just after the answer; then nothing more.
        std::this_thread::sleep_for(300ms);
        const long asked = gets() - before;
        EXPECT_LE(asked, 4) << tool << ": two pages, and two read ahead";
        std::this_thread::sleep_for(700ms);
        EXPECT_EQ(gets() - before, asked) << tool << ": nothing more read after the answer";
        clear_faults();
        expect_recovered(small_port, *small);
    }
}

// A 302 to another host is an error, and the other host never hears from the server.
TEST_F(HostileGateway, ARedirectIsNotFollowed) {
    agency::testing::LoopbackServer<> elsewhere;
    std::atomic<int> hits{0};
    elsewhere.http.Get(".*", [&](const httplib::Request&, httplib::Response& res) {
        ++hits;
        res.set_content(
            R"({"data":[],"pagination":{"total":0,"limit":5,"offset":0,"has_more":false}})",
            "application/json");
    });
    elsewhere.start();
    add_fault({{"target", "keywords"}, {"mode", "redirect"}, {"redirect_port", elsewhere.port}});
    const Called c = keywords(small_port);
    expect_error_naming(c, "HTTP 302");
    EXPECT_EQ(hits.load(), 0);
    expect_recovered(small_port, *small);
}

// Statuses from 100 to 999: every call ends (an answer or an error), and /metrics keeps to
// the statuses HTTP defines plus "other".
TEST_F(HostileGateway, RandomStatusesLeaveMetricsBounded) {
    add_fault({{"target", "keywords"}, {"mode", "random_status"}, {"count", 0}, {"percent", 100}});
    for (int i = 0; i < 8; ++i) {
        const Called c = keywords(small_port);
        ASSERT_TRUE(c.result.is_object()) << small->stderr_text();
        EXPECT_LT(c.took, 4s);
    }
    clear_faults();
    expect_recovered(small_port, *small);
    httplib::Client metrics("127.0.0.1", small_port);
    const auto res = metrics.Get("/metrics");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_LT(res->body.size(), 256u * 1024);
    std::set<std::string> statuses;
    const std::regex label(
        R"re(agency_gateway_requests_total\{[^}]*http_response_status_code="([^"]*)")re");
    for (std::sregex_iterator it(res->body.begin(), res->body.end(), label), end; it != end; ++it)
        statuses.insert((*it)[1]);
    EXPECT_GT(statuses.size(), 1u);
    for (const auto& s : statuses) {
        const bool ok = s == "other" || s == "0" || (s.size() == 3 && s[0] >= '1' && s[0] <= '5');
        EXPECT_TRUE(ok) << "status label " << s;
    }
}
