// Audit jobs and credits across instances on one PostgreSQL store, against the sample gateway:
// a live instance keeps its job, a dead instance's job is taken over and reconciled (one POST),
// and the per-client credit limit counts every instance's calls.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include <gtest/gtest.h>

#include "tests/pg_cluster.hpp"
#include "state/pg_store.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tools/pipeline/jobs.hpp"

namespace {

using agency::sample::FaultMode;
using agency::testing::ToolHarness;
using agency::tools::AuditJobs;
using agency::tools::CreditLimiter;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;

std::shared_ptr<agency::state::PgStore> instance_store(const std::string& url) {
    return std::make_shared<agency::state::PgStore>(url);
}

// The stored job once `pred` holds (or after ~8 s).
template <typename Pred>
agency::state::Job await_job(agency::state::Store& store, const std::string& id, Pred pred) {
    std::optional<agency::state::Job> job;
    (void)agency::testing::eventually(
        [&] {
            job = store.job(id);
            return job && pred(*job);
        },
        8000ms, 10ms);
    return job.value_or(agency::state::Job{});
}

TEST(SharedAudits, ALiveInstanceKeepsItsJobWhileItsPostIsOut) {
    const std::string url = agency::testing::pg_fresh_database();
    ToolHarness h;
    h.gw->inject({.target = "seo_audit", .mode = FaultMode::slow, .delay_ms = 2500});
    AuditJobs one(instance_store(url), 1, {.instance_id = "i_one", .lease = 600ms});
    one.start(h.box);
    const std::string id =
        one.submit(kDental, "alice", "https://www.brightsmile.example/live").id;
    (void)agency::testing::eventually([&] { return h.gw->posts_in_flight() != 0; }, 5000ms, 10ms);
    ASSERT_EQ(h.gw->posts_in_flight(), 1u);
    auto other = instance_store(url);
    AuditJobs two(other, 1, {.instance_id = "i_two", .lease = 600ms});
    two.start(h.box);
    std::this_thread::sleep_for(1500ms);  // over two leases: only renewals keep it
    EXPECT_EQ(other->job(id)->lease_owner, "i_one");
    const auto done = await_job(*other, id, [](const auto& j) { return j.status == "succeeded"; });
    EXPECT_EQ(done.status, "succeeded");
    EXPECT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u) << "instance two never sent it";
}

TEST(SharedAudits, ADeadInstancesJobIsTakenOverWithoutASecondPost) {
    const std::string url = agency::testing::pg_fresh_database();
    ToolHarness h;
    h.gw->inject({.target = "seo_audit", .mode = FaultMode::slow, .delay_ms = 500});
    const std::string page = "https://www.brightsmile.example/taken-over";
    std::string id;
    {
        AuditJobs one(instance_store(url), 1, {.instance_id = "i_one", .lease = 1500ms});
        one.start(h.box);
        id = one.submit(kDental, "alice", page).id;
        (void)agency::testing::eventually([&] { return h.gw->posts_in_flight() != 0; }, 5000ms,
                                          10ms);
        ASSERT_EQ(h.gw->posts_in_flight(), 1u) << "the POST is at the gateway";
    }  // instance one dies with its POST out; the gateway still finishes the audit
    auto other = instance_store(url);
    EXPECT_EQ(other->job(id)->status, "running");
    AuditJobs two(other, 1, {.instance_id = "i_two", .lease = 1500ms});
    two.start(h.box);
    const auto done = await_job(*other, id, [](const auto& j) { return j.status == "succeeded"; });
    EXPECT_EQ(done.status, "succeeded");
    EXPECT_EQ(done.lease_owner, "i_two");
    EXPECT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u)
        << "instance two found the report instead of sending again";
    EXPECT_TRUE(done.result.contains("report_id")) << done.result;
}

TEST(SharedAudits, AQueuedJobOfADeadInstanceIsRunOnce) {
    const std::string url = agency::testing::pg_fresh_database();
    ToolHarness h;
    auto store = instance_store(url);
    // Queued by an instance that died before its worker claimed it.
    const std::string id =
        store->create_job("seo_audit", kDental, "alice",
                          {{"url", "https://www.brightsmile.example/queued"}})
            .id;
    AuditJobs two(instance_store(url), 1, {.instance_id = "i_two", .lease = 600ms});
    AuditJobs three(instance_store(url), 1, {.instance_id = "i_three", .lease = 600ms});
    two.start(h.box);
    three.start(h.box);
    const auto done = await_job(*store, id, [](const auto& j) { return j.status == "succeeded"; });
    EXPECT_EQ(done.status, "succeeded");
    std::this_thread::sleep_for(700ms);  // a second claim would have sent it again by now
    EXPECT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u);
}

TEST(SharedCredits, TheLimitHoldsAcrossInstances) {
    const std::string url = agency::testing::pg_fresh_database();
    const agency::tools::CreditSettings settings{.max_in_flight_per_client = 2,
                                                 .max_per_minute_per_client = 3};
    CreditLimiter one(settings, instance_store(url));
    CreditLimiter two(settings, instance_store(url));
    {
        auto a = one.try_acquire(kDental);
        auto b = two.try_acquire(kDental);
        ASSERT_TRUE(std::holds_alternative<CreditLimiter::Permit>(a));
        ASSERT_TRUE(std::holds_alternative<CreditLimiter::Permit>(b));
        auto c = one.try_acquire(kDental);
        ASSERT_TRUE(std::holds_alternative<CreditLimiter::Refusal>(c))
            << "two in flight on two instances";
        EXPECT_NE(std::get<CreditLimiter::Refusal>(c).message.find("at once"), std::string::npos);
        EXPECT_TRUE(std::holds_alternative<CreditLimiter::Permit>(two.try_acquire("demo-law")))
            << "another client has its own count";
    }  // both released
    EXPECT_TRUE(std::holds_alternative<CreditLimiter::Permit>(two.try_acquire(kDental)));
    auto fourth = one.try_acquire(kDental);
    ASSERT_TRUE(std::holds_alternative<CreditLimiter::Refusal>(fourth))
        << "three started this minute across the instances";
    EXPECT_GE(std::get<CreditLimiter::Refusal>(fourth).retry_after_s, 1);
}

}  // namespace
