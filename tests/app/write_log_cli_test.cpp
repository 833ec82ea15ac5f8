// The write log and the rate limit through the real binary: serve over stdio records an action
// call that `write-log` then prints (JSON lines, CSV safe to open in a spreadsheet, filters);
// `write-log prune` deletes only what is older than --before and records itself; --rate-limit
// refuses a caller over it and refuses a malformed value at start.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "tests/run_binary.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/paths.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using agency::testing::Outcome;

class WriteLogCli : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-wlog-cli-" + agency::crypto::random_hex(6));
    std::string db;
    void SetUp() override {
        fs::create_directories(dir);
        db = (dir / "state.db").string();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    Outcome run(const std::string& args, const std::string& stdin_text = "") {
        return agency::testing::run_command(
            dir,
            "env -u AGENCY_GATEWAY_URL -u AGENCY_STATE_URL -u AGENCY_STATE_DB "
            "-u AGENCY_RATE_LIMIT -u AGENCY_RATE_LIMIT_BURST '" +
                std::string(AGENCY_BINARY) + "' " + args,
            stdin_text);
    }
};

std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line));
    return out;
}

std::string request(int id, const std::string& method, const json& params) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() +
           "\n";
}

std::string session(const std::vector<std::string>& calls) {
    std::string text = request(0, "initialize",
                               {{"protocolVersion", "2025-11-25"},
                                {"capabilities", json::object()},
                                {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    text += R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n";
    for (const auto& c : calls) text += c;
    return text;
}

std::string call(int id, const std::string& tool, const json& args) {
    return request(id, "tools/call", {{"name", tool}, {"arguments", args}});
}

}  // namespace

TEST_F(WriteLogCli, ServedActionCallsAreReadBack) {
    const Outcome served = run(
        "serve --state-db '" + db + "'",
        session({call(1, "generate_topical_map", {{"client_id", "demo-dental"}, {"topic", "=1+1"}}),
                 call(2, "generate_topical_map", {{"client_id", "demo-law"}, {"topic", 7}})}));
    ASSERT_EQ(served.exit_code, 0) << served.err;

    const Outcome all = run("write-log --state-db '" + db + "'");
    ASSERT_EQ(all.exit_code, 0) << all.err;
    auto rows = json_lines(all.out);
    ASSERT_EQ(rows.size(), 2u) << all.out;
    // The calls ran on the stdio workers, in either order.
    if (rows[0]["outcome"] != "ok") std::swap(rows[0], rows[1]);
    EXPECT_EQ(rows[0]["principal"], "local");
    EXPECT_EQ(rows[0]["tool"], "generate_topical_map");
    EXPECT_EQ(rows[0]["outcome"], "ok");
    EXPECT_FALSE(rows[0].value("record_id", "").empty());
    EXPECT_EQ(rows[0]["confirmation"], "not_needed");
    EXPECT_EQ(rows[1]["outcome"], "refused");
    EXPECT_EQ(rows[1]["reason"], "validation");
    EXPECT_TRUE(rows[0]["at"].get<std::string>().ends_with("Z"));

    const Outcome law = run("write-log --client demo-law --state-db '" + db + "'");
    EXPECT_EQ(json_lines(law.out).size(), 1u) << law.out;
    const Outcome none = run("write-log --tool deploy_article --state-db '" + db + "'");
    EXPECT_EQ(json_lines(none.out).size(), 0u) << none.out;
    const Outcome future = run("write-log --since 2999-01-01 --state-db '" + db + "'");
    EXPECT_EQ(json_lines(future.out).size(), 0u) << future.out;
    const Outcome recent = run("write-log --since 1h --state-db '" + db + "'");
    EXPECT_EQ(json_lines(recent.out).size(), 2u) << recent.out;
    const Outcome bad = run("write-log --since yesterday --state-db '" + db + "'");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;

    // CSV: every cell quoted; the caller's "=1+1" cannot run as a formula.
    const Outcome csv = run("write-log --format csv --state-db '" + db + "'");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_TRUE(csv.out.starts_with("\"at\",\"principal\",\"tool\"")) << csv.out;
    EXPECT_NE(csv.out.find("\"\"topic\"\":\"\"=1+1\"\""), std::string::npos) << csv.out;
    std::istringstream lines(csv.out);
    for (std::string line; std::getline(lines, line);) {
        for (std::size_t at = line.find(",\""); at != std::string::npos;
             at = line.find(",\"", at + 1))
            EXPECT_EQ(std::string("=+-@").find(line[at + 2]), std::string::npos) << line;
    }
}

TEST_F(WriteLogCli, FormulaCellsAreNeutralised) {
    {
        agency::state::SqliteStore store(db);
        store.append_write_log({.principal = "=HYPERLINK(\"http://x\")",
                                .tool = "@SUM(A1)",
                                .client_id = "+1",
                                .outcome = "refused",
                                .detail = "-2 \"quoted\""});
    }
    const Outcome csv = run("write-log --format csv --state-db '" + db + "'");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_NE(csv.out.find(",\"'=HYPERLINK(\"\"http://x\"\")\","), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",\"'@SUM(A1)\","), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",\"'+1\","), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",\"'-2 \"\"quoted\"\"\","), std::string::npos) << csv.out;
}

