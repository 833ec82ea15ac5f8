// `agency-mcp serve` options end to end: the real binary over stdio, against a sample gateway
// on a loopback port in this process (so its fault injection and request log are at hand).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "server/mcp_server.hpp"
#include "base/crypto.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/tool_call.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using agency::sample::FaultMode;

struct Served {
    int exit_code = -1;
    std::map<int, json> replies;  // by JSON-RPC id
    std::vector<json> notifications;
    std::string err;
    std::string out;  // stdout as written
};

// A modern (2026-07-28) tools/call line: stdio needs no initialize for it.
std::string call_line(int id, const std::string& tool, const json& args) {
    return agency::testing::modern_tool_call(id, tool, args).dump();
}

class ServeCli : public ::testing::Test {
protected:
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};
    fs::path dir = fs::temp_directory_path() / ("agency-cli-" + agency::crypto::random_hex(6));

    void SetUp() override {
        gateway_server.start("127.0.0.1", 0);
        fs::create_directories(dir);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    // Runs `env ENV agency-mcp serve ARGS` with `lines` on stdin until it ends.
    Served serve(const std::string& env, const std::string& args,
              const std::vector<std::string>& lines) {
        return run_binary(env, "--gateway-url " + gateway_server.base_url() + " " + args, lines);
    }

    // Without any gateway configured: the built-in sample gateway answers.
    Served serve_sample(const std::string& env, const std::string& args,
                        const std::vector<std::string>& lines) {
        return run_binary("-u AGENCY_GATEWAY_URL -u AGENCY_STRUCTURED_TEXT " + env, args, lines);
    }

    Served run_binary(const std::string& env, const std::string& args,
                      const std::vector<std::string>& lines) {
        const fs::path in = dir / "in.jsonl";
        const fs::path err = dir / "err.txt";
        {
            std::ofstream out(in);
            for (const auto& line : lines) out << line << "\n";
        }
        const std::string command =
            "env -u AGENCY_MAX_ACTIONS_IN_FLIGHT -u AGENCY_MAX_ACTIONS_PER_MINUTE " + env + " '" +
            AGENCY_BINARY + "' serve --state-db :memory: " + args + " < '" + in.string() +
            "' 2> '" + err.string() + "'";
        Served run;
        FILE* pipe = popen(command.c_str(), "r");
        if (!pipe) return run;
        std::string out;
        char buffer[4096];
        while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
        const int status = pclose(pipe);
        run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        run.out = out;
        std::istringstream replies(out);
        for (std::string line; std::getline(replies, line);) {
            json reply = json::parse(line, nullptr, false);
            if (reply.is_object() && reply["id"].is_number_integer())
                run.replies[reply["id"].get<int>()] = reply;
            else if (reply.is_object() && reply.contains("method"))
                run.notifications.push_back(reply);
        }
        std::ifstream err_in(err);
        run.err.assign(std::istreambuf_iterator<char>(err_in), {});
        return run;
    }

    // Two generation calls for one client sent together, the gateway slow enough that the
    // first is still running when the second arrives.
    Served two_concurrent_calls(const std::string& env, const std::string& args) {
        gw->inject({.target = "generate_topical_map", .mode = FaultMode::slow, .delay_ms = 600});
        return serve(env, args,
                     {call_line(1, "generate_topical_map",
                                {{"client_id", "demo-dental"}, {"topic", "implants"}}),
                      call_line(2, "generate_topical_map",
                                {{"client_id", "demo-dental"}, {"topic", "whitening"}})});
    }
};

// {"reason", "message"} of a tool error reply; null when the call succeeded.
json tool_error(const json& reply) {
    const json& result = reply["result"];
    if (!result.value("isError", false)) return nullptr;
    return json::parse(result["content"][0].value("text", ""), nullptr, false).value("error", json());
}

// Checks that exactly one of the two calls ran and the other was refused as rate_limited.
void expect_one_refused(const Served& run, const std::string& refusal_says) {
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.replies.size(), 2u) << run.err;
    int refused = 0;
    for (const auto& [id, reply] : run.replies) {
        const json error = tool_error(reply);
        if (error.is_null()) continue;
        ++refused;
        EXPECT_EQ(error.value("reason", ""), "rate_limited") << reply.dump();
        EXPECT_NE(error.value("message", "").find(refusal_says), std::string::npos)
            << reply.dump();
    }
    EXPECT_EQ(refused, 1);
}

}  // namespace

