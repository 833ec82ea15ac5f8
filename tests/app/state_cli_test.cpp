// The state commands and a shared store through the real binary: serve --state-url refuses to
// start without a shared secret, state migrate reports the version (and alone migrates, with
// report commands refusing an older schema), state export | import moves every row from SQLite
// to PostgreSQL and back unchanged, and state backup copies a serving store that restores.
#include <sqlite3.h>
#include <sys/stat.h>
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
#include "tests/pg_cluster.hpp"
#include "tests/run_binary.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/tool_call.hpp"
#include "tests/support/wait.hpp"

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

// The schema version of a SQLite file, read without agency-mcp.
int sqlite_version(const std::string& db) {
    sqlite3* handle = nullptr;
    int version = -1;
    if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(handle, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            version = sqlite3_column_int(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(handle);
    return version;
}

int pg_version(const std::string& url) {
    const auto r = agency::testing::run_command(
        fs::temp_directory_path(),
        "psql -XtAc 'SELECT version FROM agency_schema' '" + url + "'");
    return r.exit_code == 0 ? std::atoi(r.out.c_str()) : -1;
}

// A version-7 database taken back to version 6 (no budgets, no caller scope), as a server of the
// version before left it.
void sqlite_back_to_version_6(const std::string& db) {
    { agency::state::SqliteStore(db).create_job("seo_audit", "demo-dental", "alice", {}); }
    sqlite3* handle = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(handle,
                           "DROP TABLE action_budgets; ALTER TABLE write_log DROP COLUMN "
                           "caller_clients; PRAGMA user_version = 6;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(handle);
}

mode_t mode_of(const fs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

TEST_F(StateCli, ReportCommandsNeverMigrateAndAMigrationIsLogged) {
    const std::string db = (dir / "state.db").string();
    sqlite_back_to_version_6(db);
    const std::string keys = (dir / "keys.json").string();
    ASSERT_EQ(run("keys add --name alice --keys-file '" + keys + "'").exit_code, 0);
    for (const std::string report :
         {"write-log", "write-log --format csv", "state export", "write-log prune --before 30d"}) {
        const Outcome r = run(report + " --state-db '" + db + "'");
        EXPECT_NE(r.exit_code, 0) << report << " ran on an older schema";
        EXPECT_NE(r.err.find("version 6"), std::string::npos) << report << ": " << r.err;
        EXPECT_NE(r.err.find("agency-mcp state migrate"), std::string::npos) << r.err;
        EXPECT_EQ(sqlite_version(db), 6) << report << " migrated the file";
    }
    // keys list still lists the keys, and says why their budget use is not shown.
    const Outcome listed = run("keys list --keys-file '" + keys + "' --state-db '" + db + "'");
    EXPECT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_NE(listed.out.find("alice"), std::string::npos) << listed.out;
    EXPECT_NE(listed.err.find("agency-mcp state migrate"), std::string::npos) << listed.err;
    EXPECT_EQ(sqlite_version(db), 6) << "keys list migrated the file";

    const Outcome migrated = run("state migrate --state-db '" + db + "'");
    ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
    EXPECT_NE(migrated.err.find("schema 6 → 7"), std::string::npos) << migrated.err;
    EXPECT_EQ(sqlite_version(db), agency::state::kSchemaVersion);
    const Outcome again = run("state migrate --state-db '" + db + "'");
    EXPECT_EQ(again.err.find("→"), std::string::npos) << "nothing left to migrate: " << again.err;
    EXPECT_EQ(run("write-log --state-db '" + db + "'").exit_code, 0);

    // PostgreSQL alike.
    const std::string url = agency::testing::pg_fresh_database();
    ASSERT_EQ(run("state migrate --state-url '" + url + "'").exit_code, 0);
    agency::testing::pg_exec(url, "DROP TABLE action_budgets");
    agency::testing::pg_exec(url, "ALTER TABLE write_log DROP COLUMN caller_clients");
    agency::testing::pg_exec(url, "UPDATE agency_schema SET version = 6");
    const Outcome pg_report = run("write-log --state-url '" + url + "'");
    EXPECT_NE(pg_report.exit_code, 0);
    EXPECT_NE(pg_report.err.find("agency-mcp state migrate"), std::string::npos) << pg_report.err;
    EXPECT_EQ(pg_version(url), 6);
    const Outcome pg_migrated = run("state migrate --state-url '" + url + "'");
    ASSERT_EQ(pg_migrated.exit_code, 0) << pg_migrated.err;
    EXPECT_NE(pg_migrated.err.find("schema 6 → 7"), std::string::npos) << pg_migrated.err;
    EXPECT_EQ(pg_version(url), agency::state::kSchemaVersion);
}

using agency::testing::modern_tool_call;

// The steps of docs/operations.md, "Backups and restores": a backup of the store a server is
// writing, and that backup put in place of the file, with the server stopped, serves again.
TEST_F(StateCli, BackupOfAServingStoreRestoresToTheSameRows) {
    const mode_t old_umask = ::umask(022);
    const std::string live = (dir / "state.db").string();
    std::vector<std::string> audits;
    {
        agency::testing::ServeProcess serve(dir, "serve --state-db '" + live + "'");
        int id = 1;
        for (const char* client : {"demo-dental", "demo-law"}) {
            serve.send(modern_tool_call(id, "run_seo_audit",
                                 {{"client_id", client}, {"url", "https://example.com/"}}));
            const json answer = serve.answer(id++);
            ASSERT_TRUE(answer.is_object()) << serve.stderr_text();
            audits.push_back(answer["result"]["structuredContent"].value("audit_id", ""));
            ASSERT_FALSE(audits.back().empty()) << answer.dump().substr(0, 300);
        }
        // The audits finish on the server's workers: waited for, so that no row changes after.
        for (std::size_t i = 0; i < audits.size(); ++i) {
            std::string status;
            (void)agency::testing::eventually(
                [&] {
                    serve.send(modern_tool_call(id, "get_audit_status",
                                                {{"client_id", i == 0 ? "demo-dental" : "demo-law"},
                                                 {"audit_id", audits[i]}}));
                    status = serve.answer(id++)["result"]["structuredContent"].value("status", "");
                    return status == "succeeded" || status == "failed";
                },
                std::chrono::milliseconds(6000), std::chrono::milliseconds(20));
            ASSERT_EQ(status, "succeeded") << serve.stderr_text();
        }
        EXPECT_EQ(mode_of(live), 0600u) << "the state file holds drafts and the write log";

        // While the server runs and holds its write-ahead log.
        const fs::path backup = dir / "backup.db";
        const Outcome made = run("state backup '" + backup.string() + "' --state-db '" + live + "'");
        ASSERT_EQ(made.exit_code, 0) << made.err;
        EXPECT_NE(made.out.find("schema version 7"), std::string::npos) << made.out;
        EXPECT_EQ(mode_of(backup), 0600u);
        const Outcome over = run("state backup '" + backup.string() + "' --state-db '" + live + "'");
        EXPECT_NE(over.exit_code, 0);
        EXPECT_NE(over.err.find("never overwrites"), std::string::npos) << over.err;

        const Outcome from_live = run("state export --state-db '" + live + "'");
        const Outcome from_backup = run("state export --state-db '" + backup.string() + "'");
        ASSERT_EQ(from_backup.exit_code, 0) << from_backup.err;
        EXPECT_EQ(lines_of(from_backup.out), lines_of(from_live.out));
        for (const auto& audit : audits)
            EXPECT_NE(from_backup.out.find(audit), std::string::npos) << audit;
        const fs::path exported = dir / "export.jsonl";
        ASSERT_EQ(run("state export --out '" + exported.string() + "' --state-db '" + live + "'")
                      .exit_code,
                  0);
        EXPECT_EQ(mode_of(exported), 0600u);
        EXPECT_EQ(serve.finish(), 0);
    }
    ::umask(old_umask);

    // Restore: the server stopped, the backup put in place (its -wal and -shm gone with it).
    fs::remove(live);
    for (const char* tail : {"-wal", "-shm"}) fs::remove(live + tail);
    fs::copy_file(dir / "backup.db", live);
    agency::testing::ServeProcess restored(dir, "serve --state-db '" + live + "'");
    restored.send(modern_tool_call(1, "get_audit_status",
                            {{"client_id", "demo-dental"}, {"audit_id", audits[0]}}));
    const json status = restored.answer(1);
    ASSERT_TRUE(status.is_object()) << restored.stderr_text();
    EXPECT_EQ(status["result"]["structuredContent"].value("status", ""), "succeeded")
        << status.dump().substr(0, 400);
    EXPECT_EQ(restored.finish(), 0);

    const Outcome pg = run("state backup x.dump --state-url 'postgresql://agency:secret@db/agency'");
    EXPECT_NE(pg.exit_code, 0);
    EXPECT_NE(pg.err.find("pg_dump --format=custom --file=x.dump"), std::string::npos) << pg.err;
    EXPECT_EQ(pg.err.find("secret"), std::string::npos) << "the password reached the message";
}

}  // namespace