// Issue 35: `write-log --caller` prints one caller's rows: a key by its name (or key:NAME), an
// OAuth caller by its principal, stdio as local; the limit counts that caller's rows alone.
TEST_F(WriteLogCli, CallerFiltersByPrincipal) {
    {
        agency::state::SqliteStore store(db);
        store.append_write_log({.at_ms = 1000, .principal = "key:alice", .tool = "deploy_article"});
        store.append_write_log({.at_ms = 2000, .principal = "key:bob", .tool = "deploy_article"});
        store.append_write_log({.at_ms = 3000,
                                .principal = "oauth:https://id.example alice",
                                .tool = "generate_article"});
        store.append_write_log({.at_ms = 4000, .principal = "local", .tool = "index_url"});
        store.append_write_log({.at_ms = 5000, .principal = "key:alice", .tool = "index_url"});
        store.append_write_log({.at_ms = 6000, .principal = "key:bob", .tool = "index_url"});
    }
    auto tools = [&](const std::string& args) {
        const Outcome got = run("write-log " + args + " --state-db '" + db + "'");
        EXPECT_EQ(got.exit_code, 0) << got.err;
        std::vector<std::string> out;
        for (const auto& row : json_lines(got.out))
            out.push_back(row.value("principal", "") + " " + row.value("tool", ""));
        return out;
    };
    const std::vector<std::string> alice{"key:alice deploy_article", "key:alice index_url"};
    EXPECT_EQ(tools("--caller alice"), alice);
    EXPECT_EQ(tools("--caller key:alice"), alice);
    EXPECT_EQ(tools("--caller 'oauth:https://id.example alice'"),
              (std::vector<std::string>{"oauth:https://id.example alice generate_article"}));
    EXPECT_EQ(tools("--caller local"), (std::vector<std::string>{"local index_url"}));
    EXPECT_EQ(tools("--caller bob --tool index_url"),
              (std::vector<std::string>{"key:bob index_url"}));
    EXPECT_EQ(tools("--caller bob --limit 1"),
              (std::vector<std::string>{"key:bob deploy_article"}));
    EXPECT_TRUE(tools("--caller carol").empty());
    const Outcome csv = run("write-log --caller alice --format csv --state-db '" + db + "'");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3) << csv.out;  // header + 2
}

TEST_F(WriteLogCli, PruneDeletesOnlyOlderRowsAndRecordsItself) {
    {
        agency::state::SqliteStore store(db);
        store.append_write_log({.at_ms = 1'000'000'000'000, .tool = "generate_article"});  // 2001
        store.append_write_log({.tool = "deploy_article"});                                  // now
    }
    const Outcome future = run("write-log prune --before 2999-01-01 --state-db '" + db + "'");
    EXPECT_NE(future.exit_code, 0);
    EXPECT_NE(future.err.find("future"), std::string::npos) << future.err;
    const Outcome missing = run("write-log prune --state-db '" + db + "'");
    EXPECT_NE(missing.exit_code, 0) << "--before is required";

    const Outcome pruned = run("write-log prune --before 2020-01-01 --state-db '" + db + "'");
    ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
    EXPECT_NE(pruned.out.find("deleted 1 row(s)"), std::string::npos) << pruned.out;
    EXPECT_NE(pruned.err.find("pruned 1 row(s)"), std::string::npos) << "logged: " << pruned.err;
    const auto rows = json_lines(run("write-log --state-db '" + db + "'").out);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["tool"], "deploy_article");
    EXPECT_EQ(rows[1]["tool"], "write-log prune");
    EXPECT_TRUE(rows[1].value("principal", "").starts_with("operator:"));
    EXPECT_EQ(rows[1]["args_summary"]["before"], "2020-01-01T00:00:00.000Z");
    EXPECT_NE(rows[1].value("detail", "").find("1 row(s) deleted"), std::string::npos);
}

