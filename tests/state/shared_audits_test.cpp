// Audit jobs and credits across instances on one PostgreSQL store, against the sample gateway:
// a live instance keeps its job, a dead instance's job is taken over and reconciled (one POST),
// and the per-client credit limit counts every instance's calls.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "state/pg_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/keeper_steps.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/wait.hpp"
#include "tests/tool_harness.hpp"
#include "tools/pipeline/jobs.hpp"

namespace {

using agency::sample::FaultMode;
using agency::testing::ManualClock;
using agency::testing::ToolHarness;
using agency::tools::AuditJobs;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;

// An instance's own connection pool on the shared database, stamping leases on `clock`.
std::shared_ptr<agency::state::PgStore> instance_store(const std::string& url,
                                                       const ManualClock* clock = nullptr) {
    auto store = std::make_shared<agency::state::PgStore>(url);
    if (clock) store->use_clock(*clock);
    return store;
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
    const ManualClock clock(ManualClock::Sleeps::until_advanced);
    AuditJobs one(instance_store(url, &clock), 1,
                  {.instance_id = "i_one", .lease = 600ms, .clock = &clock});
    one.start(h.box);
    const std::string id =
        one.submit(kDental, "alice", "https://www.brightsmile.example/live").id;
    (void)agency::testing::eventually([&] { return h.gw->posts_in_flight() != 0; }, 5000ms, 10ms);
    ASSERT_EQ(h.gw->posts_in_flight(), 1u);
    auto other = instance_store(url, &clock);
    AuditJobs two(other, 1, {.instance_id = "i_two", .lease = 600ms, .clock = &clock});
    two.start(h.box);
    // Three leases pass while the POST is out (2.5 s of real time): only renewals keep it.
    agency::testing::KeeperSteps steps(clock, 2);
    steps.run(200ms, 9);
    steps.settle();
    ASSERT_EQ(h.gw->posts_in_flight(), 1u) << "the steps outlasted the POST: nothing was tested";
    EXPECT_EQ(other->job(id)->lease_owner, "i_one");
    EXPECT_EQ(other->job(id)->status, "running");
    const auto done = await_job(*other, id, [](const auto& j) { return j.status == "succeeded"; });
    EXPECT_EQ(done.status, "succeeded");
    EXPECT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u) << "instance two never sent it";
}

TEST(SharedAudits, ADeadInstancesJobIsTakenOverWithoutASecondPost) {
    const std::string url = agency::testing::pg_fresh_database();
    ToolHarness h;
    h.gw->inject({.target = "seo_audit", .mode = FaultMode::slow, .delay_ms = 500});
    const std::string page = "https://www.brightsmile.example/taken-over";
    const ManualClock clock(ManualClock::Sleeps::until_advanced);
    std::string id;
    {
        AuditJobs one(instance_store(url, &clock), 1,
                      {.instance_id = "i_one", .lease = 1500ms, .clock = &clock});
        one.start(h.box);
        id = one.submit(kDental, "alice", page).id;
        (void)agency::testing::eventually([&] { return h.gw->posts_in_flight() != 0; }, 5000ms,
                                          10ms);
        ASSERT_EQ(h.gw->posts_in_flight(), 1u) << "the POST is at the gateway";
        ASSERT_TRUE(agency::testing::eventually([&] { return clock.waits_begun() == 1; }))
            << "instance one's keeper is not waiting on the clock it was given";
    }  // instance one dies with its POST out; the gateway still finishes the audit
    auto other = instance_store(url, &clock);
    EXPECT_EQ(other->job(id)->status, "running");
    AuditJobs two(other, 1, {.instance_id = "i_two", .lease = 1500ms, .clock = &clock});
    two.start(h.box);
    // Two rounds of instance two's keeper: the lease (1.5 s) still runs, the job stays one's.
    agency::testing::KeeperSteps steps(clock, 1, /*waits_before=*/1);
    steps.run(500ms, 2);
    steps.settle();
    EXPECT_EQ(other->job(id)->lease_owner, "i_one") << "taken over before its lease ran out";
    steps.run(500ms, 2);  // 2 s: the lease ran out at the last step
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
    const ManualClock clock(ManualClock::Sleeps::until_advanced);
    auto store = instance_store(url, &clock);
    // Queued by an instance that died before its worker claimed it.
    const std::string id =
        store->create_job("seo_audit", kDental, "alice",
                          {{"url", "https://www.brightsmile.example/queued"}})
            .id;
    AuditJobs two(instance_store(url, &clock), 1,
                  {.instance_id = "i_two", .lease = 600ms, .clock = &clock});
    AuditJobs three(instance_store(url, &clock), 1,
                    {.instance_id = "i_three", .lease = 600ms, .clock = &clock});
    two.start(h.box);
    three.start(h.box);
    const auto done = await_job(*store, id, [](const auto& j) { return j.status == "succeeded"; });
    EXPECT_EQ(done.status, "succeeded");
    // Two leases of both keepers' rounds: a second claim would have sent it again.
    agency::testing::KeeperSteps steps(clock, 2);
    steps.run(200ms, 6);
    steps.settle();
    EXPECT_EQ(h.gw->count_requests("POST", "seo_audit"), 1u);
}

TEST(SharedCredits, TheLimitHoldsAcrossInstances) {
    using agency::tools::CreditLimiter;
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