TEST_F(ServeCli, InFlightFlagRefusesTheSecondConcurrentCall) {
    Served run = two_concurrent_calls("", "--max-actions-in-flight-per-client 1");
    expect_one_refused(run, "at most 1 at once");
    EXPECT_EQ(gw->count_requests("POST", "generate_topical_map"), 1u) << "the refused call sent nothing";
}

TEST_F(ServeCli, InFlightEnvironmentVariableRefusesTheSecondConcurrentCall) {
    Served run = two_concurrent_calls("AGENCY_MAX_ACTIONS_IN_FLIGHT=1", "");
    expect_one_refused(run, "at most 1 at once");
    EXPECT_EQ(gw->count_requests("POST", "generate_topical_map"), 1u);
}

TEST_F(ServeCli, PerMinuteEnvironmentVariableCapsCalls) {
    Served run = two_concurrent_calls("AGENCY_MAX_ACTIONS_PER_MINUTE=1", "");
    expect_one_refused(run, "cap of 1 generation actions per minute");
    EXPECT_EQ(gw->count_requests("POST", "generate_topical_map"), 1u);
}

TEST_F(ServeCli, DefaultLimitsLetTwoConcurrentCallsRun) {
    Served run = two_concurrent_calls("", "");
    ASSERT_EQ(run.replies.size(), 2u) << run.err;
    for (const auto& [id, reply] : run.replies) EXPECT_TRUE(tool_error(reply).is_null()) << reply.dump();
    EXPECT_EQ(gw->count_requests("POST", "generate_topical_map"), 2u);
}

TEST_F(ServeCli, BadLimitValuesAreRefusedBeforeAnything) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "--max-actions-in-flight-per-client 0"},
        {"", "--max-actions-per-minute-per-client abc"},
        {"", "--max-actions-in-flight-per-client 2x"},
        {"", "--max-actions-per-minute-per-client 99999999999"},
        {"AGENCY_MAX_ACTIONS_IN_FLIGHT=-3", ""},
        {"AGENCY_MAX_ACTIONS_PER_MINUTE=1.5", ""},
    };
    for (const auto& [env, args] : cases) {
        SCOPED_TRACE(env + args);
        Served run = serve(env, args,
                        {call_line(1, "generate_topical_map",
                                   {{"client_id", "demo-dental"}, {"topic", "x"}})});
        EXPECT_NE(run.exit_code, 0);
        EXPECT_TRUE(run.replies.empty());
        EXPECT_NE(run.err.find("must be a positive whole number"), std::string::npos) << run.err;
        EXPECT_NE(run.err.find("--max-actions-"), std::string::npos) << run.err;
    }
    EXPECT_TRUE(gw->request_log().empty()) << "nothing reached the gateway";
}

// `serve --read-only`: the real binary lists no action tool and refuses one by name with
// reason scope, without a single gateway POST.
TEST_F(ServeCli, ReadOnlyHidesAndRefusesActionToolsWithoutAnyPost) {
    const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    const std::string list =
        json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", {{"_meta", meta}}}}
            .dump();
    Served run = serve("", "--read-only",
                       {list, call_line(2, "generate_topical_map",
                                        {{"client_id", "demo-dental"}, {"topic", "implants"}}),
                        call_line(3, "list_clients", json::object())});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.replies.size(), 3u) << run.err;
    std::vector<std::string> listed;
    for (const auto& t : run.replies[1]["result"]["tools"]) listed.push_back(t["name"]);
    EXPECT_NE(std::find(listed.begin(), listed.end(), "list_clients"), listed.end());
    for (const char* action : {"generate_topical_map", "run_seo_audit", "deploy_article",
                               "send_prospect_email", "generate_article"})
        EXPECT_EQ(std::find(listed.begin(), listed.end(), action), listed.end()) << action;
    EXPECT_EQ(tool_error(run.replies[2]).value("reason", ""), "scope") << run.replies[2].dump();
    EXPECT_TRUE(tool_error(run.replies[3]).is_null()) << "reads still work";
    for (const auto& r : gw->request_log()) EXPECT_NE(r.method, "POST") << r.target;
}

