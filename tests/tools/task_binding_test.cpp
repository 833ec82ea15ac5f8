// Tasks and audit jobs bound to the caller's authorization context (issue 29): with a key (or an
// OAuth token) a task belongs to the caller, so any session of it on any instance sharing the
// store reads it to its end, and nobody else learns it exists; without authentication a legacy
// task stays bound to its session. Two Server instances on one store: a SQLite file, and a real
// PostgreSQL database (tests/pg_cluster.hpp).
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "server/mcp_server.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/core_names.hpp"
#include "tests/support/gate.hpp"
#include "tests/support/principals.hpp"
#include "tests/support/shared_store.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"

// Named: the tests are built as unity batches, where another file's anonymous names meet these.
namespace task_binding_test {

using namespace agency::testing::core_types;
using agency::mcp::json;
using agency::mcp::Server;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kExt = "io.modelcontextprotocol/tasks";

Principal key(const std::string& name) { return agency::testing::key_principal(name); }
const Principal kAlice = key("alice");
const Principal kBob = key("bob");
const Principal kNobody;  // stdio, or HTTP without auth: "local", not authenticated

using Backend = agency::testing::StoreBackend;

// Where the instances keep their state: one SQLite file, or one PostgreSQL database. Each
// instance opens its own connection(s), as another process would.
struct SharedState : agency::testing::SharedStore {
    explicit SharedState(Backend b) : SharedStore(b, "agency-binding-") {}
};

struct Probe {
    agency::testing::Gate release;
};

// One instance: its own server on its own connection to the shared state.
struct Instance {
    std::shared_ptr<agency::state::Store> store;
    std::unique_ptr<Server> server;
    std::map<std::string, std::shared_ptr<Session>> sessions;
    int id = 0;

    Instance(const SharedState& state, const std::string& name, Probe& probe) {
        store = state.open();
        ServerOptions options;
        options.task_store = store;
        options.task_poll_ms = 50;
        options.state_secret = "task-binding-secret-task-binding-secret";
        options.instance_id = name;
        options.task_lease_ms = 900;
        server = std::make_unique<Server>(options);
        ToolDef wait;
        wait.name = "wait_job";
        wait.description = "Runs until released.";
        wait.input_schema = {{"type", "object"}};
        wait.task_support = TaskSupport::optional;
        wait.handler = [&probe](const json&, RequestContext& ctx) {
            (void)probe.release.wait(ctx.stop);
            return ToolResult::text("done");
        };
        server->add_tool(std::move(wait));
        server->resume_tasks();
    }

    // A new legacy (2025-11-25) session of `who` on this instance, initialized.
    std::shared_ptr<Session> open_session(const Principal& who) {
        auto s = server->create_session(agency::crypto::random_hex(16));
        server->register_session(s);
        legacy(s, who, "initialize",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
        return s;
    }
    json legacy(const std::shared_ptr<Session>& s, const Principal& who, const std::string& method,
                json params) {
        Inbound in;
        in.era = Era::legacy;
        in.session = s;
        in.principal = who;
        in.http = true;
        return send(method, std::move(params), in);
    }
    json modern(const Principal& who, const std::string& method, json params) {
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities",
                            {{"extensions", {{kExt, json::object()}}}}}};
        Inbound in;
        in.era = Era::modern;
        in.principal = who;
        in.http = true;
        return send(method, std::move(params), in);
    }
    json send(const std::string& method, json params, const Inbound& in) {
        json message = {
            {"jsonrpc", "2.0"}, {"id", ++id}, {"method", method}, {"params", std::move(params)}};
        auto out = server->handle(message.dump(), in);
        return out ? json::parse(out->text) : json();
    }
};

// The error of an unknown task id, with the id cut out: what another caller must be told.
std::string unknown_shape(const json& response, const std::string& id) {
    std::string message = response["error"].value("message", "");
    if (auto at = message.find(id); at != std::string::npos) message.erase(at, id.size());
    return std::to_string(response["error"].value("code", 0)) + " " + message;
}

std::string backend_name(const ::testing::TestParamInfo<Backend>& param) {
    return param.param == Backend::sqlite ? "Sqlite" : "Postgres";
}

