// The action tools' SQLite store on real files in a temporary directory.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>
#include <sqlite3.h>

#include "base/crypto.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

namespace fs = std::filesystem;
using agency::state::ConfirmOutcome;
using agency::state::Draft;
using DB = agency::state::SqliteStore;
using json = nlohmann::json;

class Store : public ::testing::Test {
protected:
    fs::path dir;
    std::string path;

    void SetUp() override {
        dir = fs::temp_directory_path() / ("agency-store-" + agency::crypto::random_hex(6));
        path = (dir / "nested" / "state.db").string();  // the directory is created on open
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

}  // namespace

TEST_F(Store, SchemaSurvivesReopen) {
    std::string job_id;
    std::string draft_id;
    {
        DB store(path);
        job_id = store.create_job("seo_audit", "demo-dental", "alice", {{"url", "https://a.example"}})
                     .id;
        draft_id = store
                       .create_draft({.client_id = "demo-dental",
                                      .recipient = "editor@a.example",
                                      .subject = "Hello",
                                      .html = "<p>Hi</p>",
                                      .principal = "alice"})
                       .id;
        EXPECT_FALSE(store.claim_idempotency("alice", "generate_article", "k1", "d1",
                                             std::chrono::seconds(600)));
        store.complete_idempotency("alice", "generate_article", "k1", false, R"({"ok":true})");
    }
    EXPECT_TRUE(fs::exists(path));
    DB store(path);
    auto job = store.job(job_id);
    ASSERT_TRUE(job);
    EXPECT_EQ(job->status, "queued");
    EXPECT_EQ(job->client_id, "demo-dental");
    EXPECT_EQ(job->principal, "alice");
    EXPECT_EQ(job->args, json({{"url", "https://a.example"}}));
    auto draft = store.draft(draft_id, "alice");
    ASSERT_TRUE(draft);
    EXPECT_EQ(draft->recipient, "editor@a.example");
    EXPECT_EQ(draft->html, "<p>Hi</p>");
    EXPECT_EQ(draft->status, "draft");
    auto record = store.claim_idempotency("alice", "generate_article", "k1", "d1",
                                          std::chrono::seconds(600));
    ASSERT_TRUE(record);
    EXPECT_FALSE(record->pending);
    EXPECT_EQ(record->result, R"({"ok":true})");
}

TEST_F(Store, JobLifecycleAndUnfinished) {
    DB store(path);
    auto a = store.create_job("seo_audit", "c", "p", {{"url", "https://a.example"}});
    auto b = store.create_job("seo_audit", "c", "p", {{"url", "https://b.example"}});
    auto c = store.create_job("seo_audit", "c", "p", {{"url", "https://c.example"}});
    EXPECT_TRUE(store.claim_job(a.id, "i1", std::chrono::seconds(30), false));
    EXPECT_TRUE(store.claim_job(b.id, "i1", std::chrono::seconds(30), false));
    store.finish_job(b.id, true, {{"score", 80}}, nullptr);
    store.finish_job(c.id, false, nullptr, {{"reason", "upstream"}, {"status_code", 502}});
    EXPECT_FALSE(store.claim_job(b.id, "i1", std::chrono::seconds(30), true)) << "a finished job is not run again";

    auto unfinished = store.unfinished_jobs();
    ASSERT_EQ(unfinished.size(), 1u);
    EXPECT_EQ(unfinished[0].id, a.id);
    EXPECT_EQ(unfinished[0].status, "running");
    EXPECT_EQ(store.job(b.id)->result["score"], 80);
    EXPECT_EQ(store.job(c.id)->status, "failed");
    EXPECT_EQ(store.job(c.id)->error["status_code"], 502);
    EXPECT_FALSE(store.job("nope"));
}

TEST_F(Store, IdempotencyClaims) {
    DB store(path);
    const auto ttl = std::chrono::seconds(600);
    EXPECT_FALSE(store.claim_idempotency("p", "t", "k", "d1", ttl)) << "first claim wins";
    auto again = store.claim_idempotency("p", "t", "k", "d1", ttl);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->pending);
    EXPECT_FALSE(store.claim_idempotency("q", "t", "k", "d1", ttl)) << "keys are per principal";
    EXPECT_FALSE(store.claim_idempotency("p", "u", "k", "d1", ttl)) << "keys are per tool";
    store.complete_idempotency("p", "t", "k", true, R"({"error":{}})");
    auto done = store.claim_idempotency("p", "t", "k", "d2", ttl);
    ASSERT_TRUE(done);
    EXPECT_EQ(done->args_digest, "d1");
    EXPECT_TRUE(done->is_error);
    store.release_idempotency("p", "t", "k");  // finished records are not released
    EXPECT_TRUE(store.claim_idempotency("p", "t", "k", "d1", ttl));
    store.release_idempotency("q", "t", "k");
    EXPECT_FALSE(store.claim_idempotency("q", "t", "k", "d1", ttl)) << "released: claimable";
    // A pending claim of a dead process is taken over once stale.
    EXPECT_FALSE(store.claim_idempotency("q", "t", "k", "d1", std::chrono::seconds(-1)));
}

