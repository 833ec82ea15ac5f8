// What outlives a stdio session: a task it started keeps running after the input ends and
// serve_stdio returns, and its status notifications must not write through the finished
// session (found by the stdio_dispatch fuzz target: a write through a writer on serve_stdio's
// stack, after it returned).
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/metrics.hpp"
#include "server/mcp_server.hpp"
#include "tests/metrics_text.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
#include "tests/support/wait.hpp"
#include "transport/stdio_transport.hpp"

namespace {

using namespace agency::testing::core_names;
using namespace std::chrono_literals;

std::string line(const json& message) { return message.dump() + "\n"; }

// The tasks whose work runs on this process now (agency_mcp_open{what="tasks"}): a task's work
// leaves it only once it has ended, after its last status change was published.
double tasks_running() {
    return agency::testing::metric_value(agency::base::metrics::render(), "agency_mcp_open",
                                         {{"what", "tasks"}});
}

TEST(StdioLifetime, TaskReportsAfterTheSessionEndedAreDropped) {
    agency::testing::Gate release;
    std::atomic<bool> started{false};
    std::atomic<bool> finished{false};
    ServerOptions options;
    options.state_secret = "stdio-lifetime";
    Server server(options);
    ToolDef slow;
    slow.name = "slow";
    slow.description = "Reports progress after it is released.";
    slow.input_schema = {{"type", "object"}};
    slow.task_support = TaskSupport::optional;
    slow.handler = [&](const json&, RequestContext& ctx) {
        started = true;
        release.wait();
        ctx.progress(1, 2, "half way");
        finished = true;
        return ToolResult::text("done");
    };
    server.add_tool(std::move(slow));

    int in[2], out[2];
    ASSERT_EQ(::pipe(in), 0);
    ASSERT_EQ(::pipe(out), 0);
    const std::string input =
        line({{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", {{"tasks", json::object()}}},
                {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}) +
        line({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}) +
        line({{"jsonrpc", "2.0"},
              {"id", 2},
              {"method", "tools/call"},
              {"params", {{"name", "slow"}, {"arguments", json::object()}, {"task", {{"ttl", 60000}}}}}});
    ASSERT_EQ(::write(in[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
    ::close(in[1]);

    agency::mcp::StdioOptions stdio;
    stdio.drain_timeout = 200ms;
    EXPECT_EQ(agency::mcp::serve_stdio(server, stdio, in[0], out[1]), 0);
    ::close(in[0]);

    // What the session wrote: the initialize answer and the task's creation.
    ASSERT_EQ(::fcntl(out[0], F_SETFL, O_NONBLOCK), 0);
    std::string written;
    char buf[65536];
    for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) written.append(buf, n);
    EXPECT_NE(written.find("\"id\":2"), std::string::npos) << written;

    // The task reports progress and finishes after serve_stdio returned: nothing more arrives.
    const bool entered = agency::testing::eventually([&] { return started.load(); }, 1000ms, 2ms);
    const double running = tasks_running();  // this task's work among them
    release.open();
    ASSERT_TRUE(entered) << "the task's work never started";
    (void)agency::testing::eventually([&] { return finished.load(); }, 1000ms, 2ms);
    ASSERT_TRUE(finished.load());
    // Its last status change is published after the result: wait until its work has ended.
    ASSERT_TRUE(agency::testing::eventually([&] { return tasks_running() < running; }, 5000ms))
        << "the task's work did not end";
    const ssize_t late = ::read(out[0], buf, sizeof buf);
    EXPECT_EQ(late, -1) << std::string(buf, late > 0 ? static_cast<std::size_t>(late) : 0);
    ::close(out[0]);
    ::close(out[1]);
}

}  // namespace