class TaskBinding : public ::testing::TestWithParam<Backend> {
protected:
    SharedState state_{GetParam()};
    Probe probe_;
};

// The reported bug: a 2025-11-25 task made on instance A was unknown on B, even to the same key
// in a new session, so once A died the caller could never read its result.
TEST_P(TaskBinding, AKeysLegacyTaskIsReadToItsEndOnAnotherInstanceInANewSession) {
    Instance a(state_, "i_a", probe_), b(state_, "i_b", probe_);
    auto first = a.open_session(kAlice);
    json created =
        a.legacy(first, kAlice, "tools/call",
                 {{"name", "wait_job"}, {"arguments", json::object()}, {"task", {{"ttl", 60000}}}});
    const std::string id = created["result"]["task"].value("taskId", "");
    ASSERT_FALSE(id.empty()) << created;

    auto second = b.open_session(kAlice);
    json got = b.legacy(second, kAlice, "tasks/get", {{"taskId", id}});
    EXPECT_EQ(got["result"].value("status", ""), "working") << got;
    json listed = b.legacy(second, kAlice, "tasks/list", json::object());
    ASSERT_EQ(listed["result"]["tasks"].size(), 1u) << listed;
    EXPECT_EQ(listed["result"]["tasks"][0]["taskId"], id);

    // Another key: exactly what an unknown id gets, for every task method.
    auto bobs = b.open_session(kBob);
    const std::string made_up = agency::crypto::random_hex(16);
    const std::string unknown =
        unknown_shape(b.legacy(bobs, kBob, "tasks/get", {{"taskId", made_up}}), made_up);
    for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"})
        EXPECT_EQ(unknown_shape(b.legacy(bobs, kBob, method, {{"taskId", id}}), id), unknown)
            << method;
    EXPECT_TRUE(b.legacy(bobs, kBob, "tasks/list", json::object())["result"]["tasks"].empty());

    // tasks/result on B, from the new session, waits for the end and carries the result.
    auto result = std::async(std::launch::async, [&] {
        return b.legacy(second, kAlice, "tasks/result", {{"taskId", id}});
    });
    EXPECT_EQ(result.wait_for(150ms), std::future_status::timeout) << "it waits for the end";
    probe_.release.open();
    json done = result.get();
    ASSERT_TRUE(done.contains("result")) << done;
    EXPECT_EQ(done["result"]["content"][0]["text"], "done");
    EXPECT_EQ(done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], id);
    EXPECT_EQ(b.legacy(second, kAlice, "tasks/get", {{"taskId", id}})["result"]["status"],
              "completed");
}

TEST_P(TaskBinding, AKeysLegacyTaskIsCancelledFromAnotherInstance) {
    Instance a(state_, "i_a", probe_), b(state_, "i_b", probe_);
    auto first = a.open_session(kAlice);
    const std::string id =
        a.legacy(first, kAlice, "tools/call",
                 {{"name", "wait_job"}, {"task", json::object()}})["result"]["task"]
            .value("taskId", "");
    ASSERT_FALSE(id.empty());
    auto second = b.open_session(kAlice);
    json cancelled = b.legacy(second, kAlice, "tasks/cancel", {{"taskId", id}});
    EXPECT_EQ(cancelled["result"].value("status", ""), "cancelled") << cancelled;
    json result = b.legacy(second, kAlice, "tasks/result", {{"taskId", id}});
    EXPECT_EQ(result["error"].value("message", ""), "the task was cancelled") << result;
}