TEST_F(Store, DraftIsSentOnce) {
    DB store(path);
    auto d = store.create_draft(
        {.client_id = "c", .recipient = "x@y.example", .subject = "s", .html = "h",
         .principal = "p"});
    EXPECT_TRUE(d.id.starts_with("em_"));
    EXPECT_TRUE(store.mark_draft_sent(d.id));
    EXPECT_FALSE(store.mark_draft_sent(d.id));
    EXPECT_EQ(store.draft(d.id, "p")->status, "sent");
    EXPECT_FALSE(store.mark_draft_sent("em_unknown"));
    EXPECT_FALSE(store.draft("em_unknown", "p"));
}

TEST_F(Store, ConfirmationIsBoundAndSingleUse) {
    DB store(path);
    auto c = store.create_confirmation("alice", "send_prospect_email", "d1", std::chrono::seconds(600));
    EXPECT_EQ(store.consume_confirmation(c.id, "bob", "send_prospect_email", "d1"),
              ConfirmOutcome::mismatch);
    EXPECT_EQ(store.consume_confirmation(c.id, "alice", "deploy_article", "d1"),
              ConfirmOutcome::mismatch);
    EXPECT_EQ(store.consume_confirmation(c.id, "alice", "send_prospect_email", "d2"),
              ConfirmOutcome::mismatch);
    EXPECT_EQ(store.consume_confirmation(c.id, "alice", "send_prospect_email", "d1"),
              ConfirmOutcome::accepted);
    EXPECT_EQ(store.consume_confirmation(c.id, "alice", "send_prospect_email", "d1"),
              ConfirmOutcome::used);
    auto old = store.create_confirmation("alice", "t", "d", std::chrono::seconds(-5));
    EXPECT_EQ(store.consume_confirmation(old.id, "alice", "t", "d"), ConfirmOutcome::expired);
    EXPECT_EQ(store.consume_confirmation("cf_nope", "alice", "t", "d"), ConfirmOutcome::unknown);
}