namespace {

const char* kSampleKey = "agency-mcp/sample-data";

json line_of(int id, const std::string& method, json params) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

// A legacy session over stdio: initialize, initialized, then `more`.
std::vector<std::string> legacy_lines(const std::vector<json>& more) {
    std::vector<std::string> lines = {
        line_of(1, "initialize",
                {{"protocolVersion", "2025-06-18"},
                 {"capabilities", json::object()},
                 {"clientInfo", {{"name", "t"}, {"version", "1"}}}})
            .dump(),
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})"};
    for (const auto& m : more) lines.push_back(m.dump());
    return lines;
}

}  // namespace

// With no gateway configured, the assistant is told the answers are sample data: in the
// title, first in the instructions (both eras), and in every answer's _meta.
TEST_F(ServeCli, SampleDataIsSaidWhereTheAssistantSeesIt) {
    std::vector<std::string> lines = legacy_lines(
        {line_of(2, "tools/call", {{"name", "list_clients"}, {"arguments", json::object()}}),
         line_of(3, "tools/call",
                 {{"name", "get_client"}, {"arguments", {{"client_id", "no-such-client"}}}})});
    lines.push_back(line_of(4, "server/discover", {{"_meta", modern_meta()}}).dump());
    lines.push_back(call_line(5, "list_clients", json::object()));
    Served run = serve_sample("", "", lines);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.replies.size(), 5u) << run.err;
    const json& init = run.replies[1]["result"];
    EXPECT_EQ(init["serverInfo"]["title"], "Agency MCP (sample data: no gateway configured)");
    const std::string instructions = init["instructions"];
    EXPECT_EQ(instructions.rfind("Every answer from this server is built-in sample data, not a "
                                 "real agency's",
                                 0),
              0u)
        << instructions;
    EXPECT_NE(instructions.find("AGENCY_GATEWAY_URL"), std::string::npos);
    EXPECT_NE(instructions.find("AGENCY_API_KEY"), std::string::npos);
    EXPECT_EQ(run.replies[4]["result"]["instructions"], instructions);
    EXPECT_EQ(run.replies[4]["result"]["serverInfo"]["title"], init["serverInfo"]["title"]);
    for (int id : {2, 3, 5}) {
        EXPECT_EQ(run.replies[id]["result"]["_meta"][kSampleKey], true) << run.replies[id].dump();
    }
    EXPECT_TRUE(run.replies[3]["result"]["isError"].get<bool>()) << "a tool error carries it too";
    // Legacy: the whole JSON as text; modern: every row in compact lines.
    const json& legacy_call = run.replies[2]["result"];
    EXPECT_EQ(json::parse(legacy_call["content"][0]["text"].get<std::string>()),
              legacy_call["structuredContent"]);
    const std::string compact = run.replies[5]["result"]["content"][0]["text"];
    EXPECT_NE(compact.find("rows (3):\nid | name |"), std::string::npos) << compact;
    EXPECT_NE(compact.find("demo-plumbing | Acme Plumbing |"), std::string::npos) << compact;
}

TEST_F(ServeCli, ConfiguredGatewayAnswersCarryNoSampleFlag) {
    Served run = serve("", "",
                       legacy_lines({line_of(2, "tools/call",
                                             {{"name", "list_clients"},
                                              {"arguments", json::object()}})}));
    ASSERT_EQ(run.replies.size(), 2u) << run.err;
    EXPECT_EQ(run.replies[1]["result"]["serverInfo"]["title"], "Agency MCP");
    EXPECT_EQ(run.replies[1]["result"]["instructions"].get<std::string>().find("sample data"),
              std::string::npos);
    // No sample flag; the gateway's rows are marked as third-party text all the same.
    const json meta = run.replies[2]["result"].value("_meta", json::object());
    EXPECT_FALSE(meta.contains("agency-mcp/sample-data")) << run.replies[2].dump();
    EXPECT_EQ(meta.value("agency-mcp/untrusted", false), true) << run.replies[2].dump();
}

TEST_F(ServeCli, StructuredTextOptionAndVariable) {
    const auto legacy_call = legacy_lines(
        {line_of(2, "tools/call", {{"name", "list_clients"}, {"arguments", json::object()}})});
    Served summary = serve("", "--structured-text summary", legacy_call);
    ASSERT_EQ(summary.replies.size(), 2u) << summary.err;
    EXPECT_NE(summary.replies[2]["result"]["content"][0]["text"].get<std::string>().find(
                  "Full rows in structuredContent"),
              std::string::npos);
    Served full = serve("AGENCY_STRUCTURED_TEXT=full", "",
                        {call_line(1, "list_clients", json::object())});
    ASSERT_EQ(full.replies.size(), 1u) << full.err;
    const json& r = full.replies[1]["result"];
    EXPECT_EQ(json::parse(r["content"][0]["text"].get<std::string>()), r["structuredContent"]);
    // compact in a legacy session too: every row as a table line.
    Served compact = serve("", "--structured-text compact", legacy_call);
    ASSERT_EQ(compact.replies.size(), 2u) << compact.err;
    const std::string text = compact.replies[2]["result"]["content"][0]["text"];
    EXPECT_NE(text.find("rows (3):\nid | name |"), std::string::npos) << text;
    Served bad = serve("", "--structured-text everything", {});
    EXPECT_NE(bad.exit_code, 0);
}

