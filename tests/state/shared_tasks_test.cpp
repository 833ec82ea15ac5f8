// MCP tasks across instances on one PostgreSQL store: any instance answers tasks/get and
// tasks/result, a cancel on one stops the work on another, and a task whose instance died is
// resumed by another once its lease runs out. The instances' lease keepers wait on one
// ManualClock, which their stores stamp leases with too: the tests step leases rather than
// spend them, and a keeper runs a round only when the test steps it.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "state/pg_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
#include "tests/support/keeper_steps.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/wait.hpp"

namespace {

using namespace agency::testing::core_names;
using namespace std::chrono_literals;

constexpr const char* kExt = "io.modelcontextprotocol/tasks";
constexpr std::int64_t kLeaseMs = 900;

struct Probe {
    std::atomic<int> runs{0};
    std::atomic<int> resumes{0};
    agency::testing::Gate release;
    std::atomic<bool> saw_stop{false};
};

// One instance: its own server and its own connection pool on the shared database.
struct Instance {
    std::shared_ptr<agency::state::PgStore> store;
    std::unique_ptr<Server> server;
    int id = 0;

    Instance(const std::string& url, const std::string& name, Probe& probe,
             const agency::testing::ManualClock& clock) {
        store = std::make_shared<agency::state::PgStore>(url);
        store->use_clock(clock);
        ServerOptions options;
        options.clock = &clock;
        options.task_store = store;
        options.task_poll_ms = 50;
        options.state_secret = "shared-tasks-secret-shared-tasks-secret";
        options.instance_id = name;
        options.task_lease_ms = kLeaseMs;
        server = std::make_unique<Server>(options);
        ToolDef wait;
        wait.name = "wait_job";
        wait.description = "Runs until released; saves a resume point.";
        wait.input_schema = {{"type", "object"}};
        wait.task_support = TaskSupport::optional;
        wait.handler = [&probe](const json&, RequestContext& ctx) {
            ++probe.runs;
            ctx.set_task_resume({{"step", 1}});
            if (!probe.release.wait(ctx.stop)) {
                probe.saw_stop = true;
                return ToolResult::text("stopped", true);
            }
            return ToolResult::text("done");
        };
        wait.resume_task = [&probe](const json& resume, const json&, RequestContext&) {
            ++probe.resumes;
            return ToolResult::text("resumed at step " + std::to_string(resume.value("step", 0)));
        };
        server->add_tool(std::move(wait));
        server->resume_tasks();
    }

    json modern(const std::string& method, json params) {
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities",
                            {{"extensions", {{kExt, json::object()}}}}}};
        Inbound in;
        in.era = agency::mcp::Era::modern;
        json message = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", method},
                        {"params", std::move(params)}};
        auto out = server->handle(message.dump(), in);
        return out ? json::parse(out->text) : json();
    }
    std::string status(const std::string& task_id) {
        return modern("tasks/get", {{"taskId", task_id}})["result"].value("status", "");
    }
};

// Polls `get` until it returns `want` or ~5 s pass; returns the last value.
std::string await(const std::function<std::string()>& get, const std::string& want) {
    std::string seen;
    (void)agency::testing::eventually(
        [&] {
            seen = get();
            return seen == want;
        },
        5000ms, 10ms);
    return seen;
}

class SharedTasks : public ::testing::Test {
protected:
    // Instances one and two, and a wait_job task started on one: its id ("" when none).
    std::string start_on_one() {
        one_ = std::make_unique<Instance>(url_, "i_one", probe_, clock_);
        two_ = std::make_unique<Instance>(url_, "i_two", probe_, clock_);
        json created =
            one_->modern("tools/call", {{"name", "wait_job"}, {"arguments", json::object()}});
        const std::string id = created["result"].value("taskId", "");
        EXPECT_FALSE(id.empty()) << created;
        return id;
    }
    std::string url_ = agency::testing::pg_fresh_database();
    Probe probe_;
    const agency::testing::ManualClock clock_{agency::testing::ManualClock::Sleeps::until_advanced};
    std::unique_ptr<Instance> one_, two_;  // after what they use: they go first
};

TEST_F(SharedTasks, AnyInstanceAnswersForATaskAnotherRuns) {
    const std::string id = start_on_one();
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(two_->status(id), "working") << "instance two reads the record instance one wrote";
    probe_.release.open();
    EXPECT_EQ(await([&] { return two_->status(id); }, "completed"), "completed");
    json got = two_->modern("tasks/get", {{"taskId", id}})["result"];
    EXPECT_EQ(got["result"]["content"][0]["text"], "done") << got;
    EXPECT_EQ(probe_.runs, 1) << "run once, by the instance that created it";
}

TEST_F(SharedTasks, ACancelOnOneInstanceStopsTheWorkOnAnother) {
    const std::string id = start_on_one();
    ASSERT_FALSE(id.empty());
    ASSERT_EQ(await([&] { return std::to_string(probe_.runs.load()); }, "1"), "1");
    // Both keepers asleep, and the clock never steps: no lease renewal runs from here on, so
    // only LISTEN/NOTIFY can carry the cancel to instance one.
    agency::testing::KeeperSteps(clock_, 2).settle();
    EXPECT_FALSE(two_->modern("tasks/cancel", {{"taskId", id}}).contains("error"));
    (void)agency::testing::eventually([&] { return probe_.saw_stop.load(); }, 5000ms, 10ms);
    EXPECT_TRUE(probe_.saw_stop) << "the work on instance one was stopped";
    EXPECT_EQ(clock_.waits_begun(), 2) << "a keeper ran a round the test did not step";
    EXPECT_EQ(one_->status(id), "cancelled");
    EXPECT_EQ(two_->status(id), "cancelled");
}

TEST_F(SharedTasks, ATaskWhoseInstanceDiedIsResumedByAnother) {
    const std::string id = start_on_one();
    ASSERT_FALSE(id.empty());
    ASSERT_EQ(await([&] { return std::to_string(probe_.runs.load()); }, "1"), "1");
    // While instance one lives and renews, instance two leaves the task alone: two leases.
    agency::testing::KeeperSteps both(clock_, 2);
    both.run(std::chrono::milliseconds(kLeaseMs / 3), 6);
    both.settle();
    EXPECT_EQ(probe_.resumes, 0);
    EXPECT_EQ(two_->status(id), "working");
    one_.reset();  // the instance stops mid-task: its record stays working, its lease runs out
    // Instance two's keeper alone: one lease later the task is its.
    agency::testing::KeeperSteps alone(clock_, 1, both.asleep() - 1);
    alone.run(std::chrono::milliseconds(kLeaseMs / 3), 4);
    EXPECT_EQ(await([&] { return two_->status(id); }, "completed"), "completed");
    EXPECT_EQ(probe_.resumes, 1) << "resumed exactly once, by instance two";
    json got = two_->modern("tasks/get", {{"taskId", id}})["result"];
    EXPECT_EQ(got["result"]["content"][0]["text"], "resumed at step 1") << got;
}

TEST_F(SharedTasks, TasksUpdateForATaskOnAnotherInstanceIsRefusedClearly) {
    const std::string id = start_on_one();
    ASSERT_FALSE(id.empty());
    json refused =
        two_->modern("tasks/update", {{"taskId", id}, {"inputResponses", json::object()}});
    ASSERT_TRUE(refused.contains("error")) << refused;
    EXPECT_NE(refused["error"].value("message", "").find("another instance"), std::string::npos);
    probe_.release.open();
    EXPECT_EQ(await([&] { return one_->status(id); }, "completed"), "completed");
}

}  // namespace
