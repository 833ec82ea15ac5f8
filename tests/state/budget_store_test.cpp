// The Store's action budgets and the write log's caller scope (schema version 7), one suite
// against both backends (a SQLite file; a fresh database on the throwaway PostgreSQL cluster,
// tests/pg_cluster.hpp): taking, giving back and reading units; several store objects racing
// for the last units as several instances would; the migration from version 6; export and
// import.
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "base/crypto.hpp"
#include "tests/pg_cluster.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/shared_store.hpp"

namespace budget_store_test {

namespace fs = std::filesystem;
using namespace agency::testing::store_names;
using agency::state::Store;
using json = nlohmann::json;

enum class Backend { sqlite, postgres };

class BudgetStore : public ::testing::TestWithParam<Backend> {
protected:
    fs::path dir;
    std::string where;

    void SetUp() override {
        dir = fs::temp_directory_path() / ("agency-budget-store-" + agency::crypto::random_hex(6));
        fs::create_directories(dir);
        where = GetParam() == Backend::sqlite ? (dir / "state.db").string()
                                              : agency::testing::pg_fresh_database();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::unique_ptr<Store> open() {
        if (GetParam() == Backend::sqlite) return std::make_unique<SqliteStore>(where);
        return std::make_unique<PgStore>(where);  // migrates, as `state migrate` does
    }
    // Takes the database back to schema version 6 (no budgets, no caller scope), as a server
    // of the version before left it.
    void back_to_version_6() {
        if (GetParam() == Backend::sqlite) {
            sqlite3* db = nullptr;
            ASSERT_EQ(sqlite3_open(where.c_str(), &db), SQLITE_OK);
            char* error = nullptr;
            const int rc = sqlite3_exec(db,
                                        "DROP TABLE action_budgets; ALTER TABLE write_log DROP "
                                        "COLUMN caller_clients; PRAGMA user_version = 6;",
                                        nullptr, nullptr, &error);
            const std::string why = error ? error : "";
            sqlite3_free(error);
            sqlite3_close(db);
            ASSERT_EQ(rc, SQLITE_OK) << why;
        } else {
            agency::testing::pg_exec(where, "DROP TABLE action_budgets");
            agency::testing::pg_exec(where, "ALTER TABLE write_log DROP COLUMN caller_clients");
            agency::testing::pg_exec(where, "UPDATE agency_schema SET version = 6");
        }
    }
};

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::sqlite ? "Sqlite" : "Postgres";
}

INSTANTIATE_TEST_SUITE_P(Backends, BudgetStore,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

TEST_P(BudgetStore, TakesUpToTheLimitGivesBackAndReads) {
    auto store = open();
    EXPECT_EQ(store->budget_used("key:a", 1000), 0);
    for (int i = 1; i <= 3; ++i) {
        const auto take = store->take_budget("key:a", 1000, 3);
        EXPECT_TRUE(take.granted) << i;
        EXPECT_EQ(take.used, i);
    }
    const auto refused = store->take_budget("key:a", 1000, 3);
    EXPECT_FALSE(refused.granted);
    EXPECT_EQ(refused.used, 3);
    EXPECT_EQ(store->budget_used("key:a", 1000), 3) << "a refusal counts nothing";

    store->return_budget("key:a", 1000);
    EXPECT_EQ(store->budget_used("key:a", 1000), 2);
    EXPECT_TRUE(store->take_budget("key:a", 1000, 3).granted) << "the unit given back is free";

    // Windows and callers are counted apart; a lower limit refuses at once; 0 never grants.
    EXPECT_TRUE(store->take_budget("key:a", 2000, 3).granted);
    EXPECT_EQ(store->budget_used("key:a", 2000), 1);
    EXPECT_TRUE(store->take_budget("key:b", 1000, 3).granted);
    EXPECT_FALSE(store->take_budget("key:a", 1000, 2).granted);
    EXPECT_FALSE(store->take_budget("key:c", 1000, 0).granted);
    EXPECT_EQ(store->budget_used("key:c", 1000), 0);

    // Never below zero.
    store->return_budget("key:b", 1000);
    store->return_budget("key:b", 1000);
    store->return_budget("key:nobody", 1000);
    EXPECT_EQ(store->budget_used("key:b", 1000), 0);
    EXPECT_EQ(store->budget_used("key:nobody", 1000), 0);

    // A new store object on the same database (a restart) reads the same counts.
    store.reset();
    EXPECT_EQ(open()->budget_used("key:a", 1000), 3);
}

TEST_P(BudgetStore, TheWriteLogKeepsTheCallersClientScope) {
    auto store = open();
    store->append_write_log({.principal = "key:a", .tool = "generate_article", .outcome = "ok",
                             .caller_clients = "demo-law,cl_b"});
    store->append_write_log({.principal = "key:b", .tool = "generate_article", .outcome = "ok"});
    std::vector<std::string> scopes;
    store->read_write_log({}, [&](const WriteLogEntry& e) { scopes.push_back(e.caller_clients); });
    EXPECT_EQ(scopes, (std::vector<std::string>{"demo-law,cl_b", "*"}));

    // And with a settlement (one statement on PostgreSQL).
    store->append_write_log_settling(
        {.principal = "key:c", .tool = "generate_article", .outcome = "ok", .caller_clients = "x"},
        {});
    scopes.clear();
    store->read_write_log({}, [&](const WriteLogEntry& e) { scopes.push_back(e.caller_clients); });
    EXPECT_EQ(scopes.back(), "x");
}

// Eight store objects (eight instances) race for the last three units of one caller: exactly
// three are granted, and the count stops at the limit.
TEST_P(BudgetStore, InstancesRacingForTheLastUnitsGetExactlyThem) {
    std::vector<std::unique_ptr<Store>> stores;
    for (int i = 0; i < 8; ++i) stores.push_back(open());
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(stores[0]->take_budget("key:race", 5000, 10).granted);
    for (int round = 0; round < 3; ++round) {
        std::atomic<bool> go{false};
        std::atomic<int> granted{0};
        std::vector<std::thread> threads;
        const std::string caller = "key:race-" + std::to_string(round);
        for (int i = 0; i < 9; ++i) ASSERT_TRUE(stores[0]->take_budget(caller, 5000, 10).granted);
        for (auto& store : stores) {
            threads.emplace_back([&, s = store.get()] {
                while (!go) std::this_thread::yield();
                try {
                    if (s->take_budget(caller, 5000, 10).granted) ++granted;
                } catch (const std::exception& e) {
                    ADD_FAILURE() << e.what();
                }
            });
        }
        go = true;
        for (auto& t : threads) t.join();
        EXPECT_EQ(granted.load(), 1) << "round " << round;
        EXPECT_EQ(stores[0]->budget_used(caller, 5000), 10);
    }
    std::atomic<bool> go{false};
    std::atomic<int> granted{0};
    std::vector<std::thread> threads;
    for (auto& store : stores) {
        threads.emplace_back([&, s = store.get()] {
            while (!go) std::this_thread::yield();
            if (s->take_budget("key:race", 5000, 10).granted) ++granted;
        });
    }
    go = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(granted.load(), 3);
    EXPECT_EQ(stores[0]->budget_used("key:race", 5000), 10);
}

// A version-6 database is migrated to 7: its write-log rows get "*" (no caller was limited
// then), and budgets count from there. PostgreSQL migrates on `state migrate` (Options.migrate).
TEST_P(BudgetStore, MigratesFromVersion6) {
    {
        auto store = open();
        store->append_write_log({.principal = "key:a", .tool = "generate_article",
                                 .outcome = "ok", .caller_clients = "gone"});
        EXPECT_EQ(store->schema_version(), 7);
    }
    back_to_version_6();
    auto store = open();
    EXPECT_EQ(store->schema_version(), agency::state::kSchemaVersion);
    std::vector<std::string> scopes;
    store->read_write_log({}, [&](const WriteLogEntry& e) { scopes.push_back(e.caller_clients); });
    EXPECT_EQ(scopes, std::vector<std::string>{"*"});
    EXPECT_TRUE(store->take_budget("key:a", 1000, 1).granted);
    EXPECT_FALSE(store->take_budget("key:a", 1000, 1).granted);
}

// `state export` carries the budgets and the scope; an import into another database of the
// same backend gives the same rows.
TEST_P(BudgetStore, ExportAndImportCarryBudgetsAndScopes) {
    auto store = open();
    store->take_budget("key:a", 1000, 5);
    store->take_budget("key:a", 1000, 5);
    store->append_write_log({.principal = "key:a", .tool = "t", .outcome = "ok",
                             .caller_clients = "demo-law"});
    std::vector<json> lines;
    store->export_rows([&](const json& line) { lines.push_back(line); });
    bool budget_row = false, scope = false;
    for (const json& line : lines) {
        if (line["table"] == "action_budgets") {
            budget_row = true;
            EXPECT_EQ(line["row"], json({{"caller", "key:a"}, {"window_start", 1000}, {"used", 2}}));
        }
        if (line["table"] == "write_log") scope = line["row"]["caller_clients"] == "demo-law";
    }
    EXPECT_TRUE(budget_row);
    EXPECT_TRUE(scope);

    where = GetParam() == Backend::sqlite ? (dir / "other.db").string()
                                          : agency::testing::pg_fresh_database();
    auto other = open();
    for (const json& line : lines) other->import_row(line);
    EXPECT_EQ(other->budget_used("key:a", 1000), 2);
    std::string read_scope;
    other->read_write_log({}, [&](const WriteLogEntry& e) { read_scope = e.caller_clients; });
    EXPECT_EQ(read_scope, "demo-law");
}

}  // namespace budget_store_test