// A gateway that never answers: the call ends inside --call-timeout, says the real figures,
// and a caller that asked for progress hears each retry.
TEST_F(ServeCli, CallTimeoutBoundsASilentGatewayAndRetriesAreProgress) {
    gw->inject({.target = "clients", .mode = FaultMode::slow, .count = 10, .delay_ms = 3000});
    json params = {{"name", "list_clients"},
                   {"arguments", json::object()},
                   {"_meta", modern_meta()}};
    params["_meta"]["progressToken"] = "t1";
    Served run = serve("AGENCY_GATEWAY_READ_TIMEOUT_S=1", "--call-timeout 2.5",
                       {line_of(1, "tools/call", params).dump()});
    ASSERT_EQ(run.replies.size(), 1u) << run.err;
    const json error = tool_error(run.replies[1]);
    ASSERT_TRUE(error.is_object()) << run.replies[1].dump() << run.err;
    EXPECT_EQ(error.value("reason", ""), "unavailable") << run.replies[1].dump();
    const std::string message = error.value("message", "");
    EXPECT_NE(message.find("the call's budget of 2.5 s"), std::string::npos) << message;
    EXPECT_NE(message.find("no answer within 1 s"), std::string::npos) << message;
    ASSERT_FALSE(run.notifications.empty()) << run.err;
    const json& note = run.notifications.front();
    EXPECT_EQ(note["method"], "notifications/progress");
    EXPECT_EQ(note["params"]["progressToken"], "t1");
    EXPECT_NE(note["params"]["message"].get<std::string>().find("attempt 2 of"),
              std::string::npos)
        << note.dump();
    Served env = serve("AGENCY_CALL_TIMEOUT=0", "", {});
    EXPECT_NE(env.exit_code, 0) << "the variable is checked like the option";
}

// `serve --monthly-actions` (AGENCY_MONTHLY_ACTIONS) end to end: the local caller's third
// generation with a budget of 2 is refused with reason budget and never sent; 0 refuses every
// generation; a bad value or window is refused before anything.
TEST_F(ServeCli, MonthlyActionsBudgetRefusesPastItWithoutAPost) {
    const auto ideas = [](int id) {
        return call_line(id, "generate_keyword_ideas",
                         {{"client_id", "demo-dental"}, {"seed", "s" + std::to_string(id)}});
    };
    Served run = serve("-u AGENCY_MONTHLY_ACTIONS", "--monthly-actions 2 --budget-window week",
                       {ideas(1), ideas(2), ideas(3)});
    ASSERT_EQ(run.replies.size(), 3u) << run.err;
    int refused = 0;
    for (const auto& [id, reply] : run.replies) {
        const json error = tool_error(reply);
        if (error.is_null()) continue;
        ++refused;
        EXPECT_EQ(error.value("reason", ""), "budget") << reply.dump();
        EXPECT_EQ(error["budget"]["limit"], 2);
        EXPECT_EQ(error["budget"]["window"], "week");
    }
    EXPECT_EQ(refused, 1);
    EXPECT_EQ(gw->count_requests("POST", "generate_keywords"), 2u);

    Served none = serve("AGENCY_MONTHLY_ACTIONS=0", "", {ideas(1)});
    ASSERT_EQ(none.replies.size(), 1u) << none.err;
    EXPECT_EQ(tool_error(none.replies[1]).value("reason", ""), "budget");
    EXPECT_EQ(gw->count_requests("POST", "generate_keywords"), 2u);

    for (const std::string bad : {"--monthly-actions -1", "--monthly-actions lots",
                                   "--budget-window year"}) {
        Served refused_run = serve("-u AGENCY_MONTHLY_ACTIONS", bad, {ideas(1)});
        EXPECT_NE(refused_run.exit_code, 0) << bad;
        EXPECT_TRUE(refused_run.replies.empty()) << bad;
        EXPECT_NE(refused_run.err.find(bad.substr(0, bad.find(' '))), std::string::npos)
            << refused_run.err;
    }
    EXPECT_EQ(gw->count_requests("POST", "generate_keywords"), 2u);
}

