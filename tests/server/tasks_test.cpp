// MCP Tasks in the core, both eras: task-augmented tools/call, tasks/get|result|list|cancel
// (2025-11-25), the io.modelcontextprotocol/tasks extension (2026-07-28), input during a task,
// and pickup after a restart through a shared TaskStore.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "base/metrics.hpp"
#include "base/sealed_token.hpp"
#include "server/mcp_server.hpp"
#include "tests/metrics_text.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
#include "tests/support/wait.hpp"

namespace {

using namespace agency::testing::core_types;
using agency::mcp::json;
using agency::mcp::Server;
using namespace std::chrono_literals;

constexpr const char* kExt = "io.modelcontextprotocol/tasks";

// The tasks whose work runs on this process now (agency_mcp_open{what="tasks"}): a task's work
// leaves it once it has ended and its outcome was recorded.
double tasks_running() {
    return agency::testing::metric_value(agency::base::metrics::render(), "agency_mcp_open",
                                         {{"what", "tasks"}});
}

// Records what travels back on a request's path (a tasks/result stream).
class RecordingChannel : public Channel {
public:
    void send(const std::string& message) override {
        std::lock_guard lock(mutex_);
        messages_.push_back(json::parse(message));
    }
    bool can_send_requests() const override { return true; }
    std::vector<json> notifications(const std::string& method) {
        std::lock_guard lock(mutex_);
        std::vector<json> out;
        for (const auto& m : messages_)
            if (!m.contains("id") && m.value("method", "") == method) out.push_back(m);
        return out;
    }
    std::optional<json> first_request() {
        std::lock_guard lock(mutex_);
        for (const auto& m : messages_)
            if (m.contains("id") && m.contains("method")) return m;
        return std::nullopt;
    }

private:
    std::mutex mutex_;
    std::vector<json> messages_;
};

struct Probe {
    std::atomic<int> runs{0};
    agency::testing::Gate release;
    std::atomic<bool> saw_stop{false};
};

// A tool taking any object, with the task support given.
ToolDef tool(std::string name, std::string description, TaskSupport support,
             std::function<ToolResult(const json&, RequestContext&)> handler) {
    ToolDef def;
    def.name = std::move(name);
    def.description = std::move(description);
    def.input_schema = {{"type", "object"}};
    def.task_support = support;
    def.handler = std::move(handler);
    return def;
}

void register_tools(Server& server, Probe& probe) {
    ToolDef wait = tool("wait_job", "Runs until released; saves a resume point.",
                        TaskSupport::optional, [&probe](const json& args, RequestContext& ctx) {
                            ++probe.runs;
                            ctx.set_task_resume({{"step", 1}});
                            ctx.progress(1, 2, "half way");
                            if (!probe.release.wait(ctx.stop)) {
                                probe.saw_stop = true;
                                return ToolResult::text("stopped", true);
                            }
                            ctx.progress(2, 2, "finishing");
                            return ToolResult::text("done:" + args.value("label", std::string()));
                        });
    wait.resume_task = [](const json& resume, const json& args, RequestContext&) {
        return ToolResult::text("resumed at step " + std::to_string(resume.value("step", 0)) +
                                " for " + args.value("label", std::string()));
    };
    server.add_tool(std::move(wait));

    server.add_tool(tool("plain", "Never a task.", TaskSupport::forbidden,
                         [](const json&, RequestContext&) { return ToolResult::text("plain"); }));
    server.add_tool(tool("only_task", "Runs only as a task; fails with a tool error.",
                         TaskSupport::required, [](const json&, RequestContext&) {
                             return ToolResult::text("broken", true);
                         }));
    server.add_tool(tool("ask_job", "Asks the user during the task.", TaskSupport::optional,
                         [](const json&, RequestContext& ctx) {
                             json a = ctx.ask(
                                 "ok", "elicitation/create",
                                 {{"message", "Go?"},
                                  {"requestedSchema",
                                   {{"type", "object"},
                                    {"properties", {{"go", {{"type", "boolean"}}}}}}}});
                             return ToolResult::text("answer:" + a.value("action", std::string()));
                         }));
    server.add_tool(tool("ask_two_job", "Asks two questions at once during the task.",
                         TaskSupport::optional, [](const json&, RequestContext& ctx) {
                             const json question = {
                                 {"method", "elicitation/create"},
                                 {"params",
                                  {{"message", "Go?"}, {"requestedSchema", {{"type", "object"}}}}}};
                             json a = ctx.ask_all({{"first", question}, {"second", question}});
                             return ToolResult::text(
                                 "answers:" + a["first"].value("action", std::string()) + "," +
                                 a["second"].value("action", std::string()));
                         }));
}

class Tasks : public ::testing::Test {
protected:
    static constexpr const char* kSecret = "tasks-test-secret";
    void SetUp() override { start(); }
    void start() {
        ServerOptions options;
        options.task_store = store_;
        options.task_poll_ms = 50;
        options.state_secret = kSecret;
        server_ = std::make_unique<Server>(options);
        register_tools(*server_, probe_);
        server_->resume_tasks();
    }
    Inbound legacy(const std::string& session_id = "s1") {
        auto& s = sessions_[session_id];
        if (!s) {
            s = server_->create_session(session_id);
            server_->register_session(s);
            Inbound in;
            in.session = s;
            in.era = agency::mcp::Era::legacy;
            call("initialize",
                 {{"protocolVersion", "2025-11-25"},
                  {"capabilities", {{"elicitation", json::object()}}},
                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}},
                 in);
        }
        Inbound in;
        in.session = s;
        in.era = agency::mcp::Era::legacy;
        return in;
    }
    static json modern_params(json params, bool with_extension = true) {
        json caps = json::object();
        if (with_extension) caps["extensions"][kExt] = json::object();
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities", caps}};
        return params;
    }
    json call(const std::string& method, json params, const Inbound& in) {
        json message = {{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method},
                        {"params", std::move(params)}};
        auto out = server_->handle(message.dump(), in);
        return out ? json::parse(out->text) : json();
    }
    json modern(const std::string& method, json params, bool with_extension = true) {
        Inbound in;
        in.era = agency::mcp::Era::modern;
        return call(method, modern_params(std::move(params), with_extension), in);
    }
    // Polls tasks/get (modern) until the task asks for input; returns the last result seen.
    json await_input_required(const std::string& task_id) {
        json asking;
        (void)agency::testing::eventually(
            [&] {
                asking = modern("tasks/get", {{"taskId", task_id}})["result"];
                return asking["status"] == "input_required";
            },
            1000ms);
        return asking;
    }
    // Polls tasks/get until the status is terminal.
    json settle(const std::string& task_id, const std::function<json()>& get) {
        json r;
        const bool terminal = agency::testing::eventually(
            [&] {
                r = get();
                std::string status = r["result"].value("status", "");
                return status == "completed" || status == "failed" || status == "cancelled";
            },
            4000ms, 10ms);
        if (terminal) return r;
        ADD_FAILURE() << "task " << task_id << " did not finish";
        return {};
    }

