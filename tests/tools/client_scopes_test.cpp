// Client scopes (issue 35): a caller limited to demo-law asking for demo-plumbing, by every
// route (every tool taking client_id, list_clients, resources/list and the templates, prompts,
// completion, cursors, tasks' and jobs' principal binding), gets exactly the answer it gets for
// a client id that does not exist, and the sample gateway hears nothing of either.
#include <chrono>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/support/input_examples.hpp"
#include "tests/support/wait.hpp"
#include "tools/pipeline/client_scope.hpp"

namespace {

using agency::testing::ActionToolHarness;
using agency::testing::ToolReply;
using json = nlohmann::json;

constexpr const char* kOther = "demo-plumbing";      // exists, out of the key's scope
constexpr const char* kNowhere = "demo-nonexistent";  // exists nowhere

agency::mcp::Principal scoped(std::vector<std::string> clients = {"demo-law"},
                              const std::string& name = "key:law") {
    agency::mcp::Principal p;
    p.name = name;
    p.authenticated = true;
    p.clients = std::move(clients);
    return p;
}

// A JSON answer with one client id replaced by a marker, to compare two answers that differ
// only in the id asked for.
std::string neutral(const json& answer, const std::string& id) {
    json copy = answer;
    copy.erase("id");  // JSON-RPC ids differ call to call
    return std::regex_replace(copy.dump(), std::regex(id), "<ID>");
}

// Valid arguments of each tool taking client_id (its schema's example), but for the client.
json args_for(const std::string& tool, const std::string& client) {
    json a = agency::testing::input_example(tool);
    a["client_id"] = client;
    return a;
}

class ClientScopes : public ::testing::Test {
protected:
    ActionToolHarness t;
    agency::testing::ToolHarness& h = *t.h;
    agency::mcp::Principal law = scoped();

