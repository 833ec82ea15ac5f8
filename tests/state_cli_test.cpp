// The state commands and a shared store through the real binary: serve --state-url refuses to
// start without a shared secret, state migrate reports the version, and state export | import
// moves every row from SQLite to PostgreSQL and back unchanged.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "pg_cluster.hpp"
#include "run_binary.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/paths.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

using agency::testing::Outcome;

class StateCli : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-state-cli-" + agency::crypto::random_hex(6));
    void SetUp() override { fs::create_directories(dir); }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    Outcome run(const std::string& args, const std::string& env = "",
                const std::string& stdin_text = "") {
        return agency::testing::run_command(
            dir,
            "env -u AGENCY_GATEWAY_URL -u AGENCY_STATE_URL -u AGENCY_STATE_DB "
            "-u AGENCY_SERVER_SECRET " + env + " '" + AGENCY_BINARY + "' " + args,
            stdin_text);
    }
};

std::multiset<std::string> lines_of(const std::string& text) {
    std::multiset<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.insert(json::parse(line).dump());
    return out;
}

TEST_F(StateCli, ASharedStoreNeedsTheSharedSecret) {
    const std::string url = agency::testing::pg_fresh_database();
    const Outcome refused = run("serve --state-url '" + url + "'", "", "");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("AGENCY_SERVER_SECRET"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("same on every instance"), std::string::npos) << refused.err;
    const Outcome short_secret = run("serve --state-url '" + url + "'", "AGENCY_SERVER_SECRET=abc");
    EXPECT_NE(short_secret.exit_code, 0);
    EXPECT_NE(short_secret.err.find("at least 32"), std::string::npos) << short_secret.err;
}

TEST_F(StateCli, ServeOnASharedStoreAnswers) {
    const std::string url = agency::testing::pg_fresh_database();
    const std::string init =
        json{{"jsonrpc", "2.0"},
             {"id", 1},
             {"method", "initialize"},
             {"params",
              {{"protocolVersion", "2025-11-25"},
               {"capabilities", json::object()},
               {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}
            .dump() +
        "\n";
    const Outcome served = run("serve --state-url '" + url + "'",
                               "AGENCY_SERVER_SECRET=" + std::string(64, 'k'), init);
    EXPECT_EQ(served.exit_code, 0) << served.err;
    EXPECT_NE(served.out.find("\"serverInfo\""), std::string::npos) << served.out;
    EXPECT_NE(served.err.find("state store (shared)"), std::string::npos) << served.err;
    EXPECT_EQ(served.err.find("password"), std::string::npos);
}

TEST_F(StateCli, ExportImportMovesEveryRowBetweenBackends) {
    const std::string db = (dir / "state.db").string();
    {
        agency::state::SqliteStore store(db);
        auto job = store.create_job("seo_audit", "demo-dental", "alice", {{"url", "https://x.example/"}});
        store.finish_job(job.id, true, {{"report_id", "r1"}, {"score", 71}}, nullptr);
        store.claim_idempotency("alice", "generate_article", "k1", "d1", std::chrono::seconds(60));
        store.complete_idempotency("alice", "generate_article", "k1", false, R"({"id":"a1"})");
        store.create_confirmation("alice", "deploy_article", "d2", std::chrono::seconds(600));
        agency::state::TaskRecord task;
        task.id = "t1";
        task.owner = "alice";
        task.tool = "run_seo_audit";
        task.era = "modern";
        task.arguments = {{"client_id", "demo-dental"}};
        store.put(task);
    }
    const Outcome exported = run("state export --state-db '" + db + "'");
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const auto rows = lines_of(exported.out);
    EXPECT_EQ(rows.size(), 4u) << exported.out;

    const std::string url = agency::testing::pg_fresh_database();
    const Outcome imported = run("state import --state-url '" + url + "'", "", exported.out);
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    const Outcome back = run("state export --state-url '" + url + "'");
    ASSERT_EQ(back.exit_code, 0) << back.err;
    EXPECT_EQ(lines_of(back.out), rows) << "PostgreSQL holds exactly what SQLite held";

    const Outcome again = run("state import --state-url '" + url + "'", "", exported.out);
    EXPECT_NE(again.exit_code, 0) << "rows already there are refused";
    EXPECT_NE(again.err.find("line 1"), std::string::npos) << again.err;
    EXPECT_NE(again.err.find("empty store"), std::string::npos) << again.err;

    const Outcome garbage = run("state import --state-db '" + (dir / "other.db").string() + "'",
                                "", "{\"table\":\"jobs\"}\nnot json\n");
    EXPECT_NE(garbage.exit_code, 0);
    EXPECT_NE(garbage.err.find("line 1"), std::string::npos) << garbage.err;
}

TEST_F(StateCli, MigrateReportsTheSchemaVersion) {
    const std::string url = agency::testing::pg_fresh_database();
    const Outcome migrated = run("state migrate --state-url '" + url + "'");
    ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
    EXPECT_NE(migrated.out.find("schema version " + std::to_string(agency::state::kSchemaVersion)), std::string::npos) << migrated.out;
    const Outcome typo = run("state migrat");
    EXPECT_EQ(typo.exit_code, 2);
    EXPECT_NE(typo.err.find("Did you mean 'migrate'?"), std::string::npos) << typo.err;
}

}  // namespace