    std::shared_ptr<MemoryTaskStore> store_ = std::make_shared<MemoryTaskStore>();
    Probe probe_;
    std::unique_ptr<Server> server_;
    std::map<std::string, std::shared_ptr<agency::mcp::Session>> sessions_;
    int id_ = 0;
};

TEST_F(Tasks, LegacyAdvertisesTasksAndMarksTaskTools) {
    Inbound in = legacy();
    json list = call("tools/list", json::object(), in)["result"]["tools"];
    std::map<std::string, json> by_name;
    for (const auto& t : list) by_name[t["name"]] = t;
    EXPECT_EQ(by_name["wait_job"]["execution"]["taskSupport"], "optional");
    EXPECT_EQ(by_name["only_task"]["execution"]["taskSupport"], "required");
    EXPECT_FALSE(by_name["plain"].contains("execution"));
    json caps = server_->capabilities(agency::mcp::Era::legacy);
    EXPECT_TRUE(caps["tasks"]["requests"]["tools"].contains("call"));
    EXPECT_FALSE(server_->capabilities(agency::mcp::Era::modern).contains("tasks"));
}

TEST_F(Tasks, LegacyTaskRunsInTheBackgroundAndTasksResultWaitsForIt) {
    Inbound in = legacy();
    json created = call("tools/call",
                        {{"name", "wait_job"},
                         {"arguments", {{"label", "a"}}},
                         {"task", {{"ttl", 60000}}},
                         {"_meta", {{"progressToken", "p1"}}}},
                        in)["result"];
    ASSERT_TRUE(created.contains("task")) << created;
    const std::string id = created["task"]["taskId"];
    EXPECT_EQ(created["task"]["status"], "working");
    EXPECT_EQ(created["task"]["ttl"], 60000);
    EXPECT_GE(id.size(), 32u);

    json got = call("tasks/get", {{"taskId", id}}, in)["result"];
    EXPECT_EQ(got["taskId"], id);
    EXPECT_TRUE(got.contains("createdAt"));

    RecordingChannel waiter;
    Inbound wait_in = in;
    wait_in.channel = &waiter;
    auto result = std::async(std::launch::async, [&] {
        return call("tasks/result", {{"taskId", id}}, wait_in);
    });
    EXPECT_EQ(result.wait_for(100ms), std::future_status::timeout) << "tasks/result must block";
    probe_.release.open();
    json done = result.get()["result"];
    EXPECT_EQ(done["content"][0]["text"], "done:a");
    EXPECT_EQ(done["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    // Progress after the call returned reaches the caller waiting in tasks/result, with the
    // original call's progress token.
    auto progress = waiter.notifications("notifications/progress");
    ASSERT_FALSE(progress.empty());
    EXPECT_EQ(progress.back()["params"]["progressToken"], "p1");
    EXPECT_EQ(progress.back()["params"]["progress"], 2);
    EXPECT_EQ(call("tasks/get", {{"taskId", id}}, in)["result"]["status"], "completed");

    json listed = call("tasks/list", json::object(), in)["result"]["tasks"];
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0]["taskId"], id);
    EXPECT_EQ(probe_.runs, 1);
}

