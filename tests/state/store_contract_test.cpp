// The Store contract (state/store.hpp, server/task_store.hpp), one suite against both backends:
// a SQLite file in a temporary directory and a fresh database on a throwaway PostgreSQL
// cluster (tests/pg_cluster.hpp). Races run several store objects on the same database, as
// several instances would.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "base/crypto.hpp"
#include "tests/pg_cluster.hpp"
#include "state/open_store.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/shared_store.hpp"
#include "tests/support/wait.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace agency::testing::store_names;
using agency::state::Store;
using json = nlohmann::json;

enum class Backend { sqlite, postgres };

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

TaskRecord task(const std::string& id, const std::string& owner, TaskStatus status,
                std::int64_t created_ms) {
    TaskRecord t;
    t.id = id;
    t.owner = owner;
    t.tool = "run_seo_audit";
    t.era = "modern";
    t.status = status;
    t.status_message = "working on it";
    t.created_ms = created_ms;
    t.updated_ms = created_ms;
    t.ttl_ms = 3'600'000;
    t.arguments = {{"url", "https://example.com"}};
    return t;
}

// Every exported line, sorted: rows are compared as a set (each backend has its own order).
std::vector<std::string> exported(Store& store) {
    std::vector<std::string> lines;
    store.export_rows([&](const json& line) { lines.push_back(line.dump()); });
    std::sort(lines.begin(), lines.end());
    return lines;
}

// A bit of every table, with nulls, JSON and booleans in it.
void fill(Store& store) {
    auto job = store.create_job("seo_audit", "acme", "alice", {{"url", "https://a.example"}});
    store.finish_job(job.id, true, {{"score", 91}, {"pages", json::array({1, 2})}}, nullptr);
    store.create_job("seo_audit", "acme", "bob", json::object());
    store.claim_idempotency("alice", "send", "k1", "d1", 600s);
    store.complete_idempotency("alice", "send", "k1", true, R"({"error":"x"})");
    store.claim_idempotency("alice", "send", "k2", "d2", 600s);
    store.create_draft(Draft{.client_id = "acme",
                             .recipient = "r@example.com",
                             .subject = "Hi",
                             .html = "<p>é ✓</p>",
                             .gateway_id = "",
                             .prospect_url = "u",
                             .principal = "alice"});
    auto c = store.create_confirmation("alice", "send", "d", 60s);
    store.consume_confirmation(c.id, "alice", "send", "d");
    store.create_confirmation("bob", "send", "d", 60s);
    auto t = task("t1", "alice", TaskStatus::input_required, 1000);
    t.input_requests = {{"k", {{"method", "elicitation/create"}}}};
    t.resume = {{"step", 2}};
    store.put(t);
    auto done = task("t2", "alice", TaskStatus::failed, 2000);
    done.error = {{"code", -32603}, {"message", "boom"}};
    store.put(done);
    auto slot = store.acquire_credit("acme", 5, 50, 600s);
    store.release_credit(slot.id);
    store.acquire_credit("acme", 5, 50, 600s);
    store.append_write_log({.principal = "alice",
                            .tool = "deploy_article",
                            .client_id = "acme",
                            .args_digest = "d",
                            .args_summary = {{"post_id", "p1"}, {"n", 3}},
                            .confirmation = "person",
                            .outcome = "ok",
                            .record_id = "p1",
                            .replayed = true});
    store.append_write_log({.principal = "bob", .tool = "generate_article", .outcome = "refused",
                            .reason = "scope", .detail = "é ✓"});
}

// The write log as `ids` in the order read.
std::vector<std::string> log_ids(Store& store, const agency::state::WriteLogQuery& query) {
    std::vector<std::string> ids;
    store.read_write_log(query, [&](const WriteLogEntry& e) { ids.push_back(e.id); });
    return ids;
}

class StoreContract : public ::testing::TestWithParam<Backend> {
protected:
    fs::path dir;
    std::string where;  // a file path or a postgres:// URL

