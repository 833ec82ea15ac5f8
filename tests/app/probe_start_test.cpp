// A client that probes first (issue 29): @openai/agents, the AI SDK and Mastra start the server
// once only to ask server/discover, then again for the session. A probe must not touch what a
// previous run left: no job or task picked up (a second POST), no database opened, migrated
// or written. The work begins with the session's first other request.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/wait.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kDiscover =
    json{{"jsonrpc", "2.0"},
         {"id", 1},
         {"method", "server/discover"},
         {"params",
          {{"_meta",
            {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
             {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
        .dump();

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

// The folder's files with their bytes and modification times.
std::map<std::string, std::pair<std::string, long long>> snapshot(const fs::path& dir) {
    std::map<std::string, std::pair<std::string, long long>> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        struct stat st {};
        ::stat(entry.path().c_str(), &st);
        out[entry.path().filename().string()] = {
            read_file(entry.path()), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
    }
    return out;
}

class ProbeStart : public ::testing::Test {
protected:
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};
    fs::path dir = fs::temp_directory_path() / ("agency-probe-" + agency::crypto::random_hex(6));
    fs::path state = dir / "state";
    std::string job_id;

    void SetUp() override {
        gateway_server.start("127.0.0.1", 0);
        fs::create_directories(state);
        // What a previous run left: an audit job it never sent.
        agency::state::SqliteStore store((state / "state.db").string());
        job_id = store
                     .create_job("seo_audit", "demo-dental", "local",
                                 {{"url", "https://brightsmiledental.example/"}})
                     .id;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    // `agency-mcp serve` on the shared state folder, its stdin ours, stdout and stderr to files.
    FILE* start(const std::string& name) {
        const std::string command = "env -u AGENCY_STRUCTURED_TEXT '" + std::string(AGENCY_BINARY) +
                                    "' serve --gateway-url " + gateway_server.base_url() +
                                    " --state-db '" + (state / "state.db").string() + "' > '" +
                                    (dir / (name + ".out")).string() + "' 2> '" +
                                    (dir / (name + ".err")).string() + "'";
        return popen(command.c_str(), "w");
    }
    static void say(FILE* child, const std::string& line) {
        std::fputs((line + "\n").c_str(), child);
        std::fflush(child);
    }
    std::string output(const std::string& name) const { return read_file(dir / (name + ".out")); }
    std::string log(const std::string& name) const { return read_file(dir / (name + ".err")); }
    std::string job_status() const {
        agency::state::SqliteStore store((state / "state.db").string());
        const auto job = store.job(job_id);
        return job ? job->status : "";
    }
};

TEST_F(ProbeStart, TwoProbesAtOnceTouchNothingAndTheSessionPicksUpTheWork) {
    const auto before = snapshot(state);
    ASSERT_EQ(before.size(), 1u) << "the test store closed cleanly: state.db alone";

    // Two probing processes at once on one state folder, as two clients starting together.
    FILE* a = start("probe-a");
    FILE* b = start("probe-b");
    ASSERT_TRUE(a && b);
    say(a, kDiscover);
    say(b, kDiscover);
    EXPECT_EQ(pclose(a), 0);
    EXPECT_EQ(pclose(b), 0);

    for (const std::string name : {"probe-a", "probe-b"}) {
        const json answer = json::parse(output(name));
        EXPECT_EQ(answer["result"]["serverInfo"]["name"], "agency-mcp") << output(name);
        EXPECT_EQ(log(name).find("was left"), std::string::npos) << log(name);
    }
    EXPECT_EQ(snapshot(state), before) << "a probe opened, wrote or migrated the state database";
    EXPECT_EQ(gw->count_requests("POST", "seo_audit"), 0u);
    EXPECT_EQ(job_status(), "queued");

    // The session: its first request other than server/discover begins the work, and the job
    // goes out once.
    FILE* session = start("session");
    ASSERT_TRUE(session);
    say(session, kDiscover);
    say(session, json{{"jsonrpc", "2.0"},
                      {"id", 2},
                      {"method", "tools/list"},
                      {"params",
                       {{"_meta",
                         {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                          {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
                     .dump());
    (void)agency::testing::eventually([&] { return gw->count_requests("POST", "seo_audit") != 0; },
                                      std::chrono::seconds(20), std::chrono::milliseconds(20));
    EXPECT_EQ(pclose(session), 0);
    EXPECT_EQ(gw->count_requests("POST", "seo_audit"), 1u) << log("session");
    EXPECT_NE(log("session").find("audit job " + job_id), std::string::npos) << log("session");
    EXPECT_NE(job_status(), "queued");
}

// A fresh state folder stays empty after a probe: the database is made by the first write.
TEST_F(ProbeStart, AProbeOnAFreshFolderCreatesNoDatabase) {
    fs::remove_all(state);
    FILE* probe = start("probe");
    ASSERT_TRUE(probe);
    say(probe, kDiscover);
    EXPECT_EQ(pclose(probe), 0);
    EXPECT_FALSE(fs::exists(state / "state.db"));
}

}  // namespace
