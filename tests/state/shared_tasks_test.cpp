// MCP tasks across instances on one PostgreSQL store: any instance answers tasks/get and
// tasks/result, a cancel on one stops the work on another, and a task whose instance died is
// resumed by another once its lease runs out.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/pg_cluster.hpp"
#include "server/mcp_server.hpp"
#include "state/pg_store.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
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

    Instance(const std::string& url, const std::string& name, Probe& probe) {
        store = std::make_shared<agency::state::PgStore>(url);
        ServerOptions options;
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
    std::string url_ = agency::testing::pg_fresh_database();
    Probe probe_;
};

TEST_F(SharedTasks, AnyInstanceAnswersForATaskAnotherRuns) {
    Instance one(url_, "i_one", probe_), two(url_, "i_two", probe_);
    json created = one.modern("tools/call", {{"name", "wait_job"}, {"arguments", json::object()}});
    const std::string id = created["result"].value("taskId", "");
    ASSERT_FALSE(id.empty()) << created;
    EXPECT_EQ(two.status(id), "working") << "instance two reads the record instance one wrote";
    probe_.release.open();
    EXPECT_EQ(await([&] { return two.status(id); }, "completed"), "completed");
    json got = two.modern("tasks/get", {{"taskId", id}})["result"];
    EXPECT_EQ(got["result"]["content"][0]["text"], "done") << got;
    EXPECT_EQ(probe_.runs, 1) << "run once, by the instance that created it";
}

TEST_F(SharedTasks, ACancelOnOneInstanceStopsTheWorkOnAnother) {
    Instance one(url_, "i_one", probe_), two(url_, "i_two", probe_);
    json created = one.modern("tools/call", {{"name", "wait_job"}, {"arguments", json::object()}});
    const std::string id = created["result"].value("taskId", "");
    ASSERT_FALSE(id.empty()) << created;
    ASSERT_EQ(await([&] { return std::to_string(probe_.runs.load()); }, "1"), "1");
    const auto asked = std::chrono::steady_clock::now();
    EXPECT_FALSE(two.modern("tasks/cancel", {{"taskId", id}}).contains("error"));
    (void)agency::testing::eventually([&] { return probe_.saw_stop.load(); }, 3000ms, 10ms);
    EXPECT_TRUE(probe_.saw_stop) << "the work on instance one was stopped";
    // LISTEN/NOTIFY carries it at once, well before the next lease renewal would.
    EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::milliseconds(kLeaseMs / 3 * 2));
    EXPECT_EQ(one.status(id), "cancelled");
    EXPECT_EQ(two.status(id), "cancelled");
}

TEST_F(SharedTasks, ATaskWhoseInstanceDiedIsResumedByAnother) {
    std::string id;
    auto one = std::make_unique<Instance>(url_, "i_one", probe_);
    Instance two(url_, "i_two", probe_);
    json created = one->modern("tools/call", {{"name", "wait_job"}, {"arguments", json::object()}});
    id = created["result"].value("taskId", "");
    ASSERT_FALSE(id.empty()) << created;
    ASSERT_EQ(await([&] { return std::to_string(probe_.runs.load()); }, "1"), "1");
    // While instance one lives and renews, instance two leaves the task alone.
    std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs * 2));
    EXPECT_EQ(probe_.resumes, 0);
    EXPECT_EQ(two.status(id), "working");
    one.reset();  // the instance stops mid-task: its record stays working, its lease runs out
    EXPECT_EQ(await([&] { return two.status(id); }, "completed"), "completed");
    EXPECT_EQ(probe_.resumes, 1) << "resumed exactly once, by instance two";
    json got = two.modern("tasks/get", {{"taskId", id}})["result"];
    EXPECT_EQ(got["result"]["content"][0]["text"], "resumed at step 1") << got;
}

TEST_F(SharedTasks, TasksUpdateForATaskOnAnotherInstanceIsRefusedClearly) {
    Instance one(url_, "i_one", probe_), two(url_, "i_two", probe_);
    json created = one.modern("tools/call", {{"name", "wait_job"}, {"arguments", json::object()}});
    const std::string id = created["result"].value("taskId", "");
    ASSERT_FALSE(id.empty()) << created;
    json refused = two.modern("tasks/update", {{"taskId", id}, {"inputResponses", json::object()}});
    ASSERT_TRUE(refused.contains("error")) << refused;
    EXPECT_NE(refused["error"].value("message", "").find("another instance"), std::string::npos);
    probe_.release.open();
    EXPECT_EQ(await([&] { return one.status(id); }, "completed"), "completed");
}

}  // namespace