// Issue 30: a caller's client_id, an argument's name or a gateway's record id may carry
// terminal escapes (ESC, BEL, the C1 CSI) and bidi controls. No export prints one raw: JSON
// lines and `state export` write them as \uXXXX (the same values once parsed), CSV as visible
// escapes.
TEST_F(WriteLogCli, ControlAndBidiCharactersAreEscapedInEveryExport) {
    const std::string client = "acme\x1b]0;owned\x07\x1b[2J";
    const std::string name = "topic\xc2\x9b" "31m";             // U+009B: the C1 CSI
    const std::string record = "bo_1\u202Egnp.exe\u2066x\u2069\u200F\u061C";
    const std::string detail = "line\r\nnext\x7f back\\slash";
    {
        agency::state::SqliteStore store(db);
        store.append_write_log({.principal = "key:\x1b[31mred",
                                .tool = "generate_article",
                                .client_id = client,
                                .args_summary = {{name, "v\xc2\x85"}},
                                .outcome = "refused",
                                .record_id = record,
                                .detail = detail});
    }
    auto raw_control = [](const std::string& out) {
        for (std::size_t i = 0; i < out.size(); ++i) {
            const auto c = static_cast<unsigned char>(out[i]);
            if ((c < 0x20 && c != '\n' && c != '\r') || c == 0x7f) return "C0 " + std::to_string(c);
            if (c == 0xc2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) < 0xa0)
                return std::string("C1");
            for (const char* bidi : {"\u202E", "\u2066", "\u2069", "\u200F", "\u061C"})
                if (out.compare(i, std::string(bidi).size(), bidi) == 0) return std::string("bidi");
        }
        return std::string();
    };
    const Outcome jsonl = run("write-log --state-db '" + db + "'");
    ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
    EXPECT_EQ(raw_control(jsonl.out), "") << jsonl.out;
    const auto rows = json_lines(jsonl.out);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["client_id"], client) << "escaped, not changed";
    EXPECT_EQ(rows[0]["record_id"], record);
    EXPECT_EQ(rows[0]["detail"], detail);
    EXPECT_EQ(rows[0]["args_summary"][name], "v\xc2\x85");
    EXPECT_NE(jsonl.out.find("\\u009B31m"), std::string::npos) << jsonl.out;
    EXPECT_NE(jsonl.out.find("\\u202E"), std::string::npos) << jsonl.out;

    const Outcome csv = run("write-log --format csv --state-db '" + db + "'");
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    const std::string body = csv.out.substr(csv.out.find("\r\n") + 2);
    std::string lines_only = body;
    std::erase(lines_only, '\r');
    std::erase(lines_only, '\n');
    EXPECT_EQ(raw_control(lines_only), "") << csv.out;
    EXPECT_EQ(std::count(body.begin(), body.end(), '\n'), 1) << "one line: " << csv.out;
    EXPECT_NE(csv.out.find("\"acme\\u001B]0;owned\\u0007\\u001B[2J\""), std::string::npos)
        << csv.out;
    EXPECT_NE(csv.out.find("\"bo_1\\u202Egnp.exe\\u2066x\\u2069\\u200F\\u061C\""),
              std::string::npos)
        << csv.out;
    EXPECT_NE(csv.out.find("\"line\\u000D\\u000Anext\\u007F back\\\\slash\""), std::string::npos)
        << "a backslash doubled, so that escapes read one way: " << csv.out;

    const Outcome exported = run("state export --state-db '" + db + "'");
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_EQ(raw_control(exported.out), "") << exported.out;
    bool found = false;
    for (const json& line : json_lines(exported.out))
        if (line["table"] == "write_log") {
            found = true;
            EXPECT_EQ(line["row"]["client_id"], client);
            EXPECT_EQ(line["row"]["record_id"], record);
        }
    EXPECT_TRUE(found);
}