// The store stamps and expires on the clock it was given (Store::use_clock), not the
// process's: a confirmation made at a fixed time expires when that clock passes its lifetime.
TEST_F(Store, StampsAndExpiresOnTheClockItWasGiven) {
    const std::chrono::system_clock::time_point at{std::chrono::seconds(1'955'000'000)};
    const agency::testing::ManualClock clock(at);
    DB store(path);
    store.use_clock(clock);
    const auto job = store.create_job("audit", "demo-law", "alice", json::object());
    EXPECT_EQ(job.created_at, 1'955'000'000);
    const auto c = store.create_confirmation("alice", "t", "d", std::chrono::seconds(600));
    EXPECT_EQ(c.expires_at, 1'955'000'600);
    agency::state::WriteLogEntry entry;
    entry.tool = "t";
    EXPECT_EQ(store.append_write_log(entry).at_ms, 1'955'000'000'000);
    clock.advance(std::chrono::seconds(601));
    EXPECT_EQ(store.consume_confirmation(c.id, "alice", "t", "d"), ConfirmOutcome::expired);
}

TEST_F(Store, ConcurrentWritersOnOneConnection) {
    DB store(path);
    std::vector<std::thread> threads;
    std::atomic<int> claims{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 25; ++i) {
                store.create_job("seo_audit", "c" + std::to_string(t), "p", json::object());
                if (!store.claim_idempotency("p", "t", "shared", "d", std::chrono::seconds(600)))
                    ++claims;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(store.unfinished_jobs().size(), 100u);
    EXPECT_EQ(claims.load(), 1) << "exactly one caller claims a key";
}

TEST_F(Store, TwoConnectionsShareTheFile) {
    DB first(path);
    DB second(path);  // another process on the same file (WAL, busy timeout)
    auto job = first.create_job("seo_audit", "c", "p", json::object());
    ASSERT_TRUE(second.job(job.id));
    EXPECT_TRUE(second.claim_job(job.id, "i1", std::chrono::seconds(30), false));
    EXPECT_EQ(first.job(job.id)->status, "running");
}

TEST_F(Store, InMemoryAndErrors) {
    DB memory(":memory:");
    EXPECT_TRUE(memory.create_job("k", "c", "p", json::object()).id.starts_with("aud_"));
    EXPECT_THROW(DB("/proc/agency-no-such-dir/state.db"), agency::state::StoreError);
}

// Starting a server writes nothing: a new database is created by the first call that needs it,
// while a path where none can be created still fails at start.
TEST_F(Store, NewDatabaseIsCreatedByTheFirstWrite) {
    DB store(path);
    EXPECT_TRUE(fs::is_directory(fs::path(path).parent_path()));
    EXPECT_TRUE(store.unfinished_jobs().empty());
    EXPECT_TRUE(store.unfinished().empty());
    EXPECT_FALSE(fs::exists(path)) << "reading what a previous process left created the file";
    const std::string id = store.create_job("k", "c", "p", json::object()).id;
    EXPECT_TRUE(fs::exists(path));
    DB reopened(path);
    ASSERT_EQ(reopened.unfinished_jobs().size(), 1u);
    EXPECT_EQ(reopened.unfinished_jobs()[0].id, id);

    // A path under a plain file can never hold a database, whoever runs the test (root too).
    std::ofstream(dir / "plain-file") << "not a directory";
    EXPECT_THROW(DB((dir / "plain-file" / "sub" / "state.db").string()), agency::state::StoreError);
    EXPECT_THROW(DB((dir / "plain-file" / "state.db").string()), agency::state::StoreError);
}

TEST_F(Store, DefaultPathFollowsXdgStateHome) {
    const char* old = std::getenv("XDG_STATE_HOME");
    const std::string saved = old ? old : "";
    ::setenv("XDG_STATE_HOME", "/tmp/xdg-state", 1);
    EXPECT_EQ(DB::default_path(), "/tmp/xdg-state/agency-mcp/state.db");
    ::unsetenv("XDG_STATE_HOME");
    EXPECT_TRUE(DB::default_path().ends_with("/.local/state/agency-mcp/state.db"));
    if (old) ::setenv("XDG_STATE_HOME", saved.c_str(), 1);
}

TEST_F(Store, CancelOnlyUnfinishedJobsAndKeepALateResult) {
    DB store(path);
    auto queued = store.create_job("seo_audit", "c", "p", {{"url", "https://q.example"}});
    auto running = store.create_job("seo_audit", "c", "p", {{"url", "https://r.example"}});
    auto done = store.create_job("seo_audit", "c", "p", {{"url", "https://d.example"}});
    ASSERT_TRUE(store.claim_job(running.id, "i1", std::chrono::seconds(30), false));
    store.finish_job(done.id, true, {{"report_id", "r1"}}, nullptr);

    EXPECT_EQ(store.cancel_job(queued.id), std::optional<std::string>("queued"));
    EXPECT_FALSE(store.claim_job(queued.id, "i1", std::chrono::seconds(30), true)) << "a cancelled job is never started";
    EXPECT_EQ(store.cancel_job(running.id), std::optional<std::string>("running"));
    EXPECT_FALSE(store.cancel_job(done.id)) << "a finished job cannot be cancelled";
    EXPECT_FALSE(store.cancel_job(queued.id)) << "nor a cancelled one, twice";
    EXPECT_FALSE(store.cancel_job("aud_unknown"));
    EXPECT_EQ(store.job(done.id)->status, "succeeded");

    // The POST of the running job was already out: its result is kept, its status is not.
    store.finish_job(running.id, true, {{"report_id", "r2"}}, nullptr);
    auto late = store.job(running.id);
    EXPECT_EQ(late->status, "cancelled");
    EXPECT_EQ(late->result.value("report_id", ""), "r2");
    EXPECT_TRUE(store.unfinished_jobs().empty());
}

// A state file from before 'cancelled' existed: its jobs survive and can be cancelled.
TEST_F(Store, OldJobTableIsMigratedForCancelled) {
    fs::create_directories(fs::path(path).parent_path());
    const std::string old_schema =
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, client_id TEXT NOT NULL, "
        "principal TEXT NOT NULL, args TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN "
        "('queued','running','succeeded','failed')), result TEXT, error TEXT, created_at INTEGER "
        "NOT NULL, updated_at INTEGER NOT NULL); INSERT INTO jobs VALUES ('aud_old', "
        "'seo_audit', 'c', 'alice', '{\"url\":\"https://o.example\"}', 'queued', NULL, NULL, 1, "
        "1);";
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, old_schema.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    DB store(path);
    auto job = store.job("aud_old");
    ASSERT_TRUE(job);
    EXPECT_EQ(job->args.value("url", ""), "https://o.example");
    EXPECT_EQ(store.cancel_job("aud_old"), std::optional<std::string>("queued"));
    EXPECT_EQ(store.job("aud_old")->status, "cancelled");
    EXPECT_TRUE(store.unfinished_jobs().empty()) << "a cancelled job is not picked up again";
}
