// The command line's conventions, through the real binary: --version, unknown commands, global
// options on either side of the subcommand, --log-file, keys list/remove/rotate (and a running
// server following the keys file), a missing keys file, the gateway start-up line, and an https
// gateway behind a private CA (SSL_CERT_FILE / SSL_CERT_DIR).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/run_binary.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/text.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

using agency::testing::Outcome;

using agency::testing::slurp;

std::string initialize_line() {
    return json{{"jsonrpc", "2.0"},
                {"id", 1},
                {"method", "initialize"},
                {"params",
                 {{"protocolVersion", "2025-06-18"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "cli-test"}, {"version", "1"}}}}}}
        .dump();
}

class CliConventions : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-cli-conv-" + agency::crypto::random_hex(6));
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};

    void SetUp() override {
        fs::create_directories(dir);
        gateway_server.start("127.0.0.1", 0);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    // `env -u ... ENV agency-mcp ARGS < stdin_text`, to its end.
    Outcome run(const std::string& args, const std::string& stdin_text = "",
            const std::string& env = "") {
        return agency::testing::run_command(
            dir,
            "env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_LEVEL -u AGENCY_LOG_FILE "
            "-u SSL_CERT_FILE -u SSL_CERT_DIR " + env + " '" + AGENCY_BINARY + "' " + args,
            stdin_text);
    }

    std::string gateway_args() {
        return "--gateway-url " + gateway_server.base_url() + " --state-db :memory:";
    }
};

TEST_F(CliConventions, VersionComesFromCMakeAndIsServerInfoVersion) {
    const std::string want = std::string("agency-mcp ") + AGENCY_VERSION + "\n";
    EXPECT_EQ(run("--version").out, want);
    EXPECT_EQ(run("-V").out, want);
    const Outcome served = run("serve " + gateway_args(), initialize_line() + "\n");
    const json reply = json::parse(served.out.substr(0, served.out.find('\n')));
    EXPECT_EQ(reply["result"]["serverInfo"]["version"], AGENCY_VERSION);
}

TEST_F(CliConventions, UnknownCommandIsNamedWithTheValidOnes) {
    const Outcome typo = run("serv --http");
    EXPECT_EQ(typo.exit_code, 2);
    EXPECT_TRUE(typo.out.empty());
    EXPECT_NE(typo.err.find("unknown command 'serv'"), std::string::npos) << typo.err;
    EXPECT_NE(typo.err.find("Did you mean 'serve'?"), std::string::npos) << typo.err;
    for (const char* name : {"serve", "sample-gateway", "keys", "tools-doc"})
        EXPECT_NE(typo.err.find(std::string("  ") + name + " "), std::string::npos) << typo.err;

    const Outcome unrelated = run("--log-level debug frobnicate");
    EXPECT_EQ(unrelated.exit_code, 2);
    EXPECT_NE(unrelated.err.find("unknown command 'frobnicate'"), std::string::npos);
    EXPECT_EQ(unrelated.err.find("Did you mean"), std::string::npos) << unrelated.err;

    const Outcome keys = run("keys lst");
    EXPECT_EQ(keys.exit_code, 2);
    EXPECT_NE(keys.err.find("agency-mcp keys: unknown command 'lst'. Did you mean 'list'?"),
              std::string::npos)
        << keys.err;
    EXPECT_NE(keys.err.find("rotate"), std::string::npos);
}

// --log-level and --log-file are the program's: before or after the subcommand alike.
TEST_F(CliConventions, GlobalOptionsWorkBeforeAndAfterTheSubcommand) {
    const std::string line = initialize_line() + "\n";
    EXPECT_NE(run("serve " + gateway_args(), line).err.find("state database"), std::string::npos);
    for (const std::string& args : {"--log-level warn serve " + gateway_args(),
                                    "serve " + gateway_args() + " --log-level warn",
                                    "serve --log-level=warn " + gateway_args()}) {
        const Outcome r = run(args, line);
        EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
        EXPECT_EQ(r.err.find("state database"), std::string::npos) << args << "\n" << r.err;
        EXPECT_NE(r.out.find("\"serverInfo\""), std::string::npos) << args;
    }
    const fs::path before = dir / "before.log", after = dir / "after.log";
    run("--log-file " + before.string() + " serve " + gateway_args(), line);
    run("serve " + gateway_args() + " --log-file " + after.string(), line);
    EXPECT_NE(slurp(before).find("state database"), std::string::npos);
    EXPECT_NE(slurp(after).find("state database"), std::string::npos);
}

TEST_F(CliConventions, LogFileTakesTheLogsAppendedAndStdoutStaysProtocol) {
    const fs::path log = dir / "agency.log";
    const std::string args = "serve " + gateway_args() + " --log-file " + log.string();
    const Outcome first = run(args, initialize_line() + "\n", "AGENCY_API_KEY=sk-never-logged-123");
    run(args, initialize_line() + "\n");
    EXPECT_EQ(first.exit_code, 0);
    EXPECT_EQ(first.err.find("state database"), std::string::npos) << first.err;
    std::istringstream lines(first.out);
    for (std::string l; std::getline(lines, l);)
        EXPECT_FALSE(json::parse(l, nullptr, false).is_discarded()) << "not protocol: " << l;
    const std::string logged = slurp(log);
    const auto count = [&](const std::string& what) {
        std::size_t n = 0;
        for (auto at = logged.find(what); at != std::string::npos; at = logged.find(what, at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count("state database"), 2u) << logged;  // appended, not truncated
    EXPECT_EQ(logged.find("sk-never-logged-123"), std::string::npos);

    // Under a regular file: no directory can be made there.
    std::ofstream(dir / "plain-file") << "x";
    const Outcome unwritable = run("serve --log-file " + (dir / "plain-file" / "x.log").string());
    EXPECT_NE(unwritable.exit_code, 0);
    EXPECT_NE(unwritable.err.find("--log-file: cannot open"), std::string::npos) << unwritable.err;
}

// One start-up line says the gateway answered and with which actions; the key never appears.
TEST_F(CliConventions, StartupLineSaysTheGatewayAnsweredWithItsActions) {
    const Outcome r = run("serve " + gateway_args(), "", "AGENCY_API_KEY=sk-secret-key-456");
    const std::regex line("gateway " + gateway_server.base_url() +
                          R"( answered: (\d+) action\(s\) \(([a-z_]+, )+.*\), (\d+) resource\(s\))");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, line)) << r.err;
    EXPECT_GT(std::stoi(m[1]), 5);
    EXPECT_EQ(r.err.find("sk-secret-key-456"), std::string::npos);

    const Outcome sample = run("serve --state-db :memory:");
    EXPECT_NE(sample.err.find("the built-in SAMPLE gateway http://127.0.0.1:"), std::string::npos)
        << sample.err;
}

}  // namespace
