// A hostile gateway's rows and lists against the real binary (issue 30, item 3): `agency-mcp
// serve --http` on `agency-mcp sample-gateway` whose keyword page holds one row nested 10^6
// deep, whose backlink page holds one row of 10^6 members, and whose discovery lists 100,000
// more resources. Each call ends with a clear `upstream` error naming the limit, or an answer
// cut to its byte budget that says so; tools/list stays small; and the server's memory
// comes back under 100 MiB.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/support/free_port.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/sanitized.hpp"
#include "tests/support/wait.hpp"

namespace hostile_rows_test {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kModern = "2026-07-28";
constexpr const char* kClient = "demo-plumbing";

using agency::testing::free_port;

// A child process running `command` (through sh), stderr into `log`; killed at the end.
class Child {
public:
    Child(const std::string& command, const fs::path& log) {
        pid_ = ::fork();
        if (pid_ == 0) {
            const std::string line = "exec " + command + " 2>'" + log.string() + "' >/dev/null";
            ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    ~Child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    pid_t pid() const { return pid_; }
    bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

private:
    pid_t pid_ = -1;
};

// The child's resident memory in KiB (VmRSS), 0 when unknown.
long rss_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0;
}

// Waits (up to 20 s) until something answers HTTP on `port`.
bool wait_for_http(int port, const Child& child, const char* path) {
    httplib::Client probe("127.0.0.1", port);
    probe.set_connection_timeout(1s);
    bool answered = false;
    (void)agency::testing::eventually(
        [&] {
            answered = static_cast<bool>(probe.Get(path));
            return answered || !child.running();
        },
        20000ms, 50ms);
    return answered;
}

// One modern (2026-07-28) request to the server's /mcp; the JSON-RPC answer (also when it
// came as a server-sent event), and its size on the wire.
json modern(int port, const std::string& method, json params, std::size_t* bytes = nullptr) {
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", kModern},
                       {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    httplib::Headers headers{{"MCP-Protocol-Version", kModern},
                             {"Mcp-Method", method},
                             {"Accept", "application/json, text/event-stream"}};
    if (params.contains("name")) headers.emplace("Mcp-Name", params["name"].get<std::string>());
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60s);
    const json request = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
    auto res = client.Post("/mcp", headers, request.dump(), "application/json");
    if (!res) return {{"transport_error", httplib::to_string(res.error())}};
    if (bytes) *bytes = res->body.size();
    std::string body = res->body;
    if (!body.starts_with("{")) {  // an event stream: the last data line is the answer
        const auto at = body.rfind("data: ");
        body = at == std::string::npos ? "" : body.substr(at + 6);
    }
    return json::parse(body, nullptr, false);
}

struct Servers {
    fs::path dir = fs::temp_directory_path() / ("hostile-rows-" + std::to_string(::getpid()));
    int gateway_port = free_port();
    int server_port = free_port();
    std::unique_ptr<Child> gateway, server;