// Issue 50: `serve --help` shows what a first run needs (at most 35 options); the HTTP limits,
// OAuth and tuning groups are in --help-all, which lists every option docs/operations.md's
// generated table has; each option's variable is read by the parser and checked like the option.
TEST_F(ServeCli, HelpShowsAFirstRunsOptionsAndHelpAllEveryGroup) {
    const auto options_in = [](const std::string& help) {
        std::vector<std::string> names;
        std::istringstream lines(help);
        for (std::string line; std::getline(lines, line);) {
            const auto at = line.find_first_not_of(' ');
            if (at == std::string::npos || at == 0 || line[at] != '-') continue;
            const auto dashes = line.find("--", at);
            if (dashes == std::string::npos) continue;
            names.push_back(line.substr(dashes, line.find_first_of(" ,", dashes) - dashes));
        }
        return names;
    };
    const Served help = run_binary("", "--help", {});
    ASSERT_EQ(help.exit_code, 0) << help.err;
    const auto shown = options_in(help.out);
    EXPECT_LE(shown.size(), 35u) << help.out;
    for (const char* first_run : {"--gateway-url", "--api-key-file", "--listen", "--keys-file",
                                  "--state-db", "--http", "--help-all"})
        EXPECT_NE(std::find(shown.begin(), shown.end(), first_run), shown.end()) << first_run;
    EXPECT_EQ(std::find(shown.begin(), shown.end(), "--http-max-connections"), shown.end());
    EXPECT_NE(help.out.find("HTTP limits (16 options)"), std::string::npos) << help.out;

    const Served all = run_binary("", "--help-all", {});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    const auto every = options_in(all.out);
    for (const char* heading : {"\nHTTP limits:\n", "\nOAuth:\n", "\nTuning:\n"})
        EXPECT_NE(all.out.find(heading), std::string::npos) << heading;
    FILE* pipe = popen(("'" + std::string(AGENCY_BINARY) + "' tools-doc --settings").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string table;
    char buffer[4096];
    while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) table.append(buffer, n);
    ASSERT_EQ(pclose(pipe), 0);
    std::size_t rows = 0;
    std::istringstream lines(table);
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("| `--")) continue;
        const std::string name = line.substr(3, line.find('`', 3) - 3);
        if (name == "--version" || name.starts_with("--log-")) continue;  // global options
        ++rows;
        EXPECT_NE(std::find(every.begin(), every.end(), name), every.end()) << name;
    }
    EXPECT_EQ(rows + 2, every.size()) << "every serve option, and -h and --help-all";
}

// The tuning variables (once read beside the parser) are the parser's now: a bad value is
// refused naming the option and its range, before the gateway is asked anything.
TEST_F(ServeCli, TuningVariablesAreCheckedLikeTheirOptions) {
    for (const auto& [env, option] :
         std::vector<std::pair<std::string, std::string>>{
             {"AGENCY_GATEWAY_READ_TIMEOUT_S=0", "--gateway-read-timeout"},
             {"AGENCY_GATEWAY_ACTION_TIMEOUT_S=abc", "--gateway-action-timeout"},
             {"AGENCY_STATE_LEASE_MS=5", "--state-lease-ms"}}) {
        SCOPED_TRACE(env);
        const Served run = serve(env, "", {call_line(1, "list_clients", json::object())});
        EXPECT_NE(run.exit_code, 0);
        EXPECT_TRUE(run.replies.empty());
        EXPECT_NE(run.err.find(option + ": "), std::string::npos) << run.err;
        EXPECT_NE(run.err.find("(from $" + env.substr(0, env.find('=')) + ";"), std::string::npos)
            << run.err;
    }
    const Served given = serve("", "--gateway-read-timeout 0", {});
    EXPECT_NE(given.exit_code, 0);
    EXPECT_NE(given.err.find("--gateway-read-timeout: "), std::string::npos) << given.err;
    EXPECT_EQ(given.err.find("(from $"), std::string::npos) << given.err;
    EXPECT_TRUE(gw->request_log().empty()) << "nothing reached the gateway";
}
