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

#include "gateway/sample/sample_gateway.hpp"
#include "base/crypto.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using agency::sample::FaultMode;

struct Served {
    int exit_code = -1;
    std::map<int, json> replies;  // by JSON-RPC id
    std::string err;
};

// A modern (2026-07-28) tools/call line: stdio needs no initialize for it.
std::string call_line(int id, const std::string& tool, const json& args) {
    return json{{"jsonrpc", "2.0"},
                {"id", id},
                {"method", "tools/call"},
                {"params",
                 {{"name", tool},
                  {"arguments", args},
                  {"_meta",
                   {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                    {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
        .dump();
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
        const fs::path in = dir / "in.jsonl";
        const fs::path err = dir / "err.txt";
        {
            std::ofstream out(in);
            for (const auto& line : lines) out << line << "\n";
        }
        const std::string command =
            "env -u AGENCY_MAX_ACTIONS_IN_FLIGHT -u AGENCY_MAX_ACTIONS_PER_MINUTE " + env + " '" +
            AGENCY_BINARY + "' serve --state-db :memory: --gateway-url " +
            gateway_server.base_url() + " " + args + " < '" + in.string() + "' 2> '" +
            err.string() + "'";
        Served run;
        FILE* pipe = popen(command.c_str(), "r");
        if (!pipe) return run;
        std::string out;
        char buffer[4096];
        while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
        const int status = pclose(pipe);
        run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        std::istringstream replies(out);
        for (std::string line; std::getline(replies, line);) {
            json reply = json::parse(line, nullptr, false);
            if (reply.is_object() && reply["id"].is_number_integer())
                run.replies[reply["id"].get<int>()] = reply;
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