    void SetUp() override {
        dir = fs::temp_directory_path() / ("agency-contract-" + agency::crypto::random_hex(6));
        fs::create_directories(dir);
        where = fresh();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    // Another empty database of the same backend.
    std::string fresh() {
        if (GetParam() == Backend::sqlite)
            return (dir / (agency::crypto::random_hex(4) + ".db")).string();
        try {
            return agency::testing::pg_fresh_database();
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what();
            throw;
        }
    }
    std::unique_ptr<Store> open(const std::string& at) {
        if (GetParam() == Backend::sqlite) return std::make_unique<SqliteStore>(at);
        return std::make_unique<PgStore>(at);
    }
    std::unique_ptr<Store> open() { return open(where); }
};

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::sqlite ? "Sqlite" : "Postgres";
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

TEST_P(StoreContract, OpenStoreChoosesTheBackendByTheName) {
    auto store = agency::state::open_store(where);
    EXPECT_EQ(store->shared(), GetParam() == Backend::postgres);
    EXPECT_EQ(store->describe(), where);
}

// Readiness's write probe (issue 30) commits a write and leaves nothing behind.
TEST_P(StoreContract, ProbeWriteLeavesNothingBehind) {
    auto store = open();
    const auto rows = [&] {
        std::size_t n = 0;
        store->export_rows([&](const json&) { ++n; });
        return n;
    };
    store->create_confirmation("alice", "deploy_blog", "digest", 60s);
    const std::size_t before = rows();
    EXPECT_NO_THROW(store->probe_write());
    EXPECT_NO_THROW(store->probe_write());
    EXPECT_EQ(rows(), before);
}

TEST_P(StoreContract, JobClaimRules) {
    auto store = open();
    const auto job = store->create_job("seo_audit", "acme", "alice", {{"url", "u"}});
    EXPECT_FALSE(store->claim_job("aud_unknown", "a", 60s, false));

    auto before = store->claim_job(job.id, "a", 60s, false);  // queued
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, "queued") << "the row as it was before the claim";
    EXPECT_EQ(before->args, json({{"url", "u"}}));
    const auto running = store->job(job.id);
    EXPECT_EQ(running->status, "running");
    EXPECT_EQ(running->lease_owner, "a");
    EXPECT_GT(running->lease_until_ms, now_ms() + 50'000);

    EXPECT_FALSE(store->claim_job(job.id, "b", 60s, false)) << "another owner's live lease";
    before = store->claim_job(job.id, "a", 60s, false);
    ASSERT_TRUE(before) << "the owner's own lease";
    EXPECT_EQ(before->lease_owner, "a");
    ASSERT_TRUE(store->claim_job(job.id, "b", 60s, true)) << "force takes any lease";
    EXPECT_EQ(store->job(job.id)->lease_owner, "b");

    ASSERT_TRUE(store->claim_job(job.id, "b", -1s, false));  // b's lease has run out
    before = store->claim_job(job.id, "c", 60s, false);
    ASSERT_TRUE(before) << "an expired lease is taken over";
    EXPECT_EQ(before->lease_owner, "b");

    store->finish_job(job.id, true, {{"score", 1}}, nullptr);
    EXPECT_FALSE(store->claim_job(job.id, "c", 60s, true)) << "finished";
    const auto other = store->create_job("seo_audit", "acme", "alice", json::object());
    EXPECT_EQ(store->cancel_job(other.id), "queued");
    EXPECT_FALSE(store->claim_job(other.id, "c", 60s, true)) << "cancelled";
}

TEST_P(StoreContract, JobLeasesRenewAndOrphans) {
    auto store = open();
    const auto queued = store->create_job("seo_audit", "acme", "p", json::object());
    const auto held = store->create_job("seo_audit", "acme", "p", json::object());
    const auto lapsed = store->create_job("seo_audit", "acme", "p", json::object());
    ASSERT_TRUE(store->claim_job(held.id, "a", 60s, false));
    ASSERT_TRUE(store->claim_job(lapsed.id, "b", -1s, false));

    auto ids = [](const std::vector<agency::state::Job>& jobs) {
        std::vector<std::string> out;
        for (const auto& j : jobs) out.push_back(j.id);
        std::sort(out.begin(), out.end());
        return out;
    };
    auto want = std::vector<std::string>{queued.id, lapsed.id};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(ids(store->orphaned_jobs(10)), want);
    EXPECT_EQ(store->orphaned_jobs(1).size(), 1u);

    store->renew_job_leases("b", 60s);
    EXPECT_EQ(ids(store->orphaned_jobs(10)), std::vector<std::string>{queued.id});
    EXPECT_GT(store->job(lapsed.id)->lease_until_ms, now_ms() + 50'000);
    EXPECT_EQ(store->unfinished_jobs().size(), 3u);
}

TEST_P(StoreContract, JobFinishAndCancel) {
    auto store = open();
    const auto job = store->create_job("seo_audit", "acme", "p", json::object());
    ASSERT_TRUE(store->claim_job(job.id, "a", 60s, false));
    EXPECT_EQ(store->cancel_job(job.id), "running");
    EXPECT_FALSE(store->cancel_job(job.id)) << "already cancelled";
    store->finish_job(job.id, true, {{"late", true}}, nullptr);
    const auto after = store->job(job.id);
    EXPECT_EQ(after->status, "cancelled") << "a cancelled job stays cancelled";
    EXPECT_EQ(after->result, json({{"late", true}})) << "its late result is still recorded";

    const auto failed = store->create_job("seo_audit", "acme", "p", json::object());
    store->finish_job(failed.id, false, nullptr, {{"reason", "upstream"}});
    EXPECT_EQ(store->job(failed.id)->status, "failed");
    EXPECT_EQ(store->job(failed.id)->error, json({{"reason", "upstream"}}));
    EXPECT_TRUE(store->job(failed.id)->result.is_null());
    EXPECT_FALSE(store->cancel_job(failed.id)) << "finished";
    EXPECT_FALSE(store->cancel_job("aud_nope"));
    EXPECT_TRUE(store->unfinished_jobs().empty());
}

TEST_P(StoreContract, Idempotency) {
    auto store = open();
    EXPECT_FALSE(store->claim_idempotency("p", "t", "k", "d", 600s)) << "claimed";
    auto again = store->claim_idempotency("p", "t", "k", "d", 600s);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->pending);
    auto other = store->claim_idempotency("p", "t", "k", "other", -1s);
    ASSERT_TRUE(other) << "another digest never takes a claim over";
    EXPECT_EQ(other->args_digest, "d");
    EXPECT_FALSE(store->claim_idempotency("p", "t", "k", "d", -1s)) << "stale: taken over";
    EXPECT_FALSE(store->claim_idempotency("p", "u", "k", "d", 600s)) << "per tool";
    EXPECT_FALSE(store->claim_idempotency("q", "t", "k", "d", 600s)) << "per principal";

    store->complete_idempotency("p", "t", "k", true, R"({"isError":true})");
    auto replay = store->claim_idempotency("p", "t", "k", "d", -1s);
    ASSERT_TRUE(replay) << "a finished record is never taken over";
    EXPECT_FALSE(replay->pending);
    EXPECT_TRUE(replay->is_error);
    EXPECT_EQ(replay->result, R"({"isError":true})");
    store->release_idempotency("p", "t", "k");
    EXPECT_TRUE(store->find_idempotency("p", "t", "k")) << "release forgets pending claims only";

    store->release_idempotency("q", "t", "k");
    EXPECT_FALSE(store->find_idempotency("q", "t", "k"));
    EXPECT_FALSE(store->claim_idempotency("q", "t", "k", "d2", 600s)) << "usable again";
}

TEST_P(StoreContract, Drafts) {
    auto store = open();
    const auto d = store->create_draft(Draft{.client_id = "acme",
                                             .recipient = "r@example.com",
                                             .subject = "Hello",
                                             .html = "<p>x</p>",
                                             .gateway_id = "bo_1",
                                             .prospect_url = "https://p",
                                             .principal = "alice"});
    EXPECT_EQ(d.status, "draft");
    const auto back = store->draft(d.id, "alice");
    ASSERT_TRUE(back);
    EXPECT_EQ(back->subject, "Hello");
    EXPECT_EQ(back->gateway_id, "bo_1");
    EXPECT_EQ(back->created_at, d.created_at);
    EXPECT_TRUE(store->mark_draft_sent(d.id));
    EXPECT_FALSE(store->mark_draft_sent(d.id)) << "sent once";
    EXPECT_EQ(store->draft(d.id, "alice")->status, "sent");
    EXPECT_FALSE(store->mark_draft_sent("em_nope"));
    EXPECT_FALSE(store->draft("em_nope", "alice"));
}

TEST_P(StoreContract, Confirmations) {
    auto store = open();
    const auto c = store->create_confirmation("alice", "send", "d", 60s);
    EXPECT_EQ(store->consume_confirmation(c.id, "bob", "send", "d"), ConfirmOutcome::mismatch);
    EXPECT_EQ(store->consume_confirmation(c.id, "alice", "other", "d"), ConfirmOutcome::mismatch);
    EXPECT_EQ(store->consume_confirmation(c.id, "alice", "send", "x"), ConfirmOutcome::mismatch);
    EXPECT_EQ(store->consume_confirmation(c.id, "alice", "send", "d"), ConfirmOutcome::accepted);
    EXPECT_EQ(store->consume_confirmation(c.id, "alice", "send", "d"), ConfirmOutcome::used);
    EXPECT_EQ(store->consume_confirmation("cf_nope", "alice", "send", "d"),
              ConfirmOutcome::unknown);
    const auto old = store->create_confirmation("alice", "send", "d", -5s);
    EXPECT_EQ(store->consume_confirmation(old.id, "alice", "send", "d"), ConfirmOutcome::expired);
}

TEST_P(StoreContract, Credits) {
    auto store = open();
    const auto a = store->acquire_credit("acme", 2, 10, 600s);
    const auto b = store->acquire_credit("acme", 2, 10, 600s);
    ASSERT_TRUE(a.granted && b.granted);
    EXPECT_NE(a.id, b.id);
    auto refused = store->acquire_credit("acme", 2, 10, 600s);
    EXPECT_FALSE(refused.granted);
    EXPECT_EQ(refused.why, "in_flight");
    EXPECT_TRUE(store->acquire_credit("other", 2, 10, 600s).granted) << "per client";
    store->release_credit(a.id);
    EXPECT_TRUE(store->acquire_credit("acme", 2, 10, 600s).granted) << "a released slot";

    // Per minute: released slots still count.
    for (int i = 0; i < 3; ++i) {
        const auto s = store->acquire_credit("mini", 10, 3, 600s);
        ASSERT_TRUE(s.granted);
        store->release_credit(s.id);
    }
    refused = store->acquire_credit("mini", 10, 3, 600s);
    EXPECT_FALSE(refused.granted);
    EXPECT_EQ(refused.why, "per_minute");
    EXPECT_GE(refused.retry_after_s, 1);
    EXPECT_LE(refused.retry_after_s, 61);

    // A slot held past the hold limit counts as abandoned by a dead instance.
    ASSERT_TRUE(store->acquire_credit("held", 1, 10, 600s).granted);
    EXPECT_FALSE(store->acquire_credit("held", 1, 10, 600s).granted);
    EXPECT_TRUE(store->acquire_credit("held", 1, 10, -1s).granted);
}

TEST_P(StoreContract, TasksPutGetListAndExpire) {
    auto store = open();
    const std::int64_t now = now_ms();
    auto first = task("t1", "alice", TaskStatus::working, now - 3000);
    first.resume = {{"step", 1}};
    store->put(first);
    store->put(task("t2", "alice", TaskStatus::completed, now - 2000));
    store->put(task("t3", "alice", TaskStatus::input_required, now - 1000));
    store->put(task("t4", "bob", TaskStatus::working, now));
    auto old = task("t5", "alice", TaskStatus::completed, now - 10'000);
    old.ttl_ms = 1000;
    store->put(old);

    const auto got = store->get("t1");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->resume, json({{"step", 1}}));
    EXPECT_EQ(got->arguments, first.arguments);
    EXPECT_TRUE(got->error.is_null());
    EXPECT_FALSE(store->get("nope"));

    auto ids = [](const std::vector<TaskRecord>& ts) {
        std::vector<std::string> out;
        for (const auto& t : ts) out.push_back(t.id);
        return out;
    };
    EXPECT_EQ(ids(store->list("alice", "modern", 0, 10)),
              (std::vector<std::string>{"t3", "t2", "t1", "t5"}));
    EXPECT_EQ(ids(store->list("alice", "modern", 1, 2)), (std::vector<std::string>{"t2", "t1"}));
    EXPECT_TRUE(store->list("alice", "legacy", 0, 10).empty()) << "one era's tasks at a time";
    auto unfinished = ids(store->unfinished());
    std::sort(unfinished.begin(), unfinished.end());
    EXPECT_EQ(unfinished, (std::vector<std::string>{"t1", "t3", "t4"}));
    store->erase_expired(now);
    EXPECT_FALSE(store->get("t5"));
    EXPECT_TRUE(store->get("t1"));

    auto done = first;
    done.status = TaskStatus::completed;
    done.result = R"({"content":[]})";
    store->put(done);
    EXPECT_EQ(store->get("t1")->status, TaskStatus::completed);
    EXPECT_EQ(store->get("t1")->result, R"({"content":[]})");
}

TEST_P(StoreContract, CancelledTaskStaysCancelledAndLeasesAreNotPut) {
    auto store = open();
    auto t = task("t1", "alice", TaskStatus::working, now_ms());
    store->put(t);
    ASSERT_TRUE(store->claim_task("t1", "i1", 60'000, false));
    t.status_message = "still working";
    store->put(t);  // the record put carries no lease: the stored one is kept
    EXPECT_EQ(store->get("t1")->lease_owner, "i1");
    EXPECT_EQ(store->get("t1")->status_message, "still working");

    t.status = TaskStatus::cancelled;
    store->put(t);
    t.status = TaskStatus::completed;
    t.result = "late";
    store->put(t);
    EXPECT_EQ(store->get("t1")->status, TaskStatus::cancelled) << "a cancel wins";
    EXPECT_EQ(store->get("t1")->result, "");
}

TEST_P(StoreContract, TaskLeasesClaimRenewOrphansAndCancels) {
    auto store = open();
    const std::int64_t now = now_ms();
    store->put(task("t1", "alice", TaskStatus::working, now - 2000));
    store->put(task("t2", "alice", TaskStatus::working, now - 1000));
    store->put(task("t3", "alice", TaskStatus::completed, now));
    EXPECT_EQ(store->orphaned_tasks(10).size(), 2u);

    const auto before = store->claim_task("t1", "i1", 60'000, false);
    ASSERT_TRUE(before);
    EXPECT_EQ(before->lease_owner, "") << "as stored before the claim";
    EXPECT_FALSE(store->claim_task("t1", "i2", 60'000, false)) << "a live lease";
    EXPECT_TRUE(store->claim_task("t1", "i2", 60'000, true)) << "forced";
    EXPECT_FALSE(store->claim_task("t3", "i1", 60'000, true)) << "finished";
    EXPECT_FALSE(store->claim_task("nope", "i1", 60'000, true));
    ASSERT_TRUE(store->claim_task("t2", "i1", -1000, false));
    const auto orphans = store->orphaned_tasks(10);
    ASSERT_EQ(orphans.size(), 1u);
    EXPECT_EQ(orphans[0].id, "t2") << "its lease ran out";
    EXPECT_TRUE(store->claim_task("t2", "i2", 60'000, false)) << "taken over";

    EXPECT_TRUE(store->renew_task_leases("i2", 60'000).empty());
    EXPECT_TRUE(store->orphaned_tasks(10).empty());
    auto cancelled = *store->get("t2");
    cancelled.status = TaskStatus::cancelled;
    store->put(cancelled);
    EXPECT_EQ(store->renew_task_leases("i2", 60'000), std::vector<std::string>{"t2"});
    EXPECT_TRUE(store->renew_task_leases("i2", 60'000).empty()) << "reported once";
    EXPECT_TRUE(store->renew_task_leases("i1", 60'000).empty()) << "not i1's any more";
}

// Issue 30: rows by outcome, so that refusals cannot crowd the writes out of a newest-N read.
TEST_P(StoreContract, WriteLogReadsByOutcome) {
    auto store = open();
    for (const char* outcome : {"ok", "refused", "failed", "preview", "unknown", "refused"})
        store->append_write_log({.tool = "deploy_article", .client_id = "acme", .outcome = outcome});
    auto outcomes = [&](agency::state::WriteLogOutcomes which, std::size_t limit) {
        std::vector<std::string> out;
        store->read_write_log(
            {.client_id = "acme", .limit = limit, .newest_first = true, .outcomes = which},
            [&](const WriteLogEntry& e) { out.push_back(e.outcome); });
        return out;
    };
    using agency::state::WriteLogOutcomes;
    EXPECT_EQ(outcomes(WriteLogOutcomes::sent, 0),
              (std::vector<std::string>{"unknown", "failed", "ok"}));
    EXPECT_EQ(outcomes(WriteLogOutcomes::not_sent, 2),
              (std::vector<std::string>{"refused", "preview"}));
    EXPECT_EQ(outcomes(WriteLogOutcomes::all, 0).size(), 6u);
}

// Issue 35: `write-log --caller`: one caller's rows, with the other filters and the limit
// applied to them (not to every caller's).
TEST_P(StoreContract, WriteLogReadsByCaller) {
    auto store = open();
    const auto a1 = store->append_write_log(
        {.at_ms = 1000, .principal = "key:alice", .tool = "deploy_article", .client_id = "acme"});
    store->append_write_log(
        {.at_ms = 2000, .principal = "key:bob", .tool = "deploy_article", .client_id = "acme"});
    const auto o1 = store->append_write_log({.at_ms = 3000,
                                             .principal = "oauth:https://id.example alice",
                                             .tool = "generate_article",
                                             .client_id = "zeta"});
    const auto a2 = store->append_write_log(
        {.at_ms = 4000, .principal = "key:alice", .tool = "generate_article", .client_id = "zeta"});
    store->append_write_log(
        {.at_ms = 5000, .principal = "key:bob", .tool = "generate_article", .client_id = "zeta"});
    EXPECT_EQ(log_ids(*store, {.principal = "key:alice"}), (std::vector<std::string>{a1.id, a2.id}));
    EXPECT_EQ(log_ids(*store, {.principal = "oauth:https://id.example alice"}),
              (std::vector<std::string>{o1.id}));
    EXPECT_EQ(log_ids(*store, {.client_id = "zeta", .principal = "key:alice"}),
              (std::vector<std::string>{a2.id}));
    EXPECT_EQ(log_ids(*store, {.tool = "deploy_article", .principal = "key:alice"}),
              (std::vector<std::string>{a1.id}));
    EXPECT_EQ(log_ids(*store, {.principal = "key:alice", .limit = 1, .newest_first = true}),
              (std::vector<std::string>{a2.id}));
    EXPECT_EQ(log_ids(*store, {.since_ms = 1500, .principal = "key:alice"}),
              (std::vector<std::string>{a2.id}));
    EXPECT_TRUE(log_ids(*store, {.principal = "alice"}).empty()) << "the principal, exactly";
    EXPECT_EQ(log_ids(*store, {}).size(), 5u);
}

TEST_P(StoreContract, WriteLogAppendsReadsAndPrunes) {
    auto store = open();
    EXPECT_TRUE(log_ids(*store, {}).empty());
    const auto a = store->append_write_log({.at_ms = 1000,
                                            .principal = "alice",
                                            .tool = "deploy_article",
                                            .client_id = "acme",
                                            .args_digest = "d1",
                                            .args_summary = {{"post_id", "p1"}},
                                            .confirmation = "confirmation_id",
                                            .confirmation_ref = "ref",
                                            .outcome = "ok",
                                            .record_id = "p1",
                                            .replayed = true,
                                            .detail = "published"});
    const auto b = store->append_write_log(
        {.at_ms = 2000, .principal = "bob", .tool = "generate_article", .client_id = "acme"});
    const auto c = store->append_write_log(
        {.at_ms = 3000, .principal = "bob", .tool = "deploy_article", .client_id = "zeta"});
    EXPECT_TRUE(a.id.starts_with("wl_"));
    EXPECT_NE(a.id, b.id);
    const auto now = store->append_write_log({.tool = "deploy_article"});
    EXPECT_GE(now.at_ms, now_ms() - 60'000) << "the time is the store's when unset";

    EXPECT_EQ(log_ids(*store, {}), (std::vector<std::string>{a.id, b.id, c.id, now.id}));
    EXPECT_EQ(log_ids(*store, {.client_id = "acme"}), (std::vector<std::string>{a.id, b.id}));
    EXPECT_EQ(log_ids(*store, {.tool = "deploy_article", .limit = 2}),
              (std::vector<std::string>{a.id, c.id}));
    EXPECT_EQ(log_ids(*store, {.since_ms = 2000, .limit = 2, .newest_first = true}),
              (std::vector<std::string>{now.id, c.id}));
    std::vector<WriteLogEntry> read;
    store->read_write_log({.client_id = "acme", .tool = "deploy_article"},
                          [&](const WriteLogEntry& e) { read.push_back(e); });
    ASSERT_EQ(read.size(), 1u);
    const WriteLogEntry& r = read[0];
    EXPECT_EQ(r.at_ms, 1000);
    EXPECT_EQ(r.principal, "alice");
    EXPECT_EQ(r.args_digest, "d1");
    EXPECT_EQ(r.args_summary, json({{"post_id", "p1"}}));
    EXPECT_EQ(r.confirmation, "confirmation_id");
    EXPECT_EQ(r.confirmation_ref, "ref");
    EXPECT_EQ(r.outcome, "ok");
    EXPECT_EQ(r.record_id, "p1");
    EXPECT_TRUE(r.replayed);
    EXPECT_EQ(r.detail, "published");

    // Append-only: the database itself refuses a change to a row.
    if (GetParam() == Backend::sqlite) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(where.c_str(), &db), SQLITE_OK);
        EXPECT_NE(sqlite3_exec(db, "UPDATE write_log SET outcome = 'ok'", nullptr, nullptr,
                               nullptr),
                  SQLITE_OK);
        sqlite3_close(db);
    } else {
        EXPECT_THROW(agency::testing::pg_exec(where, "UPDATE write_log SET outcome = 'ok'"),
                     std::exception);
    }

    // Retention: rows before the date go, and the prune itself is recorded.
    const std::int64_t deleted = store->prune_write_log(
        2500, {.principal = "operator", .tool = "write-log prune", .outcome = "ok",
               .detail = "before 1970-01-01T00:00:02Z"});
    EXPECT_EQ(deleted, 2);
    std::vector<WriteLogEntry> left;
    store->read_write_log({}, [&](const WriteLogEntry& e) { left.push_back(e); });
    ASSERT_EQ(left.size(), 3u);
    EXPECT_EQ(left[0].id, c.id);
    const WriteLogEntry& note = left.back().tool == "write-log prune" ? left.back() : left[1];
    EXPECT_EQ(note.tool, "write-log prune");
    EXPECT_EQ(note.detail, "before 1970-01-01T00:00:02Z: 2 row(s) deleted");
}

// A database of version 2 (before the write log) gains the table when opened.
TEST(SqliteMigration, Version2GainsTheWriteLog) {
    const fs::path file = fs::temp_directory_path() / ("agency-v2-" + agency::crypto::random_hex(6) + ".db");
    {
        SqliteStore store(file.string());
        store.create_job("seo_audit", "acme", "p", json::object());
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DROP TABLE write_log; PRAGMA user_version = 2", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    SqliteStore store(file.string());
    EXPECT_EQ(store.schema_version(), agency::state::kSchemaVersion);
    EXPECT_EQ(store.unfinished_jobs().size(), 1u) << "rows kept";
    store.append_write_log({.tool = "deploy_article", .outcome = "ok"});
    int rows = 0;
    store.read_write_log({}, [&](const WriteLogEntry&) { ++rows; });
    EXPECT_EQ(rows, 1);
    fs::remove(file);
}

TEST_P(StoreContract, ExportImportRoundTrip) {
    auto source = open();
    fill(*source);
    const auto rows = exported(*source);
    EXPECT_EQ(rows.size(), 13u);
    auto copy = open(fresh());
    for (const auto& line : rows) copy->import_row(json::parse(line));
    EXPECT_EQ(exported(*copy), rows);
    EXPECT_THROW(copy->import_row(json::parse(rows.front())), StoreError) << "key exists";
    EXPECT_THROW(copy->import_row({{"table", "users"}, {"row", {{"id", "x"}}}}), StoreError);
    EXPECT_THROW(copy->import_row({{"table", "jobs"}, {"row", {{"id; DROP", "x"}}}}), StoreError);
    EXPECT_EQ(exported(*copy), rows) << "refused rows change nothing";
}

TEST_P(StoreContract, SchemaVersion) {
    {
        auto store = open();
        store->create_job("seo_audit", "acme", "p", json::object());
        EXPECT_EQ(store->schema_version(), agency::state::kSchemaVersion);
    }
    const int newer = agency::state::kSchemaVersion + 1;
    if (GetParam() == Backend::sqlite) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(where.c_str(), &db), SQLITE_OK);
        sqlite3_exec(db, ("PRAGMA user_version = " + std::to_string(newer)).c_str(), nullptr,
                     nullptr, nullptr);
        sqlite3_close(db);
    } else {
        agency::testing::pg_exec(where,
                                 "UPDATE agency_schema SET version = " + std::to_string(newer));
    }
    try {
        // SQLite opens its file at the first call that needs it (a probing process opens
        // nothing); the server's first request begins with one (Server::begin_work).
        open()->unfinished_jobs();
        FAIL() << "a newer schema is refused";
    } catch (const StoreError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("version " + std::to_string(newer)), std::string::npos) << message;
        EXPECT_NE(message.find("(" + std::to_string(agency::state::kSchemaVersion) + ")"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("run a newer agency-mcp"), std::string::npos) << message;
    }
}

// --- races: several store objects on one database, as several instances ----------------------

// How many of the stores' attempts, started together on one thread each, won.
template <typename F>
int race(std::vector<std::unique_ptr<Store>>& stores, F&& attempt) {
    std::atomic<bool> go{false};
    std::atomic<int> won{0};
    std::mutex mutex;
    std::vector<std::string> errors;
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < stores.size(); ++i) {
        threads.emplace_back([&, i] {
            while (!go) std::this_thread::yield();
            try {
                if (attempt(*stores[i], static_cast<int>(i))) ++won;
            } catch (const std::exception& e) {
                std::lock_guard lock(mutex);
                errors.push_back(e.what());
            }
        });
    }
    go = true;
    for (auto& t : threads) t.join();
    for (const auto& e : errors) ADD_FAILURE() << "an attempt failed: " << e;
    return won.load();
}

TEST_P(StoreContract, RacesBetweenInstances) {
    std::vector<std::unique_ptr<Store>> stores;
    stores.push_back(open());
    const auto c = stores[0]->create_confirmation("alice", "send", "d", 60s);
    const auto job = stores[0]->create_job("seo_audit", "acme", "p", json::object());
    for (int i = 1; i < 8; ++i) stores.push_back(open());

    EXPECT_EQ(race(stores,
                   [&](Store& s, int) {
                       return s.consume_confirmation(c.id, "alice", "send", "d") ==
                              ConfirmOutcome::accepted;
                   }),
              1)
        << "a confirmation is redeemed once";
    EXPECT_EQ(
        race(stores,
             [](Store& s, int) { return !s.claim_idempotency("alice", "send", "key", "d", 600s); }),
        1)
        << "an idempotency key is claimed once";
    EXPECT_EQ(race(stores,
                   [&](Store& s, int i) {
                       return s.claim_job(job.id, "i" + std::to_string(i), 60s, false).has_value();
                   }),
              1)
        << "a job has one owner";
    EXPECT_EQ(
        race(stores, [](Store& s, int) { return s.acquire_credit("acme", 2, 100, 600s).granted; }),
        2)
        << "max_in_flight 2 grants two slots";
}

// --- across backends and PostgreSQL's own ------------------------------------------------------

TEST(StoreBackends, SqliteToPostgresAndBackIsIdentical) {
    const fs::path dir =
        fs::temp_directory_path() / ("agency-contract-" + agency::crypto::random_hex(6));
    std::string pg_url;
    try {
        pg_url = agency::testing::pg_fresh_database();
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    SqliteStore sqlite((dir / "a.db").string());
    fill(sqlite);
    const auto rows = exported(sqlite);
    PgStore pg(pg_url);
    for (const auto& line : rows) pg.import_row(json::parse(line));
    EXPECT_EQ(exported(pg), rows);
    SqliteStore back((dir / "b.db").string());
    for (const auto& line : exported(pg)) back.import_row(json::parse(line));
    EXPECT_EQ(exported(back), rows);
    std::error_code ec;
    fs::remove_all(dir, ec);
}

class PgOnly : public ::testing::Test {
protected:
    std::string url;
    void SetUp() override {
        try {
            url = agency::testing::pg_fresh_database();
        } catch (const std::exception& e) {
            FAIL() << e.what();
        }
    }
};

TEST_F(PgOnly, WatchDeliversACancelFromAnotherInstance) {
    std::promise<std::string> seen;  // outlives the watcher, whose thread sets it
    std::atomic<bool> once{false};
    std::atomic<bool> listening{false};
    auto watcher_store = std::make_unique<PgStore>(url);
    PgStore& watcher = *watcher_store;
    PgStore other(url);
    watcher.watch_task_cancellations([&](const std::string& id) {
        if (id.rfind("probe-", 0) == 0) {
            listening = true;
            return;
        }
        if (!once.exchange(true)) seen.set_value(id);
    });
    auto t = task("t1", "alice", TaskStatus::working, now_ms());
    other.put(t);
    // The watcher's LISTEN is in place once a cancel of a probe task (one new each try) reaches it.
    int probes = 0;
    ASSERT_TRUE(agency::testing::eventually(
        [&] {
            other.put(task("probe-" + std::to_string(++probes), "alice", TaskStatus::cancelled,
                           now_ms()));
            return listening.load();
        },
        10000ms, 20ms))
        << "the watcher never listened";
    t.status = TaskStatus::cancelled;
    const auto sent = std::chrono::steady_clock::now();
    other.put(t);
    auto future = seen.get_future();
    ASSERT_EQ(future.wait_for(1s), std::future_status::ready) << "no notification within 1 s";
    EXPECT_EQ(future.get(), "t1");
    EXPECT_LT(std::chrono::steady_clock::now() - sent, 1s);

    const auto stopping = std::chrono::steady_clock::now();
    watcher_store.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - stopping, 500ms) << "the watch stops promptly";
}

TEST_F(PgOnly, InstancesStartingTogetherMigrateOnce) {
    std::vector<std::future<int>> starts;
    for (int i = 0; i < 3; ++i)
        starts.push_back(
            std::async(std::launch::async, [&] { return PgStore(url).schema_version(); }));
    for (auto& s : starts) EXPECT_EQ(s.get(), agency::state::kSchemaVersion);
    EXPECT_EQ(PgStore::migrate(url), agency::state::kSchemaVersion) << "nothing left to do";
}

// A database of version 2 (before the write log) gains it by migration step 3, rows kept.
TEST_F(PgOnly, Version2GainsTheWriteLog) {
    {
        PgStore store(url);
        store.create_job("seo_audit", "acme", "p", json::object());
    }
    agency::testing::pg_exec(url,
                             "DROP TABLE write_log; DROP FUNCTION agency_write_log_append_only(); "
                             "UPDATE agency_schema SET version = 2");
    try {
        PgStore old(url, PgStore::Options{.pool_size = 1, .migrate = false});
        FAIL() << "version 2 is older than this build needs";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos) << e.what();
    }
    EXPECT_EQ(PgStore::migrate(url), agency::state::kSchemaVersion);
    PgStore store(url);
    EXPECT_EQ(store.unfinished_jobs().size(), 1u) << "rows kept";
    store.append_write_log({.tool = "deploy_article", .outcome = "ok"});
    int rows = 0;
    store.read_write_log({}, [&](const WriteLogEntry&) { ++rows; });
    EXPECT_EQ(rows, 1);
    EXPECT_THROW(agency::testing::pg_exec(url, "UPDATE write_log SET outcome = 'x'"),
                 std::exception)
        << "append-only after the migration too";
}

// Without migrate (every command but serve and state migrate), an empty database is given
// this version's schema (nothing is upgraded: no older server needs it); an older one is
// refused above.
TEST_F(PgOnly, AnEmptyDatabaseIsCreatedWithoutMigrate) {
    PgStore store(url, PgStore::Options{.pool_size = 1, .migrate = false});
    EXPECT_EQ(store.schema_version(), agency::state::kSchemaVersion);
    store.append_write_log({.tool = "deploy_article", .outcome = "ok"});
    int rows = 0;
    store.read_write_log({}, [&](const WriteLogEntry&) { ++rows; });
    EXPECT_EQ(rows, 1);
}

TEST_F(PgOnly, PasswordsNeverShow) {
    EXPECT_EQ(PgStore::redact("postgres://u:s3cret@h:5432/db?sslmode=require"),
              "postgres://u@h:5432/db?sslmode=require");
    EXPECT_EQ(PgStore::redact("postgresql://h/db?password=s3cret&sslmode=verify-full"),
              "postgresql://h/db?sslmode=verify-full");
    EXPECT_EQ(PgStore::redact("postgresql://h/db?sslmode=disable&password=s3cret"),
              "postgresql://h/db?sslmode=disable");
    // The cluster trusts loopback: the password is ignored, and never shown.
    const std::string with_password = "postgres://agency:s3cret@" + url.substr(url.find('@') + 1);
    PgStore store(with_password);
    EXPECT_EQ(store.describe(), url);
    try {
        PgStore unreachable("postgresql://agency:s3cret@127.0.0.1:1/x?connect_timeout=2");
        FAIL() << "nothing listens on port 1";
    } catch (const StoreError& e) {
        EXPECT_EQ(e.kind(), StoreError::Kind::busy);
        const std::string message = e.what();
        EXPECT_EQ(message.find("s3cret"), std::string::npos) << message;
        EXPECT_NE(message.find("postgresql://agency@127.0.0.1:1/x"), std::string::npos) << message;
    }
}

TEST_F(PgOnly, ABrokenConnectionIsReopenedOnTheNextCall) {
    PgStore store(url, PgStore::Options{.pool_size = 2});
    store.put(task("t1", "alice", TaskStatus::working, now_ms()));
    agency::testing::pg_exec(url,
                             "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "datname = current_database() AND pid <> pg_backend_pid()");
    int failures = 0;
    for (int attempt = 0; attempt < 4; ++attempt) {
        try {
            ASSERT_TRUE(store.get("t1"));
            break;
        } catch (const StoreError& e) {
            EXPECT_EQ(e.kind(), StoreError::Kind::busy) << e.what();
            ++failures;
        }
    }
    EXPECT_LE(failures, 2);
    EXPECT_TRUE(store.get("t1")) << "reconnected";
}

}  // namespace