TEST_P(TaskBinding, WithoutAuthenticationALegacyTaskStaysInItsSession) {
    Instance a(state_, "i_a", probe_), b(state_, "i_b", probe_);
    auto first = a.open_session(kNobody);
    const std::string id =
        a.legacy(first, kNobody, "tools/call",
                 {{"name", "wait_job"}, {"task", json::object()}})["result"]["task"]
            .value("taskId", "");
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(a.legacy(first, kNobody, "tasks/get", {{"taskId", id}})["result"]["status"],
              "working");
    auto other_here = a.open_session(kNobody);
    auto other_there = b.open_session(kNobody);
    EXPECT_EQ(a.legacy(other_here, kNobody, "tasks/get", {{"taskId", id}})["error"]["code"],
              -32602);
    EXPECT_EQ(b.legacy(other_there, kNobody, "tasks/get", {{"taskId", id}})["error"]["code"],
              -32602);
    EXPECT_TRUE(
        b.legacy(other_there, kNobody, "tasks/list", json::object())["result"]["tasks"].empty());
    probe_.release.open();
    json done = a.legacy(first, kNobody, "tasks/result", {{"taskId", id}});
    EXPECT_EQ(done["result"]["content"][0]["text"], "done") << done;
}

TEST_P(TaskBinding, AKeysModernTaskIsTheKeysOnEveryInstanceAndStaysInItsEra) {
    Instance a(state_, "i_a", probe_), b(state_, "i_b", probe_);
    json created =
        a.modern(kAlice, "tools/call", {{"name", "wait_job"}, {"arguments", json::object()}});
    const std::string id = created["result"].value("taskId", "");
    ASSERT_FALSE(id.empty()) << created;
    EXPECT_EQ(b.modern(kAlice, "tasks/get", {{"taskId", id}})["result"]["status"], "working");
    EXPECT_EQ(b.modern(kBob, "tasks/get", {{"taskId", id}})["error"]["code"], -32602);
    EXPECT_EQ(b.modern(kBob, "tasks/cancel", {{"taskId", id}})["error"]["code"], -32602);
    // The same key in a legacy session: a 2026-07-28 task has no 2025-11-25 shapes.
    auto session = b.open_session(kAlice);
    EXPECT_EQ(b.legacy(session, kAlice, "tasks/get", {{"taskId", id}})["error"]["code"], -32602);
    EXPECT_TRUE(b.legacy(session, kAlice, "tasks/list", json::object())["result"]["tasks"].empty());
    probe_.release.open();
    json got;
    (void)agency::testing::eventually(
        [&] {
            got = b.modern(kAlice, "tasks/get", {{"taskId", id}})["result"];
            return got.value("status", "") == "completed";
        },
        3000ms, 10ms);
    EXPECT_EQ(got["result"]["content"][0]["text"], "done") << got;
}

INSTANTIATE_TEST_SUITE_P(Stores, TaskBinding, ::testing::Values(Backend::sqlite, Backend::postgres),
                         backend_name);

// --- rows written before the binding (schema version 3) --------------------------------------

agency::state::TaskRecord old_row(const std::string& id, const std::string& owner,
                                  const std::string& era) {
    agency::state::TaskRecord t;
    t.id = id;
    t.owner = owner;
    t.tool = "wait_job";
    t.era = era;
    t.status = agency::state::TaskStatus::completed;
    t.created_ms = t.updated_ms = agency::base::Clock::system().unix_ms();
    t.ttl_ms = 3'600'000;
    t.result = R"({"content":[{"type":"text","text":"old"}],"isError":false})";
    return t;
}

const std::string kSession = "0123456789abcdef0123456789abcdef";

class TaskBindingMigration : public ::testing::TestWithParam<Backend> {
protected:
    SharedState state_{GetParam()};
    void put_old_rows_at_version_3() {
        {
            auto store = state_.open();
            store->put(old_row("t_key", "key:alice#" + kSession, "legacy"));
            store->put(
                old_row("t_oauth", "oauth:https://issuer.example u%231#" + kSession, "legacy"));
            store->put(old_row("t_anon", "local#" + kSession, "legacy"));
            store->put(old_row("t_modern", "key:odd#" + kSession, "modern"));
        }
        if (state_.backend == Backend::postgres) {
            agency::testing::pg_exec(state_.where, "UPDATE agency_schema SET version = 3");
            return;
        }
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(state_.where.c_str(), &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 3", nullptr, nullptr, nullptr),
                  SQLITE_OK);
        sqlite3_close(db);
    }
};