TEST_F(Tasks, TasksAreInvisibleToOtherSessions) {
    Inbound mine = legacy("s1");
    Inbound other = legacy("s2");
    const std::string id =
        call("tools/call", {{"name", "wait_job"}, {"task", json::object()}}, mine)["result"]["task"]["taskId"];
    json refused = call("tasks/get", {{"taskId", id}}, other);
    EXPECT_EQ(refused["error"]["code"], -32602);
    EXPECT_EQ(call("tasks/cancel", {{"taskId", id}}, other)["error"]["code"], -32602);
    EXPECT_TRUE(call("tasks/list", json::object(), other)["result"]["tasks"].empty());
    probe_.release.open();
}

TEST_F(Tasks, ListCursorIsBoundToItsOwner) {
    Inbound mine = legacy("s1");
    Inbound other = legacy("s2");
    // A cursor as the server seals it for the tasks of session s1's caller.
    agency::base::TokenSealer sealer(kSecret, "tasks-cursor");
    const std::string cursor =
        sealer.seal({.subject = "tasks/list", .principal = "local#s1"}, 1min, {{"offset", 0}});
    json listed = call("tasks/list", {{"cursor", cursor}}, mine);
    EXPECT_TRUE(listed.contains("result")) << listed.dump();
    const std::string refusal =
        "invalid cursor: pass back the nextCursor of a previous tasks/list, or omit it";
    json refused = call("tasks/list", {{"cursor", cursor}}, other);
    EXPECT_EQ(refused["error"]["code"], -32602) << refused.dump();
    EXPECT_EQ(refused["error"]["message"], refusal);
    // The unsigned form, and one sealed under another purpose, are forgeries.
    json forged = call("tasks/list", {{"cursor", agency::crypto::base64url_encode("tasks:0")}}, mine);
    EXPECT_EQ(forged["error"]["code"], -32602) << forged.dump();
    EXPECT_EQ(forged["error"]["message"], refusal);
    agency::base::TokenSealer other_purpose(kSecret, "cursor");
    json misused = call("tasks/list",
                        {{"cursor", other_purpose.seal({.subject = "tasks/list",
                                                        .principal = "local#s1"},
                                                       1min, {{"offset", 0}})}},
                        mine);
    EXPECT_EQ(misused["error"]["code"], -32602) << misused.dump();
}

TEST_F(Tasks, LegacyCancelStopsTheWorkAndKeepsCancelled) {
    Inbound in = legacy();
    const double running_before = tasks_running();
    const std::string id =
        call("tools/call", {{"name", "wait_job"}, {"task", json::object()}}, in)["result"]["task"]["taskId"];
    json cancelled = call("tasks/cancel", {{"taskId", id}}, in)["result"];
    EXPECT_EQ(cancelled["status"], "cancelled");
    (void)agency::testing::eventually([&] { return probe_.saw_stop.load(); }, 1000ms);
    EXPECT_TRUE(probe_.saw_stop) << "the work must see the stop";
    // The work's "stopped" answer has been taken in (or not) once its work has ended.
    EXPECT_TRUE(agency::testing::eventually([&] { return tasks_running() <= running_before; },
                                            5000ms))
        << "the task's work did not end";
    EXPECT_EQ(call("tasks/get", {{"taskId", id}}, in)["result"]["status"], "cancelled");
    json again = call("tasks/cancel", {{"taskId", id}}, in);
    EXPECT_EQ(again["error"]["code"], -32602) << "a terminal task cannot be cancelled (2025-11-25)";
}