    json rpc(const agency::mcp::Principal& who, const std::string& method, json params) {
        return h.request_as(who, method, std::move(params));
    }
    // A 2026-07-28 request from a client that declares the tasks extension.
    json task_request(const agency::mcp::Principal& who, const std::string& method, json params) {
        params["_meta"] = {
            {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities",
             {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}}};
        const json message = {{"jsonrpc", "2.0"}, {"id", h.next_id++}, {"method", method},
                              {"params", std::move(params)}};
        agency::mcp::Inbound in;
        in.principal = who;
        auto text = h.server->handle_message(message, in);
        return text ? json::parse(text->text) : json();
    }
};

// Every tool that takes a client_id: the same not_found for demo-plumbing as for an id that does
// not exist, with no gateway request for either, and the write log (for actions) untouched by
// anything but the refusal.
TEST_F(ClientScopes, EveryToolAnswersAnotherClientAsAnUnknownOneWithoutAGatewayRequest) {
    agency::mcp::Principal all;
    all.name = "key:all";
    int tried = 0;
    for (const json& def : h.tools_as(all)) {
        const std::string tool = def["name"];
        if (!def["inputSchema"]["properties"].contains("client_id")) continue;
        ++tried;
        const std::size_t before = h.requests();
        const ToolReply other = h.call_as(law, tool, args_for(tool, kOther));
        const ToolReply nowhere = h.call_as(law, tool, args_for(tool, kNowhere));
        EXPECT_EQ(h.requests(), before) << tool << " reached the gateway";
        EXPECT_EQ(other.reason(), "not_found") << tool << ": " << other.response.dump();
        EXPECT_EQ(other.tool_error().value("message", ""),
                  agency::tools::unknown_client_message(kOther))
            << tool;
        EXPECT_EQ(neutral(other.response, kOther), neutral(nowhere.response, kNowhere)) << tool;
        EXPECT_EQ(other.response.dump().find("exist"), std::string::npos) << tool;
    }
    EXPECT_GE(tried, 25);
    // In scope, the same tool reaches the gateway.
    const std::size_t before = h.requests();
    EXPECT_FALSE(h.call_as(law, "get_client", {{"client_id", "demo-law"}}).is_error());
    EXPECT_GT(h.requests(), before);
}

TEST_F(ClientScopes, ListClientsHoldsOnlyTheScopesClientsWithTotalsAndCursorsOfItsOwn) {
    const ToolReply mine = h.call_as(law, "list_clients", json::object());
    ASSERT_FALSE(mine.is_error()) << mine.response.dump();
    ASSERT_EQ(mine.structured()["rows"].size(), 1u) << mine.structured().dump();
    EXPECT_EQ(mine.structured()["rows"][0]["id"], "demo-law");
    EXPECT_EQ(mine.structured()["total"], 1);
    EXPECT_FALSE(mine.structured().contains("next_cursor"));
    EXPECT_EQ(mine.response.dump().find(kOther), std::string::npos);

    // Two clients, one a page: a cursor, the second page, then the end.
    const auto two = scoped({"demo-law", "demo-dental", "demo-nonexistent"}, "key:two");
    const ToolReply first = h.call_as(two, "list_clients", {{"limit", 1}});
    ASSERT_FALSE(first.is_error()) << first.response.dump();
    EXPECT_EQ(first.structured()["total"], 2);
    ASSERT_TRUE(first.structured().contains("next_cursor"));
    const std::string cursor = first.structured()["next_cursor"];
    const ToolReply second = h.call_as(two, "list_clients", {{"limit", 1}, {"cursor", cursor}});
    ASSERT_FALSE(second.is_error()) << second.response.dump();
    EXPECT_NE(second.structured()["rows"][0]["id"], first.structured()["rows"][0]["id"]);
    EXPECT_FALSE(second.structured().contains("next_cursor"));

    // That cursor opens for no other caller, nor for this one once its scope changed.
    const ToolReply stolen = h.call_as(law, "list_clients", {{"limit", 1}, {"cursor", cursor}});
    EXPECT_TRUE(stolen.rpc_error != 0 || stolen.is_error()) << stolen.response.dump();
    const ToolReply widened = h.call_as(scoped({"demo-law", "demo-dental", "demo-plumbing"}, "key:two"),
                                        "list_clients", {{"limit", 1}, {"cursor", cursor}});
    EXPECT_TRUE(widened.rpc_error != 0 || widened.is_error()) << widened.response.dump();

    // An unscoped caller still sees every client.
    agency::mcp::Principal all;
    all.name = "key:all";
    EXPECT_GE(h.call_as(all, "list_clients", json::object()).structured()["rows"].size(), 3u);
}

TEST_F(ClientScopes, ACursorOfAnotherCallerDoesNotOpen) {
    agency::mcp::Principal all;
    all.name = "key:all";
    const ToolReply page = h.call_as(all, "list_keywords", {{"client_id", "demo-law"}, {"limit", 1}});
    ASSERT_TRUE(page.structured().contains("next_cursor")) << page.response.dump();
    const std::size_t before = h.requests();
    const ToolReply replay = h.call_as(
        law, "list_keywords",
        {{"client_id", "demo-law"}, {"limit", 1}, {"cursor", page.structured()["next_cursor"]}});
    EXPECT_TRUE(replay.rpc_error != 0 || replay.is_error()) << replay.response.dump();
    EXPECT_EQ(h.requests(), before);
}

TEST_F(ClientScopes, ResourcesListAndEveryClientTemplateHideAnotherClient) {
    const json listed = rpc(law, "resources/list", json::object());
    const std::string text = listed.dump();
    EXPECT_NE(text.find("agency://clients/demo-law/overview"), std::string::npos) << text;
    EXPECT_EQ(text.find(kOther), std::string::npos) << text;
    EXPECT_EQ(text.find("demo-dental"), std::string::npos) << text;

    for (const std::string tail : {"/overview", "/audits/r1", "/articles/a1", "/write-log"}) {
        const std::size_t before = h.requests();
        const json other =
            rpc(law, "resources/read", {{"uri", std::string("agency://clients/") + kOther + tail}});
        const json nowhere = rpc(
            law, "resources/read", {{"uri", std::string("agency://clients/") + kNowhere + tail}});
        EXPECT_EQ(h.requests(), before) << tail;
        ASSERT_TRUE(other.contains("error")) << tail << ": " << other.dump();
        EXPECT_EQ(neutral(other, kOther), neutral(nowhere, kNowhere)) << tail;
    }
    // In scope it reads.
    const json mine = rpc(law, "resources/read", {{"uri", "agency://clients/demo-law/overview"}});
    EXPECT_TRUE(mine.contains("result")) << mine.dump().substr(0, 400);
}

TEST_F(ClientScopes, PromptsRefuseAnotherClientAsAnUnknownOne) {
    int tried = 0;
    const json prompts = rpc(law, "prompts/list", json::object());
    for (const json& prompt : prompts["result"]["prompts"]) {
        bool takes_client = false;
        json args = json::object();
        for (const json& a : prompt["arguments"]) {
            if (a["name"] == "client_id") takes_client = true;
            else if (a.value("required", false)) args[a["name"].get<std::string>()] = "pipes";
        }
        if (!takes_client) continue;
        ++tried;
        const std::string name = prompt["name"];
        json other_args = args, nowhere_args = args, own_args = args;
        other_args["client_id"] = kOther;
        nowhere_args["client_id"] = kNowhere;
        own_args["client_id"] = "demo-law";
        const json other = rpc(law, "prompts/get", {{"name", name}, {"arguments", other_args}});
        const json nowhere = rpc(law, "prompts/get", {{"name", name}, {"arguments", nowhere_args}});
        ASSERT_TRUE(other.contains("error")) << name << ": " << other.dump();
        EXPECT_EQ(neutral(other, kOther), neutral(nowhere, kNowhere)) << name;
        EXPECT_TRUE(rpc(law, "prompts/get", {{"name", name}, {"arguments", own_args}})
                        .contains("result"))
            << name;
    }
    EXPECT_GE(tried, 3);
}

TEST_F(ClientScopes, CompletionOffersOnlyTheScopesClientsAndNothingOfAnother) {
    const json ids = rpc(law, "completion/complete",
                         {{"ref", {{"type", "ref/prompt"}, {"name", "monthly_client_report"}}},
                          {"argument", {{"name", "client_id"}, {"value", "demo"}}}});
    ASSERT_TRUE(ids.contains("result")) << ids.dump();
    EXPECT_EQ(ids["result"]["completion"]["values"], json::array({"demo-law"}));
    EXPECT_EQ(ids["result"]["completion"]["total"], 1);

    const json ref = {{"type", "ref/resource"},
                      {"uri", "agency://clients/{client_id}/audits/{report_id}"}};
    const std::size_t before = h.requests();
    const json other = rpc(law, "completion/complete",
                           {{"ref", ref},
                            {"argument", {{"name", "report_id"}, {"value", ""}}},
                            {"context", {{"arguments", {{"client_id", kOther}}}}}});
    const json nowhere = rpc(law, "completion/complete",
                             {{"ref", ref},
                              {"argument", {{"name", "report_id"}, {"value", ""}}},
                              {"context", {{"arguments", {{"client_id", kNowhere}}}}}});
    EXPECT_EQ(h.requests(), before);
    EXPECT_EQ(neutral(other, kOther), neutral(nowhere, kNowhere));
    EXPECT_EQ(other["result"]["completion"]["values"], json::array());
}

// Ids made by someone else (an audit job, a task) read as unknown ones; ids of the caller's own
// stay its own (the binding to the principal, checked here for the scoped caller).
TEST_F(ClientScopes, AnotherCallersAuditJobAndTaskIdsReadAsUnknown) {
    agency::mcp::Principal all;
    all.name = "key:all";
    all.authenticated = true;
    const ToolReply queued = h.call_as(
        all, "run_seo_audit", {{"client_id", "demo-law"}, {"url", "https://example.com/"}});
    ASSERT_FALSE(queued.is_error()) << queued.response.dump();
    const std::string audit_id = queued.structured().value("audit_id", "");
    ASSERT_FALSE(audit_id.empty()) << queued.structured().dump();
    const ToolReply theirs =
        h.call_as(law, "get_audit_status", {{"client_id", "demo-law"}, {"audit_id", audit_id}});
    const ToolReply none =
        h.call_as(law, "get_audit_status", {{"client_id", "demo-law"}, {"audit_id", "nojob"}});
    EXPECT_EQ(theirs.reason(), "not_found") << theirs.response.dump();
    EXPECT_EQ(neutral(theirs.response, audit_id), neutral(none.response, "nojob"));
    const json job = rpc(law, "resources/read", {{"uri", "agency://audit-jobs/" + audit_id}});
    const json nojob = rpc(law, "resources/read", {{"uri", "agency://audit-jobs/nojob"}});
    EXPECT_EQ(neutral(job, audit_id), neutral(nojob, "nojob"));

}

// As MCP tasks (a client that declares the tasks extension): a task for another client is
// never made, the call is refused at once as the one for an unknown client is, with no gateway
// request; and another caller's task id reads as an unknown one.
TEST_F(ClientScopes, TasksForAnotherClientAreRefusedAsForAnUnknownOneAndOthersStayHidden) {
    const auto finished = [&](const agency::mcp::Principal& who, const std::string& id) {
        json r;
        (void)agency::testing::eventually(
            [&] {
                r = task_request(who, "tasks/get", {{"taskId", id}});
                const std::string s = r["result"].value("status", "");
                return s == "completed" || s == "failed" || s == "cancelled";
            },
            std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
        return r;
    };
    const std::size_t before = h.requests();
    json ends[2];
    const char* clients[2] = {kOther, kNowhere};
    for (int i = 0; i < 2; ++i) {
        ends[i] = task_request(
            law, "tools/call",
            {{"name", "run_seo_audit"},
             {"arguments", {{"client_id", clients[i]}, {"url", "https://example.com/a"}}}});
        EXPECT_NE(ends[i]["result"].value("resultType", ""), "task") << ends[i].dump();
        EXPECT_TRUE(ends[i]["result"].value("isError", false)) << ends[i].dump();
    }
    EXPECT_EQ(h.requests(), before);
    EXPECT_EQ(neutral(ends[0], kOther), neutral(ends[1], kNowhere));
    EXPECT_NE(ends[0].dump().find("not_found"), std::string::npos) << ends[0].dump();

    agency::mcp::Principal all;
    all.name = "key:all";
    all.authenticated = true;
    const json theirs = task_request(
        all, "tools/call",
        {{"name", "run_seo_audit"},
         {"arguments", {{"client_id", "demo-law"}, {"url", "https://example.com/b"}}}});
    const std::string their_id = theirs["result"].value("taskId", "");
    ASSERT_FALSE(their_id.empty()) << theirs.dump();
    const json peek = task_request(law, "tasks/get", {{"taskId", their_id}});
    const json none = task_request(law, "tasks/get", {{"taskId", "no-such-task"}});
    EXPECT_TRUE(peek.contains("error")) << peek.dump();
    EXPECT_EQ(neutral(peek, their_id), neutral(none, "no-such-task"));
    finished(all, their_id);
}

// Issue 45, finding 11: a key narrowed after it started a task on a client reads that task as
// an unknown one (tasks/get, tasks/result, tasks/cancel, both eras), tasks/list leaves it out,
// and its audit job is unknown to get_audit_status and the audit-jobs resource. Widened again,
// the key finds it where it was.
TEST_F(ClientScopes, ATaskOfAClientTheKeyNoLongerReachesReadsAsUnknown) {
    const auto wide = scoped({"demo-law", kOther});  // key:law before `keys update`
    const auto& narrow = law;                         // key:law after --clients demo-law
    auto session = h.server->create_session(agency::crypto::random_hex(16));
    h.server->register_session(session);
    const auto legacy = [&](const agency::mcp::Principal& who, const std::string& method,
                            json params) {
        agency::mcp::Inbound in;
        in.era = agency::mcp::Era::legacy;
        in.session = session;
        in.principal = who;
        in.http = true;
        const json message = {{"jsonrpc", "2.0"}, {"id", h.next_id++}, {"method", method},
                              {"params", std::move(params)}};
        auto text = h.server->handle_message(message, in);
        return text ? json::parse(text->text) : json();
    };
    legacy(wide, "initialize",
           {{"protocolVersion", "2025-11-25"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    const auto start_audit = [&](const std::string& client) {
        const json created = legacy(
            wide, "tools/call",
            {{"name", "run_seo_audit"},
             {"arguments", {{"client_id", client}, {"url", "https://example.com/" + client}}},
             {"task", {{"ttl", 60000}}}});
        return created["result"]["task"].value("taskId", "");
    };
    const std::string theirs = start_audit(kOther), mine = start_audit("demo-law");
    ASSERT_FALSE(theirs.empty());
    ASSERT_FALSE(mine.empty());
    // Both end while the key still reaches both clients (tasks/result waits for the end).
    const json ended = legacy(wide, "tasks/result", {{"taskId", theirs}});
    ASSERT_TRUE(ended.contains("result")) << ended.dump();
    const std::string audit_id = ended["result"]["structuredContent"].value("audit_id", "");
    EXPECT_FALSE(audit_id.empty()) << ended.dump();
    ASSERT_FALSE(legacy(wide, "tasks/result", {{"taskId", mine}}).contains("error"));

    // Narrowed: every task method answers as for an id that does not exist.
    const std::string made_up = agency::crypto::random_hex(16);
    for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
        const json got = legacy(narrow, method, {{"taskId", theirs}});
        EXPECT_TRUE(got.contains("error")) << method << ": " << got.dump();
        EXPECT_EQ(neutral(got, theirs),
                  neutral(legacy(narrow, method, {{"taskId", made_up}}), made_up))
            << method;
        EXPECT_EQ(got.dump().find(kOther), std::string::npos) << method;
    }
    EXPECT_FALSE(legacy(narrow, "tasks/get", {{"taskId", mine}}).contains("error"));
    const json listed = legacy(narrow, "tasks/list", json::object());
    ASSERT_EQ(listed["result"]["tasks"].size(), 1u) << listed.dump();
    EXPECT_EQ(listed["result"]["tasks"][0]["taskId"], mine);

    // Its audit job: unknown to the status tool (the client is refused first) and the resource.
    if (!audit_id.empty()) {
        EXPECT_EQ(h.call_as(narrow, "get_audit_status",
                            {{"client_id", kOther}, {"audit_id", audit_id}})
                      .reason(),
                  "not_found");
        const json job =
            rpc(narrow, "resources/read", {{"uri", "agency://audit-jobs/" + audit_id}});
        const json nojob = rpc(narrow, "resources/read", {{"uri", "agency://audit-jobs/nojob"}});
        EXPECT_EQ(neutral(job, audit_id), neutral(nojob, "nojob"));
    }

    // The 2026-07-28 tasks extension: the same.
    const json created = task_request(
        wide, "tools/call",
        {{"name", "run_seo_audit"},
         {"arguments", {{"client_id", kOther}, {"url", "https://example.com/m"}}}});
    const std::string modern_id = created["result"].value("taskId", "");
    ASSERT_FALSE(modern_id.empty()) << created.dump();
    EXPECT_FALSE(task_request(wide, "tasks/get", {{"taskId", modern_id}}).contains("error"));
    for (const char* method : {"tasks/get", "tasks/cancel"}) {
        const json got = task_request(narrow, method, {{"taskId", modern_id}});
        EXPECT_TRUE(got.contains("error")) << method << ": " << got.dump();
        EXPECT_EQ(neutral(got, modern_id),
                  neutral(task_request(narrow, method, {{"taskId", made_up}}), made_up))
            << method;
    }

    // Widened again, the key reads its task as before.
    EXPECT_FALSE(legacy(wide, "tasks/get", {{"taskId", theirs}}).contains("error"));
    // Let the modern task end before the harness goes.
    (void)agency::testing::eventually(
        [&] {
            const std::string s = task_request(wide, "tasks/get", {{"taskId", modern_id}})["result"]
                                      .value("status", "");
            return s == "completed" || s == "failed" || s == "cancelled";
        },
        std::chrono::milliseconds(5000), std::chrono::milliseconds(10));
}

}  // namespace

namespace {

// An idempotency key another caller used for another client replays nothing to the scoped
// caller: the call is refused as for an unknown client before the replay stage, and the same key
// for its own client is a call of its own (a new POST, not the other caller's answer).
TEST_F(ClientScopes, AnotherCallersIdempotencyKeyReplaysNothing) {
    agency::mcp::Principal all;
    all.name = "key:all";
    const json theirs = {{"client_id", kOther}, {"topic", "drains"}, {"idempotency_key", "k-1"}};
    ASSERT_FALSE(h.call_as(all, "generate_gbp_post", theirs).is_error());
    const std::size_t posts = t.posts("generate_gbp_post");
    const ToolReply replay = h.call_as(law, "generate_gbp_post", theirs);
    json nowhere_args = theirs;
    nowhere_args["client_id"] = kNowhere;
    const ToolReply nowhere = h.call_as(law, "generate_gbp_post", nowhere_args);
    EXPECT_EQ(neutral(replay.response, kOther), neutral(nowhere.response, kNowhere));
    EXPECT_EQ(replay.response.dump().find("replayed"), std::string::npos);
    EXPECT_EQ(t.posts("generate_gbp_post"), posts);
    json mine = theirs;
    mine["client_id"] = "demo-law";
    const ToolReply own = h.call_as(law, "generate_gbp_post", mine);
    EXPECT_FALSE(own.is_error()) << own.response.dump();
    EXPECT_EQ(own.response.dump().find("replayed"), std::string::npos);
    EXPECT_EQ(t.posts("generate_gbp_post"), posts + 1);
}

}  // namespace
