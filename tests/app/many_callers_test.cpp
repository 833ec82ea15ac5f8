// Many callers, one server (issue 30, items 1 and 2): the real `agency-mcp serve --http` with
// keys, over `agency-mcp sample-gateway` holding every seo_audit (a slow fault), so each audit
// task keeps its thread. One key spreading tasks or sessions over many legacy sessions must not
// end the process, make another key's calls fail, or keep another caller from initializing;
// with the thread limit low (ulimit -u, then filled by other processes of the same uid), the
// server refuses tasks cleanly instead of aborting.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "tests/run_binary.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/text.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

const std::string kClean =
    "env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_LEVEL -u AGENCY_LOG_FILE "
    "-u AGENCY_MAX_TASKS -u AGENCY_MAX_TASKS_PER_CALLER -u AGENCY_HTTP_MAX_SESSIONS "
    "-u AGENCY_HTTP_MAX_SESSIONS_PER_CALLER -u AGENCY_RATE_LIMIT ";

using agency::testing::slurp;

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

pid_t spawn(const std::string& command) {
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    return pid;
}

bool alive(pid_t pid) {
    int status = 0;
    return pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
}

void end(pid_t& pid) {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
}

// Threads of every process of the real uid `uid` (what RLIMIT_NPROC counts).
long threads_of_uid(uid_t uid) {
    long n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(entry.path() / "status");
        std::string line;
        long threads = 0;
        bool mine = false;
        while (std::getline(in, line)) {
            if (line.starts_with("Uid:")) mine = std::stoul(line.substr(4)) == uid;
            if (line.starts_with("Threads:")) threads = std::stol(line.substr(8));
        }
        if (mine) n += threads;
    }
    return n;
}

struct Reply {
    int status = 0;
    json body;                // the JSON-RPC answer (the last event of a stream)
    std::string session;      // Mcp-Session-Id, when given
    bool ok() const { return status == 200 && body.contains("result"); }
    std::string error() const {
        return body.contains("error") ? body["error"].value("message", "") : std::string();
    }
};

