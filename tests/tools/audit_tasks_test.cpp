// run_seo_audit as an MCP task over the real sample gateway and a real SQLite state file:
// the task ends with the audit, and a restart in the middle resumes the task from the file.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "server/mcp_server.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/wait.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/registry.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;

using agency::testing::eventually;

// One generation of the server process: runtime over the state file, MCP server, tools.
struct Generation {
    std::shared_ptr<agency::tools::ActionRuntime> rt;
    std::unique_ptr<agency::mcp::Server> server;
    int next_id = 1;

    Generation(const std::string& state_db, const std::string& gateway_url, int workers = 2) {
        agency::tools::ActionSettings settings;
        settings.audit_workers = workers;
        rt = std::make_shared<agency::tools::ActionRuntime>(
            agency::testing::on_sqlite(settings, state_db));
        agency::gateway::Config config;
        config.base_url = gateway_url;
        config.backoff_base = 2ms;
        auto client = std::make_shared<agency::gateway::Client>(config);
        agency::tools::Settings tool_settings;
        tool_settings.secret = "audit-tasks-test";
        auto box = std::make_shared<agency::tools::Toolbox>(client, tool_settings);
        agency::mcp::ServerOptions options;
        options.task_store = rt->shared_store();
        options.task_poll_ms = 50;
        server = std::make_unique<agency::mcp::Server>(options);
        agency::tools::register_all(*server, box, rt);
        server->resume_tasks();
    }
    // The process ends: the server first (its tasks keep their records), then the workers.
    void shut_down() {
        server.reset();
        rt->audits().stop();
    }
    ~Generation() {
        if (server) shut_down();
    }

    json request(const std::string& method, json params) {
        params["_meta"] = {
            {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities",
             {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}}};
        json message = {{"jsonrpc", "2.0"}, {"id", next_id++}, {"method", method},
                        {"params", std::move(params)}};
        agency::mcp::Inbound in;
        auto text = server->handle_message(message, in);
        return text ? json::parse(text->text) : json();
    }
    json await_task(const std::string& task_id) {
        json r;
        (void)eventually(
            [&] {
                r = request("tasks/get", {{"taskId", task_id}})["result"];
                const std::string s = r.value("status", "");
                return s == "completed" || s == "failed" || s == "cancelled";
            },
            5000ms, 10ms);
        return r;
    }
};

class AuditTasks : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("agency-audit-tasks-" + agency::crypto::random_hex(6));
        gateway_server_.start("127.0.0.1", 0);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string db() const { return (dir_ / "state.db").string(); }

    std::shared_ptr<agency::sample::Gateway> gw_ = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server_{gw_};
    fs::path dir_;
};

TEST_F(AuditTasks, TheTaskEndsWithTheAuditsOutcome) {
    Generation g(db(), gateway_server_.base_url());
    json created = g.request("tools/call",
                             {{"name", "run_seo_audit"},
                              {"arguments",
                               {{"client_id", kDental},
                                {"url", "https://www.brightsmile.example/task-audit"}}}})["result"];
    ASSERT_EQ(created.value("resultType", ""), "task") << created.dump();
    json done = g.await_task(created["taskId"]);
    ASSERT_EQ(done.value("status", ""), "completed") << done.dump();
    const json& out = done["result"]["structuredContent"];
    EXPECT_EQ(out["status"], "succeeded") << done.dump();
    EXPECT_TRUE(out["score"].is_number());
    // A new crawl is dated now: the report's date is given, and nothing is said about its age.
    EXPECT_EQ(out.value("report_date_field", ""), "created_at") << out.dump();
    EXPECT_FALSE(out.contains("note")) << out.dump();
    EXPECT_EQ(gw_->count_requests("POST", "seo_audit"), 1u);
    // The audit is also an ordinary job: get_audit_status agrees.
    json status = g.request("tools/call", {{"name", "get_audit_status"},
                                           {"arguments",
                                            {{"client_id", kDental},
                                             {"audit_id", out["audit_id"]}}}})["result"];
    EXPECT_EQ(status["structuredContent"]["status"], "succeeded");
}

TEST_F(AuditTasks, CancellingTheTaskDropsTheQueuedAuditUnsent) {
    // One worker, kept busy by a slow audit: the task's audit stays queued behind it.
    Generation g(db(), gateway_server_.base_url(), /*workers=*/1);
    gw_->inject({.target = "seo_audit", .mode = agency::sample::FaultMode::slow, .count = 1,
                 .delay_ms = 400});
    auto audit_task = [&](const std::string& url) {
        return g.request("tools/call",
                         {{"name", "run_seo_audit"},
                          {"arguments", {{"client_id", kDental}, {"url", url}}}})["result"]
            .value("taskId", "");
    };
    const std::string busy = audit_task("https://www.brightsmile.example/busy");
    // Tasks queue their audits from their own threads: let the busy one hold the worker first.
    ASSERT_TRUE(eventually([&] {
        const json r = g.rt->store().get(busy)->resume;
        return r.is_object() && g.rt->store().job(r.value("audit_id", ""))->status == "running";
    }));
    const std::string task_id = audit_task("https://www.brightsmile.example/task-cancel");
    ASSERT_FALSE(task_id.empty());
    json resume;
    ASSERT_TRUE(eventually([&] { return !(resume = g.rt->store().get(task_id)->resume).is_null(); }));
    ASSERT_TRUE(resume.contains("audit_id"));
    json ack = g.request("tasks/cancel", {{"taskId", task_id}});
    EXPECT_EQ(ack["result"]["resultType"], "complete") << ack.dump();
    EXPECT_EQ(g.await_task(task_id)["status"], "cancelled");
    auto job = g.rt->store().job(resume["audit_id"].get<std::string>());
    ASSERT_TRUE(job);
    EXPECT_EQ(job->status, "cancelled");
    // The one worker takes jobs in order: once the busy audit and a later one are done, it has
    // passed the cancelled job.
    EXPECT_EQ(g.await_task(busy)["status"], "completed");
    EXPECT_EQ(g.await_task(audit_task("https://www.brightsmile.example/after"))["status"],
              "completed");
    std::size_t sent = 0;
    for (const auto& r : gw_->request_log())
        sent += r.method == "POST" && r.detail.find("task-cancel") != std::string::npos;
    EXPECT_EQ(sent, 0u) << "a cancelled queued audit is never sent";
}