// A keyed caller's session-bound rows become the caller's; the rest stay as they were.
TEST_P(TaskBindingMigration, Version4BindsOldKeyedTasksToTheCaller) {
    put_old_rows_at_version_3();
    auto store = state_.open();  // migrates
    EXPECT_EQ(store->schema_version(), agency::state::kSchemaVersion);
    EXPECT_EQ(store->get("t_key")->owner, "key:alice");
    EXPECT_EQ(store->get("t_oauth")->owner, "oauth:https://issuer.example u%231");
    EXPECT_EQ(store->get("t_anon")->owner, "local#" + kSession) << "no auth: its session";
    EXPECT_EQ(store->get("t_modern")->owner, "key:odd#" + kSession) << "only legacy rows";

    Probe probe;
    probe.release.open();
    Instance b(state_, "i_b", probe);
    auto session = b.open_session(kAlice);
    json got = b.legacy(session, kAlice, "tasks/result", {{"taskId", "t_key"}});
    EXPECT_EQ(got["result"]["content"][0]["text"], "old") << got;
}

INSTANTIATE_TEST_SUITE_P(Stores, TaskBindingMigration,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

// --- audit jobs: get_audit_status and agency://audit-jobs/{id} --------------------------------

// One instance of the product's tools (a sample gateway of its own) on the shared state.
struct ToolInstance {
    std::shared_ptr<agency::tools::ActionRuntime> rt;
    agency::testing::ToolHarness h;
    ToolInstance(const SharedState& state, const std::string& name)
        : rt(std::make_shared<agency::tools::ActionRuntime>(
              agency::testing::with_store(agency::tools::ActionSettings{
                  .store = state.open(), .sharing = {.instance_id = name, .lease = 2000ms}}))),
          h({}, agency::tools::Settings{},
            [this](Server& server, const std::shared_ptr<agency::tools::Toolbox>& box) {
                agency::tools::register_all(server, box, rt);
            }) {}
    ~ToolInstance() { rt->audits().stop(); }
};

class AuditBinding : public ::testing::TestWithParam<Backend> {
protected:
    SharedState state_{GetParam()};
};

TEST_P(AuditBinding, AnAuditJobIsItsCallersOnEveryInstanceAndUnknownToOthers) {
    ToolInstance a(state_, "i_a"), b(state_, "i_b");
    auto queued =
        a.h.call_as(kAlice, "run_seo_audit",
                    {{"client_id", "demo-law"}, {"url", "https://summitlawgroup.example/"}});
    ASSERT_FALSE(queued.is_error()) << queued.response;
    const std::string id = queued.structured()["audit_id"];
    const json args = {{"client_id", "demo-law"}, {"audit_id", id}};

    auto mine = b.h.call_as(kAlice, "get_audit_status", args);
    ASSERT_FALSE(mine.is_error()) << mine.response;
    EXPECT_EQ(mine.structured()["audit_id"], id);
    auto theirs = b.h.call_as(kBob, "get_audit_status", args);
    auto unknown =
        b.h.call_as(kBob, "get_audit_status", {{"client_id", "demo-law"}, {"audit_id", "zz"}});
    EXPECT_EQ(theirs.reason(), "not_found");
    EXPECT_EQ(theirs.reason(), unknown.reason());

    const std::string uri = "agency://audit-jobs/" + id;
    json read = b.h.request_as(kAlice, "resources/read", {{"uri", uri}});
    ASSERT_TRUE(read.contains("result")) << read;
    EXPECT_EQ(json::parse(read["result"]["contents"][0]["text"].get<std::string>())["audit_id"],
              id);
    json refused = b.h.request_as(kBob, "resources/read", {{"uri", uri}});
    json no_such = b.h.request_as(kBob, "resources/read", {{"uri", "agency://audit-jobs/zz"}});
    ASSERT_TRUE(refused.contains("error")) << refused;
    EXPECT_EQ(refused["error"]["code"], no_such["error"]["code"]);
    std::string r = refused["error"]["message"], n = no_such["error"]["message"];
    EXPECT_EQ(r.substr(r.find('(')), n.substr(n.find('(')));
}

INSTANTIATE_TEST_SUITE_P(Stores, AuditBinding,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

}  // namespace task_binding_test