class ManyCallers : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-many-callers-" + agency::crypto::random_hex(6));
    fs::path keys = dir / "keys.json";
    pid_t gateway_pid = -1, server_pid = -1;
    std::string gateway_url;
    int port = 0;
    std::string key_a, key_b, key_read;

    void SetUp() override {
        fs::create_directories(dir);
        key_a = add_key("alpha", "read,write");
        key_b = add_key("bravo", "read,write");
        key_read = add_key("reader", "read");
        // Every seo_audit waits a minute at the gateway: an audit task holds its thread.
        const fs::path out = dir / "gateway.out";
        gateway_pid = spawn("exec " + kClean + "'" + std::string(AGENCY_BINARY) +
                            "' sample-gateway --listen 127.0.0.1:0 --fault seo_audit:slow:100:60000"
                            " < /dev/null > '" + out.string() + "' 2> '" + (dir / "gateway.err").string() + "'");
        (void)agency::testing::eventually(
            [&] {
                gateway_url = trimmed(slurp(out));
                return !gateway_url.empty();
            },
            5000ms, 25ms);
        ASSERT_FALSE(gateway_url.empty()) << slurp(dir / "gateway.err");
    }
    void TearDown() override {
        end(server_pid);
        end(gateway_pid);
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    std::string add_key(const std::string& name, const std::string& scopes) {
        const auto r = agency::testing::run_command(
            dir, kClean + "AGENCY_KEYS_FILE='" + keys.string() + "' '" + AGENCY_BINARY +
                     "' keys add --name " + name + " --scopes " + scopes);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return trimmed(r.out);
    }

    // `serve --http` over the gateway, run by `wrap` (a command that execs its arguments, e.g.
    // setpriv). Sets port, or fails the test.
    void start_server(const std::string& args, const std::string& wrap = "", bool keyed = true) {
        const fs::path err = dir / "server.err";
        const std::string serve = kClean + "'" + std::string(AGENCY_BINARY) +
                                  "' serve --http --listen 127.0.0.1:0 --state-db :memory: "
                                  "--rate-limit off " +
                                  (keyed ? "--keys-file '" + keys.string() + "' " : "") +
                                  "--gateway-url " + gateway_url + " " + args;
        server_pid = spawn("exec " + wrap + serve + " < /dev/null > /dev/null 2> '" +
                           err.string() + "'");
        const std::regex url(R"(MCP over Streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp)");
        (void)agency::testing::eventually(
            [&] {
                if (!alive(server_pid)) return true;
                std::smatch m;
                const std::string text = slurp(err);
                if (std::regex_search(text, m, url)) port = std::stoi(m[1]);
                return port != 0;
            },
            10000ms, 25ms);
        ASSERT_NE(port, 0) << "the server did not start: " << slurp(err);
    }

    Reply post(const std::string& key, const std::string& session, const json& message) {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(20s);
        httplib::Headers headers{{"Accept", "application/json, text/event-stream"},
                                 {"MCP-Protocol-Version", "2025-11-25"},
                                 {"X-API-Key", key}};
        if (!session.empty()) headers.emplace("Mcp-Session-Id", session);
        auto res = client.Post("/mcp", headers, message.dump(), "application/json");
        Reply r;
        if (!res) return r;
        r.status = res->status;
        r.session = res->get_header_value("Mcp-Session-Id");
        std::string text = res->body;
        if (res->get_header_value("Content-Type").starts_with("text/event-stream")) {
            const auto at = text.rfind("data: ");
            text = at == std::string::npos ? "" : text.substr(at + 6);
        }
        r.body = json::parse(text, nullptr, false);
        return r;
    }

    Reply initialize(const std::string& key) {
        Reply r = post(key, "", {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                                 {"params", {{"protocolVersion", "2025-11-25"},
                                             {"capabilities", json::object()},
                                             {"clientInfo", {{"name", "many"}, {"version", "1"}}}}}});
        if (r.ok()) post(key, r.session, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
        return r;
    }

    Reply call(const std::string& key, const std::string& session, const std::string& tool,
               const json& arguments, bool task = false) {
        json params = {{"name", tool}, {"arguments", arguments}};
        if (task) params["task"] = {{"ttl", 600000}};
        return post(key, session,
                    {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"}, {"params", params}});
    }

    Reply audit_task(const std::string& key, const std::string& session, int n) {
        return call(key, session, "run_seo_audit",
                    {{"client_id", "demo-dental"},
                     {"url", "https://www.brightsmile.example/p" + std::to_string(n)}},
                    true);
    }

    static bool task_started(const Reply& r) {
        return r.ok() && r.body["result"].contains("task");
    }

    // Key A starts `per_session` audit tasks in each of `sessions` sessions; how many started.
    // Every refusal must be a clean JSON-RPC error saying why (never -32603 or an HTTP 500).
    int spread_tasks(const std::string& key, int sessions, int per_session) {
        int started = 0;
        for (int s = 0; s < sessions; ++s) {
            const Reply init = initialize(key);
            EXPECT_TRUE(init.ok()) << init.status << " " << init.body.dump();
            for (int i = 0; i < per_session; ++i) {
                const Reply r = audit_task(key, init.session, s * 1000 + i);
                if (task_started(r)) {
                    ++started;
                    continue;
                }
                EXPECT_EQ(r.status, 200) << r.body.dump();
                if (!r.body.is_object() || !r.body["error"].is_object()) {
                    ADD_FAILURE() << "no JSON-RPC error: " << r.status << " " << r.body.dump();
                    continue;
                }
                EXPECT_EQ(r.body["error"].value("code", 0), -32600) << r.body.dump();
                EXPECT_NE(r.error().find("task"), std::string::npos) << r.body.dump();
            }
        }
        return started;
    }

    // Key B, while A holds what it could: initialize, a plain call and a few tasks succeed.
    void expect_b_served(int tasks) {
        const Reply init = initialize(key_b);
        ASSERT_TRUE(init.ok()) << init.status << " " << init.body.dump();
        const Reply listed = call(key_b, init.session, "list_clients", json::object());
        ASSERT_TRUE(listed.ok()) << listed.status << " " << listed.body.dump();
        EXPECT_FALSE(listed.body["result"].value("isError", false)) << listed.body.dump();
        for (int i = 0; i < tasks; ++i) {
            const Reply r = audit_task(key_b, init.session, 90000 + i);
            EXPECT_TRUE(task_started(r)) << r.status << " " << r.body.dump();
        }
    }
};

// Item 1: a key's tasks were bounded (32) across its sessions, but nothing bounded them all:
// at the global bound the caller holding the most gives way (3/4 of it), and B still starts
// its few. (Before, --max-tasks did not exist: the server does not start.)
TEST_F(ManyCallers, FullServerRefusesTheCallerHoldingTheMost) {
    start_server("--max-tasks 40 --max-tasks-per-caller 64");
    ASSERT_FALSE(HasFatalFailure());
    const int started = spread_tasks(key_a, 4, 20);
    EXPECT_EQ(started, 30) << "key A's tasks over 4 sessions: three quarters of 40";
    expect_b_served(3);
    EXPECT_TRUE(alive(server_pid));
}

// Item 1: without keys (loopback), the one caller's tasks were bounded per session, 32 in each
// (before: all 3 x 20 started).
TEST_F(ManyCallers, CallerWithoutKeyIsBoundedAcrossSessions) {
    start_server("", "", false);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(spread_tasks("", 3, 20), 32);
    EXPECT_TRUE(alive(server_pid));
}

// Item 1 under a low thread limit: the server counts its threads' room (RLIMIT_NPROC) into
// the task bound, the caller holding the most is refused first, and when creating a thread
// fails anyway (processes of its uid fill the limit) the task is refused cleanly
// (before: -32603 for every caller, the refused task left "working", and in some runs the
// process aborted).
TEST_F(ManyCallers, ThreadLimitRefusesTasksCleanly) {
    // RLIMIT_NPROC counts every thread of the user and does not bind root (CAP_SYS_ADMIN): as
    // root the server runs as a uid of its own, otherwise the limit leaves room for ours.
    const bool root = geteuid() == 0;
    const uid_t uid = root ? 61000 + static_cast<uid_t>(getpid() % 4000) : getuid();
    std::string as_uid;
    long limit = 38;  // under what 32 tasks and the server's own threads take
    if (root) {
        ASSERT_EQ(threads_of_uid(uid), 0) << "uid " << uid << " is in use";
        ASSERT_EQ(chown(dir.c_str(), uid, uid), 0);
        ASSERT_EQ(chown(keys.c_str(), uid, uid), 0);
        as_uid = "setpriv --reuid=" + std::to_string(uid) + " --regid=" + std::to_string(uid) +
                 " --clear-groups ";
    } else {
        limit += threads_of_uid(uid);
    }
    start_server("", as_uid + "bash -c 'ulimit -S -u " + std::to_string(limit) +
                         " && exec \"$0\" \"$@\"' ");
    ASSERT_FALSE(HasFatalFailure());
    const int started = spread_tasks(key_a, 3, 30);
    EXPECT_GT(started, 0);
    EXPECT_LT(started, 32) << "the thread limit lowers the task bound below the per-caller one";
    expect_b_served(1);
    ASSERT_TRUE(alive(server_pid));
    if (!root) GTEST_SKIP() << "filling the thread limit would take this user's other threads";

    // No room for one more thread at all (processes of the server's uid fill the limit): the
    // task is refused, nothing aborts, B's plain calls are answered by the threads there are.
    const long fill = limit - threads_of_uid(uid) + 8;
    pid_t filler = spawn("exec setsid " + as_uid + "bash -c 'for i in $(seq " +
                         std::to_string(fill) + "); do sleep 600 & done; wait' 2> /dev/null");
    (void)agency::testing::eventually([&] { return threads_of_uid(uid) >= limit; }, 4000ms, 10ms);
    ASSERT_GE(threads_of_uid(uid), limit);
    const Reply init = initialize(key_b);
    ASSERT_TRUE(init.ok()) << init.status << " " << init.body.dump();
    const Reply refused = audit_task(key_b, init.session, 99999);
    EXPECT_FALSE(task_started(refused)) << refused.body.dump();
    EXPECT_EQ(refused.status, 200);
    ASSERT_TRUE(refused.body.is_object() && refused.body["error"].is_object()) << refused.body.dump();
    EXPECT_EQ(refused.body["error"].value("code", 0), -32600) << refused.body.dump();
    EXPECT_NE(refused.error().find("server busy: no thread could be started"), std::string::npos)
        << refused.body.dump();
    const Reply listed = call(key_b, init.session, "list_clients", json::object());
    EXPECT_TRUE(listed.ok()) << listed.status << " " << listed.body.dump();
    kill(-filler, SIGKILL);  // setsid: the filler leads a group of its own
    int status = 0;
    waitpid(filler, &status, 0);
    (void)agency::testing::eventually([&] { return threads_of_uid(uid) < limit - 4; }, 4000ms,
                                      10ms);
    // The refused task's record did not stay running; a new task starts again.
    const Reply tasks = post(key_b, init.session,
                             {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tasks/list"}});
    ASSERT_TRUE(tasks.ok()) << tasks.body.dump();
    int working = 0;
    for (const auto& t : tasks.body["result"]["tasks"]) working += t["status"] == "working";
    EXPECT_EQ(working, 1) << tasks.body.dump();
    const Reply again = audit_task(key_b, init.session, 99998);
    EXPECT_TRUE(task_started(again)) << again.body.dump();
    EXPECT_TRUE(alive(server_pid));
}

// Item 2: a read-only key opening sessions until the server is full gives up its least
// recently used one to a caller holding fewer (before: B's initialize got 503).
TEST_F(ManyCallers, ReadOnlyKeyCannotLockOthersOutOfSessions) {
    start_server("--http-max-sessions 40");
    ASSERT_FALSE(HasFatalFailure());
    std::vector<std::string> mine;
    auto open_reader_sessions = [&](int n) {
        for (int i = 0; i < n; ++i) {
            const Reply r = initialize(key_read);
            ASSERT_TRUE(r.ok()) << mine.size() << ": " << r.status << " " << r.body.dump();
            mine.push_back(r.session);
        }
    };
    open_reader_sessions(40);  // every session the server holds
    const Reply b = initialize(key_b);
    ASSERT_TRUE(b.ok()) << b.status << " " << b.body.dump();
    open_reader_sessions(20);  // the reader goes on: it gives up its own, never B's
    const json ping = {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "ping"}};
    const Reply listed = call(key_b, b.session, "list_clients", json::object());
    EXPECT_TRUE(listed.ok()) << listed.body.dump();
    EXPECT_TRUE(post(key_read, mine.back(), ping).ok());
    EXPECT_EQ(post(key_read, mine.front(), ping).status, 404);
    EXPECT_TRUE(alive(server_pid));
}

// A caller at its own share of the sessions loses its own least recently used one; the
// others' stay.
TEST_F(ManyCallers, SessionsPerCallerCloseTheCallersOwnOldest) {
    start_server("--http-max-sessions-per-caller 5");
    ASSERT_FALSE(HasFatalFailure());
    const Reply b = initialize(key_b);
    ASSERT_TRUE(b.ok());
    std::vector<std::string> mine;
    for (int i = 0; i < 8; ++i) mine.push_back(initialize(key_read).session);
    const json ping = {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "ping"}};
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(post(key_read, mine[i], ping).status, i < 3 ? 404 : 200) << i;
    EXPECT_TRUE(post(key_b, b.session, ping).ok());
}

}  // namespace