// Issue 30: a prune never deletes a row written today (UTC): `--before 0m` or an age inside
// today is refused as a future date is; today's date itself (its first instant) is accepted.
TEST_F(WriteLogCli, PruneRefusesACutoffInsideToday) {
    {
        agency::state::SqliteStore store(db);
        store.append_write_log({.tool = "deploy_article"});  // now
    }
    for (const char* before : {"0m"}) {
        const Outcome now = run("write-log prune --before " + std::string(before) +
                                " --state-db '" + db + "'");
        EXPECT_NE(now.exit_code, 0) << before;
        EXPECT_NE(now.err.find("start of today"), std::string::npos) << now.err;
    }
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const std::time_t day = static_cast<std::time_t>(now_ms / 1000);
    char today[16];
    std::strftime(today, sizeof today, "%Y-%m-%d", std::gmtime(&day));
    const Outcome later = run("write-log prune --before " + std::string(today) +
                              "T23:59:59Z --state-db '" + db + "'");
    EXPECT_NE(later.exit_code, 0) << "a time today, or later";
    const Outcome midnight =
        run("write-log prune --before " + std::string(today) + " --state-db '" + db + "'");
    ASSERT_EQ(midnight.exit_code, 0) << midnight.err;
    const auto rows = json_lines(run("write-log --state-db '" + db + "'").out);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["tool"], "deploy_article") << "today's row is kept";
    EXPECT_EQ(rows[1]["tool"], "write-log prune");
}

// Issue 29: over stdio the one caller is the user who started the process; an agent's bulk
// loop (300 calls, as many in flight as the stdio workers take) is answered in full by default.
TEST_F(WriteLogCli, StdioHasNoPerCallerRateLimitByDefault) {
    std::vector<std::string> calls;
    for (int id = 1; id <= 300; ++id)
        calls.push_back(call(id, "list_keywords", {{"client_id", "demo-dental"}, {"limit", 5}}));
    const Outcome served = run("serve --state-db '" + db + "'", session(calls));
    ASSERT_EQ(served.exit_code, 0) << served.err;
    int answered = 0;
    int errors = 0;
    for (const json& reply : json_lines(served.out)) {
        if (reply.value("id", 0) == 0) continue;
        ++answered;
        if (reply.contains("error") || reply["result"].value("isError", false)) ++errors;
    }
    EXPECT_EQ(answered, 300);
    EXPECT_EQ(errors, 0) << served.out.substr(0, 2000);
    EXPECT_EQ(served.err.find("rate limit:"), std::string::npos) << served.err;
}

TEST_F(WriteLogCli, RateLimitRefusesOverTheLimitAndBadValues) {
    const Outcome served = run(
        "serve --state-db '" + db + "' --rate-limit 1/minute --rate-limit-burst 2",
        session({call(1, "list_clients", json::object()), call(2, "list_clients", json::object()),
                 call(3, "list_clients", json::object())}));
    ASSERT_EQ(served.exit_code, 0) << served.err;
    // Answers come as the workers finish: counted, not ordered.
    int answered = 0;
    std::vector<json> refused;
    for (const json& reply : json_lines(served.out)) {
        if (reply.value("id", 0) == 0) continue;
        ++answered;
        if (reply.contains("error")) refused.push_back(reply["error"]);
    }
    EXPECT_EQ(answered, 3) << served.out;
    ASSERT_EQ(refused.size(), 1u) << served.out;
    EXPECT_EQ(refused[0]["code"], -32029);
    EXPECT_EQ(refused[0]["data"]["retryAfterSeconds"], 60);
    EXPECT_NE(refused[0].value("message", "").find("retry in 60 s"), std::string::npos);

    const Outcome bad = run("serve --rate-limit fast");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--rate-limit"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("N/minute"), std::string::npos) << bad.err;
}