TEST_F(AuditTasks, ARestartMidAuditResumesTheTaskFromTheStateFile) {
    const std::string url = "https://www.brightsmile.example/task-restart";
    gw_->inject({.target = "seo_audit", .mode = agency::sample::FaultMode::slow, .count = 1,
                 .delay_ms = 300});
    std::string task_id;
    std::string audit_id;
    {
        Generation first(db(), gateway_server_.base_url());
        json created = first.request(
            "tools/call",
            {{"name", "run_seo_audit"}, {"arguments", {{"client_id", kDental}, {"url", url}}}})["result"];
        task_id = created.value("taskId", "");
        ASSERT_FALSE(task_id.empty()) << created.dump();
        // Wait until the task has saved where its work is and the audit's POST is out, then stop.
        json resume;
        ASSERT_TRUE(eventually(
            [&] { return !(resume = first.rt->store().get(task_id)->resume).is_null(); }));
        audit_id = resume.value("audit_id", "");
        ASSERT_TRUE(eventually([&] { return first.rt->store().job(audit_id)->status == "running"; }));
        // "running" is set before the POST is sent: stop only once the gateway holds the POST
        // (sleeping on the slow fault), or the stop would rightly keep it from being sent.
        ASSERT_TRUE(eventually([&] { return gw_->posts_in_flight() == 1; }));
        first.shut_down();
        EXPECT_EQ(first.rt->store().get(task_id)->status, agency::mcp::TaskStatus::working)
            << "a shutdown leaves the task to the next process";
    }
    // The first process's POST has run at the gateway before the next process starts.
    ASSERT_TRUE(eventually([&] { return gw_->count_requests("POST", "seo_audit") == 1; }));
    Generation second(db(), gateway_server_.base_url());
    json done = second.await_task(task_id);
    ASSERT_EQ(done.value("status", ""), "completed") << done.dump();
    EXPECT_EQ(done["result"]["structuredContent"]["status"], "succeeded") << done.dump();
    EXPECT_EQ(gw_->count_requests("POST", "seo_audit"), 1u)
        << "the next process found the report instead of sending the audit again";
    std::string report_id;
    for (const auto& row : gw_->rows("seo_reports", kDental))
        if (row.value("url", "") == url) report_id = row.value("id", "");
    EXPECT_EQ(done["result"]["structuredContent"].value("report_id", ""), report_id);
}

// A gateway that answers an audit with a report it already had (Options::stale_reports): the
// audit succeeds, and its result says how old the report is, whether the answer carried the
// date (a url it had audited) or only the report row does (a new url: the row is read).
TEST_F(AuditTasks, ASucceededAuditOfAnOldReportSaysHowOld) {
    auto stale = std::make_shared<agency::sample::Gateway>(
        agency::sample::Options{.stale_reports = true});
    agency::sample::Server stale_server(stale);
    stale_server.start("127.0.0.1", 0);
    Generation g(db(), stale_server.base_url());
    auto audit = [&](const std::string& url) {
        json created = g.request("tools/call",
                                 {{"name", "run_seo_audit"},
                                  {"arguments", {{"client_id", kDental}, {"url", url}}}})["result"];
        json done = g.await_task(created.value("taskId", ""));
        EXPECT_EQ(done.value("status", ""), "completed") << done.dump();
        return done["result"];
    };
    auto text_of = [](const json& result) {
        std::string text;
        for (const auto& block : result.value("content", json::array()))
            text += block.value("text", "");
        return text;
    };

    const json fresh_url = audit("https://www.brightsmile.example/never-audited");
    const json& out = fresh_url["structuredContent"];
    EXPECT_EQ(out["status"], "succeeded") << out.dump();
    const std::string note = out.value("note", "");
    EXPECT_EQ(note.rfind("the report is dated 2025-07-02 (its ", 0), 0u) << out.dump();
    EXPECT_NE(note.find("before this audit was asked"), std::string::npos) << note;
    EXPECT_NE(note.find("may have returned an old report"), std::string::npos) << note;
    EXPECT_EQ(out.value("report_date", "").substr(0, 10), "2025-07-02") << out.dump();
    EXPECT_NE(text_of(fresh_url).find(note), std::string::npos) << "the text a model reads";
    std::size_t read_back = 0;
    for (const auto& r : stale->request_log())
        read_back += r.method == "GET" && r.target == "seo_reports";
    EXPECT_EQ(read_back, 1u) << "an answer without a date: the report row is read once";

    // A url the gateway had a report for: the answer's own created_at dates it.
    const json had = stale->rows("seo_reports", kDental).at(0);
    const json again = audit(had["url"].get<std::string>())["structuredContent"];
    EXPECT_EQ(again.value("report_id", ""), had["id"]);
    EXPECT_EQ(again.value("report_date_field", ""), "created_at") << again.dump();
    EXPECT_EQ(again.value("note", "").rfind(
                  "the report is dated " + had["created_at"].get<std::string>().substr(0, 10) +
                      " (its created_at), ",
                  0),
              0u)
        << again.dump();
}

}  // namespace