TEST_F(Tasks, LegacyTaskSupportIsEnforced) {
    Inbound in = legacy();
    EXPECT_EQ(call("tools/call", {{"name", "only_task"}}, in)["error"]["code"], -32601);
    EXPECT_EQ(call("tools/call", {{"name", "plain"}, {"task", json::object()}}, in)["error"]["code"],
              -32601);
    // A tool error makes a failed task whose result still says what happened.
    const std::string id =
        call("tools/call", {{"name", "only_task"}, {"task", json::object()}}, in)["result"]["task"]["taskId"];
    json end = settle(id, [&] { return call("tasks/get", {{"taskId", id}}, in); });
    EXPECT_EQ(end["result"]["status"], "failed");
    json result = call("tasks/result", {{"taskId", id}}, in)["result"];
    EXPECT_EQ(result["isError"], true);
    EXPECT_EQ(result["content"][0]["text"], "broken");
}

TEST_F(Tasks, LegacyInputTravelsOnTheTasksResultStream) {
    Inbound in = legacy();
    const std::string id =
        call("tools/call", {{"name", "ask_job"}, {"task", json::object()}}, in)["result"]["task"]["taskId"];
    settle(id, [&] {
        json r = call("tasks/get", {{"taskId", id}}, in);
        if (r["result"]["status"] == "input_required") r["result"]["status"] = "completed";
        return r;
    });
    RecordingChannel waiter;
    Inbound wait_in = in;
    wait_in.channel = &waiter;
    auto result = std::async(std::launch::async, [&] {
        return call("tasks/result", {{"taskId", id}}, wait_in);
    });
    std::optional<json> request;
    (void)agency::testing::eventually(
        [&] {
            request = waiter.first_request();
            return request.has_value();
        },
        1000ms);
    ASSERT_TRUE(request) << "the elicitation must reach the tasks/result stream";
    EXPECT_EQ((*request)["method"], "elicitation/create");
    EXPECT_EQ((*request)["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    json answer = {{"jsonrpc", "2.0"}, {"id", (*request)["id"]}, {"result", {{"action", "accept"}}}};
    server_->handle(answer.dump(), in);
    EXPECT_EQ(result.get()["result"]["content"][0]["text"], "answer:accept");
}

TEST_F(Tasks, ModernTasksAreFlatAndInlineTheirResult) {
    EXPECT_TRUE(server_->capabilities(agency::mcp::Era::modern)["extensions"].contains(kExt));
    json created = modern("tools/call", {{"name", "wait_job"}, {"arguments", {{"label", "m"}}}})["result"];
    EXPECT_EQ(created["resultType"], "task");
    EXPECT_FALSE(created.contains("task"));
    EXPECT_TRUE(created.contains("ttlMs"));
    const std::string id = created["taskId"];
    json working;
    (void)agency::testing::eventually(
        [&] {
            working = modern("tasks/get", {{"taskId", id}})["result"];
            return working.contains("statusMessage");
        },
        1000ms);
    EXPECT_EQ(working["resultType"], "complete");
    EXPECT_EQ(working["status"], "working");
    EXPECT_EQ(working["statusMessage"], "half way") << "progress shows as the status message";
    probe_.release.open();
    json end = settle(id, [&] { return modern("tasks/get", {{"taskId", id}}); });
    EXPECT_EQ(end["result"]["status"], "completed");
    EXPECT_EQ(end["result"]["result"]["content"][0]["text"], "done:m");

    // Without the extension: the same tool runs inline; task methods are refused with -32021.
    json sync = modern("tools/call", {{"name", "wait_job"}, {"arguments", {{"label", "s"}}}}, false);
    EXPECT_EQ(sync["result"]["resultType"], "complete");
    EXPECT_FALSE(sync["result"].contains("taskId"));
    EXPECT_EQ(sync["result"]["content"][0]["text"], "done:s");
    json gated = modern("tasks/get", {{"taskId", id}}, false);
    EXPECT_EQ(gated["error"]["code"], -32021);
    EXPECT_TRUE(gated["error"]["data"]["requiredCapabilities"]["extensions"].contains(kExt));
    EXPECT_EQ(modern("tasks/list", json::object())["error"]["code"], -32601);
    EXPECT_EQ(modern("tasks/result", {{"taskId", id}})["error"]["code"], -32601);
}

TEST_F(Tasks, ModernInputGoesThroughTasksUpdate) {
    const std::string id = modern("tools/call", {{"name", "ask_job"}})["result"]["taskId"];
    const json asking = await_input_required(id);
    ASSERT_EQ(asking["status"], "input_required");
    EXPECT_EQ(asking["inputRequests"]["ok"]["method"], "elicitation/create");
    json ack = modern("tasks/update", {{"taskId", id}, {"inputResponses", {{"ok", {{"action", "decline"}}}}}});
    // An empty ack: resultType and the server's _meta, nothing about the task.
    ASSERT_TRUE(ack["result"].is_object()) << ack.dump();
    json fields = ack["result"];
    fields.erase("_meta");
    EXPECT_EQ(fields, json({{"resultType", "complete"}}));
    json end = settle(id, [&] { return modern("tasks/get", {{"taskId", id}}); });
    EXPECT_EQ(end["result"]["result"]["content"][0]["text"], "answer:decline");
}

// tasks/update answers before it replies: the tasks/get that follows at once never shows an
// answered question (the conformance suite's tasks-mrtr-input once saw one under load).
TEST_F(Tasks, ModernPartialUpdateNarrowsTheQuestionsBeforeItsReply) {
    const std::string id = modern("tools/call", {{"name", "ask_two_job"}})["result"]["taskId"];
    const json asking = await_input_required(id);
    ASSERT_EQ(asking["status"], "input_required");
    ASSERT_TRUE(asking["inputRequests"].contains("first"));
    ASSERT_TRUE(asking["inputRequests"].contains("second"));
    modern("tasks/update", {{"taskId", id}, {"inputResponses", {{"first", {{"action", "accept"}}}}}});
    json after = modern("tasks/get", {{"taskId", id}})["result"];
    EXPECT_EQ(after["status"], "input_required");
    EXPECT_FALSE(after["inputRequests"].contains("first")) << after.dump();
    EXPECT_TRUE(after["inputRequests"].contains("second")) << after.dump();
    modern("tasks/update", {{"taskId", id}, {"inputResponses", {{"second", {{"action", "decline"}}}}}});
    json end = settle(id, [&] { return modern("tasks/get", {{"taskId", id}}); });
    EXPECT_EQ(end["result"]["result"]["content"][0]["text"], "answers:accept,decline");
}

TEST_F(Tasks, ARestartPicksUpTasksThatSavedAResumePoint) {
    Inbound in = legacy();
    const std::string id = call("tools/call",
                                {{"name", "wait_job"}, {"arguments", {{"label", "r"}}}, {"task", json::object()}},
                                in)["result"]["task"]["taskId"];
    (void)agency::testing::eventually([&] { return !store_->get(id)->resume.is_null(); }, 1000ms);
    // The server shuts down mid-task: the record stays working in the (shared) store.
    server_.reset();
    ASSERT_EQ(store_->get(id)->status, agency::mcp::TaskStatus::working);
    sessions_.clear();
    start();  // resume_tasks()
    (void)agency::testing::eventually(
        [&] { return store_->get(id)->status != agency::mcp::TaskStatus::working; }, 1000ms);
    auto record = store_->get(id);
    EXPECT_EQ(record->status, agency::mcp::TaskStatus::completed);
    EXPECT_NE(record->result.find("resumed at step 1 for r"), std::string::npos) << record->result;
    EXPECT_EQ(probe_.runs, 1) << "resumed, not run again";
}

TEST_F(Tasks, ARestartFailsTasksThatCannotBeResumed) {
    agency::mcp::TaskRecord orphan;
    orphan.id = "orphan1";
    orphan.owner = "local";
    orphan.tool = "only_task";
    orphan.era = "modern";
    orphan.created_ms = orphan.updated_ms = 1;
    orphan.ttl_ms = 0;
    store_->put(orphan);
    server_->resume_tasks();
    auto record = store_->get("orphan1");
    EXPECT_EQ(record->status, agency::mcp::TaskStatus::failed);
    EXPECT_NE(record->error.value("message", "").find("restarted"), std::string::npos);
}

}  // namespace