    Servers() {
        fs::create_directories(dir);
        const std::string bin = std::string("'") + AGENCY_BINARY + "'";
        gateway = std::make_unique<Child>(
            bin + " sample-gateway --listen 127.0.0.1:" + std::to_string(gateway_port) +
                " --fault keywords:deep:100:1000000 --fault backlinks:wide:100:1000000"
                " --fault :many_resources:100:100000",
            dir / "gateway.log");
        if (!wait_for_http(gateway_port, *gateway, "/api")) return;
        // HOSTILE_ROWS_SERVER: another build's agency-mcp as the server under test (to show
        // an older one fails these checks); the gateway is always this build's.
        const char* other = std::getenv("HOSTILE_ROWS_SERVER");
        const std::string server_bin = other ? std::string("'") + other + "'" : bin;
        server = std::make_unique<Child>(
            "env -u AGENCY_API_KEY AGENCY_GATEWAY_URL=http://127.0.0.1:" +
                std::to_string(gateway_port) + "/api AGENCY_STATE_DB='" +
                (dir / "state.db").string() + "' " + server_bin +
                " serve --http --listen 127.0.0.1:" +
                std::to_string(server_port),
            dir / "server.log");
        wait_for_http(server_port, *server, "/mcp");
    }
    ~Servers() {
        server.reset();
        gateway.reset();
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
    std::string server_log() const {
        std::ifstream in(dir / "server.log");
        return {std::istreambuf_iterator<char>(in), {}};
    }
};

// A tool call's outcome: an upstream error naming a limit, or an answer within `max_bytes`
// that says it was cut.
// `bytes`: the answer's size on the wire, checked before anything is serialized again (a
// million-deep value would overflow the stack of a recursive dump).
void expect_error_or_cut(const json& answer, std::size_t bytes, std::size_t max_bytes,
                         const std::string& what) {
    // The structured answer and the text beside it, each within the budget, and the envelope.
    EXPECT_LE(bytes, 2 * max_bytes + 2048) << what << ": the answer exceeds its byte budget";
    if (bytes > 4 * max_bytes) return;
    ASSERT_TRUE(answer.contains("result")) << what << ": " << answer.dump().substr(0, 600);
    const json& result = answer["result"];
    if (result.value("isError", false)) {
        const std::string text = result["content"][0].value("text", "");
        EXPECT_NE(text.find("upstream"), std::string::npos) << what << ": " << text;
        EXPECT_NE(text.find("limit"), std::string::npos) << what << ": " << text;
        return;
    }
    const json& structured = result["structuredContent"];
    EXPECT_LE(structured.dump().size(), max_bytes) << what;
    EXPECT_EQ(structured["truncated"], true) << what;
    EXPECT_NE(structured.value("note", "").find("cut"), std::string::npos) << what;
    // The text beside it is the compact rendering of the same answer: no bigger.
    for (const auto& block : result["content"])
        EXPECT_LE(block.value("text", "").size(), max_bytes) << what;
}

TEST(HostileRows, DeepWideAndManyResourcesStayBoundedOverHttp) {
    Servers s;
    ASSERT_TRUE(s.server && s.server->running()) << s.server_log();
    const pid_t pid = s.server->pid();

    // tools/list with 100,000 more resources: every page, all of it small.
    std::size_t list_bytes = 0;
    json cursor = nullptr;
    do {
        json params = json::object();
        if (!cursor.is_null()) params["cursor"] = cursor;
        std::size_t bytes = 0;
        const json page = modern(s.server_port, "tools/list", params, &bytes);
        ASSERT_TRUE(page.contains("result")) << page.dump().substr(0, 400);
        list_bytes += bytes;
        cursor = page["result"].value("nextCursor", json(nullptr));
    } while (!cursor.is_null());
    EXPECT_LE(list_bytes, 64u * 1024u) << "tools/list grew with the gateway's resource list";
    EXPECT_NE(s.server_log().find("resources past the first 200"), std::string::npos)
        << s.server_log().substr(0, 2000);

    // A row nested 10^6 deep: refused, naming the limit.
    std::size_t deep_bytes = 0;
    const json deep =
        modern(s.server_port, "tools/call",
               {{"name", "list_keywords"}, {"arguments", {{"client_id", kClient}}}}, &deep_bytes);
    expect_error_or_cut(deep, deep_bytes, 24'000, "deep");
    ASSERT_TRUE(deep.contains("result") && deep["result"].value("isError", false))
        << "a 10^6-deep row went out (" << deep_bytes << " bytes)";
    EXPECT_NE(deep.dump().find("64 levels"), std::string::npos) << deep.dump().substr(0, 600);

    // A row of 10^6 members: cut to the budget, with and without `fields`.
    for (const json& args :
         {json{{"client_id", kClient}, {"max_bytes", 5000}},
          json{{"client_id", kClient}, {"max_bytes", 20000}, {"fields", {"id", "f1", "f999999"}}},
          json{{"client_id", kClient}}}) {
        const std::size_t budget = args.value("max_bytes", 24'000);
        std::size_t bytes = 0;
        const json wide = modern(s.server_port, "tools/call",
                                 {{"name", "list_backlinks"}, {"arguments", args}}, &bytes);
        expect_error_or_cut(wide, bytes, budget, "wide " + args.dump());
    }

    // Memory given back once the calls are over (the parsers are sized for the pages seen).
    const long rss = rss_kib(pid);
    std::cout << "[ measure  ] tools/list " << list_bytes << " bytes; server RSS after: " << rss
              << " KiB\n";
    EXPECT_GT(rss, 0);
    // A sanitizer's binary keeps freed memory in quarantine: the bound is the shipped product's.
    if (!AGENCY_SANITIZED_BUILD) {
        EXPECT_LT(rss, 100 * 1024) << "RSS after the hostile reads";
    }
    EXPECT_TRUE(s.server->running());
}

}  // namespace hostile_rows_test
