// Issue 21: what /readyz reports (app/health.cpp, compiled into this binary) from a real store
// and a real gateway client on the sample gateway, with a ManualClock for "recently"; and the
// HTTP transport's drain gate. The routes, the drain and the exit are driven through the real
// binary in tests/clients/drain.test.mjs.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <gtest/gtest.h>

#include "app/health.hpp"
#include "base/thread_set.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/manual_clock.hpp"
#include "transport/http_drain.hpp"

namespace {

using agency::app::Health;
using agency::app::ReadinessChecks;
using agency::mcp::DrainGate;
using agency::testing::ManualClock;
using namespace std::chrono_literals;

struct Fixture {
    ManualClock clock;
    std::unique_ptr<agency::sample::Server> sample;
    std::shared_ptr<agency::gateway::Client> gateway;
    std::filesystem::path dir;
    std::shared_ptr<agency::state::SqliteStore> store;

    Fixture() {
        sample = std::make_unique<agency::sample::Server>(std::make_shared<agency::sample::Gateway>());
        sample->start();
        agency::gateway::Config config;
        config.base_url = sample->base_url();
        config.max_attempts = 1;
        config.connect_timeout = 1000ms;
        gateway = std::make_shared<agency::gateway::Client>(config, clock);
        dir = std::filesystem::temp_directory_path() /
              ("agency-health-" + std::to_string(::getpid()) + "-" +
               std::to_string(reinterpret_cast<std::uintptr_t>(this)));
        std::filesystem::create_directories(dir);
        store = std::make_shared<agency::state::SqliteStore>((dir / "state.db").string());
    }
    ~Fixture() { std::filesystem::remove_all(dir); }

    ReadinessChecks checks() {
        return {.store = store, .gateway = gateway, .discovery_period = 60s,
                .refresh_time = 30s, .clock = &clock};
    }
};

nlohmann::json failed(const Health::Report& report) {
    return report.body.value("failed", nlohmann::json::array());
}

TEST(Health, ReadyOnceStartedWithTheStoreAndTheGatewayAnswering) {
    Fixture f;
    Health health(f.checks());
    f.gateway->check();  // what start-up does
    EXPECT_EQ(failed(health.readiness()), nlohmann::json({"started"}));
    health.set_started();
    auto report = health.readiness();
    EXPECT_TRUE(report.ready) << report.body.dump();
    EXPECT_EQ(report.body["status"], "ready");
    // The SQLite file is not created until the first write: that is ready too.
    EXPECT_EQ(report.body["checks"]["store"], "ok");
    health.set_draining();
    EXPECT_EQ(failed(health.readiness()), nlohmann::json({"draining"}));
}

// Issue 45, finding 10: a thread that could not be started (the thread limit) makes the
// instance not ready while it lasts, so that a balancer sends the calls elsewhere.
TEST(Health, AThreadThatCouldNotStartIsNotReadyWhileItLasts) {
    Fixture f;
    Health health(f.checks());
    f.gateway->check();
    health.set_started();
    agency::base::forget_thread_shortage();
    EXPECT_TRUE(health.readiness().ready);
    agency::base::thread_start_failed();
    const auto report = health.readiness();
    agency::base::forget_thread_shortage();  // process-wide: the other tests read it too
    EXPECT_EQ(failed(report), nlohmann::json({"threads"})) << report.body.dump();
    EXPECT_NE(report.body["checks"]["threads"].get<std::string>().find("thread limit"),
              std::string::npos);
    EXPECT_TRUE(health.readiness().ready);
}

TEST(Health, GatewayNotReadyBeforeItsDiscoveryAnswers) {
    Fixture f;
    Health health(f.checks());
    health.set_started();
    const auto report = health.readiness();
    EXPECT_EQ(failed(report), nlohmann::json({"gateway"}));
    EXPECT_EQ(report.body["checks"]["gateway"], "its discovery has not answered yet");
}

TEST(Health, StaleDiscoveryIsNotReadyAndExcludingTheGatewayIgnoresIt) {
    Fixture f;
    Health health(f.checks());
    health.set_started();
    f.gateway->check();
    f.clock.advance(149s);  // 2 periods of 60 s + 30 s of refresh time: still recent
    EXPECT_TRUE(health.readiness().ready);
    f.clock.advance(2s);
    const auto report = health.readiness();
    EXPECT_EQ(failed(report), nlohmann::json({"gateway"}));
    EXPECT_EQ(report.body["checks"]["gateway"], "its discovery has not answered for 151 s");
    const auto excluded = health.readiness({"gateway"});
    EXPECT_TRUE(excluded.ready) << excluded.body.dump();
    EXPECT_EQ(excluded.body["excluded"], nlohmann::json({"gateway"}));
    f.gateway->refresh_discovery();
    EXPECT_TRUE(health.readiness().ready);
}

TEST(Health, FailedRefreshIsNotReadyUntilDiscoveryAnswersAgain) {
    Fixture f;
    Health health(f.checks());
    health.set_started();
    f.gateway->check();
    const std::string url = f.sample->base_url();
    f.sample->stop();
    EXPECT_THROW(f.gateway->refresh_discovery(), agency::gateway::Error);
    const auto health_now = f.gateway->discovery_health();
    EXPECT_FALSE(health_now.failure.empty());
    ASSERT_TRUE(health_now.since_answer.has_value());
    auto report = health.readiness();
    EXPECT_EQ(failed(report), nlohmann::json({"gateway"}));
    // The probe names the check, never the URL (the log has the details).
    EXPECT_EQ(report.body.dump().find(url), std::string::npos) << report.body.dump();
}

// Issue 30: on a full disk /readyz stayed ready (the schema version still reads) while every
// write failed. Here no file of the process may grow (RLIMIT_FSIZE at the write-ahead log's
// size, so the next commit cannot append to it: EFBIG, as ENOSPC would be): not ready, the
// store check failing, until writes go through again.
TEST(Health, StoreThatCannotWriteIsNotReady) {
    Fixture f;
    Health health(f.checks());
    health.set_started();
    f.gateway->check();
    f.store->create_confirmation("alice", "deploy_blog", "digest", std::chrono::seconds(60));
    ASSERT_TRUE(health.readiness().ready);
    const auto wal = f.dir / "state.db-wal";
    ASSERT_TRUE(std::filesystem::exists(wal));
    rlimit before{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG rather than the signal
    rlimit capped = before;
    capped.rlim_cur = static_cast<rlim_t>(std::filesystem::file_size(wal));
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &capped), 0);
    f.clock.advance(2s);  // past the store check's one-second cache
    agency::testing::LogCapture logs;
    const auto full = health.readiness();
    // A balancer keeps probing: the failure is logged once, not at every probe (issue 49).
    for (int probe = 0; probe < 5; ++probe) {
        f.clock.advance(2s);
        EXPECT_FALSE(health.readiness().ready);
    }
    bool write_failed = false;
    try {
        f.store->create_confirmation("alice", "deploy_blog", "digest", std::chrono::seconds(60));
    } catch (const agency::state::StoreError&) {
        write_failed = true;
    }
    ::setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, old_handler);
    ASSERT_TRUE(write_failed) << "the cap did not stop writes: the test proves nothing";
    EXPECT_FALSE(full.ready) << full.body.dump();
    EXPECT_EQ(failed(full), nlohmann::json({"store"})) << full.body.dump();
    EXPECT_EQ(full.body["checks"]["store"], "cannot write (see the server log)");
    f.clock.advance(2s);
    EXPECT_TRUE(health.readiness().ready) << "writes go through again";
    const std::string text = logs.text();
    std::size_t said = 0;
    for (auto at = text.find("cannot write"); at != std::string::npos; at = text.find("cannot write", at + 1))
        ++said;
    EXPECT_EQ(said, 2u) << text;  // the store's line, and the readiness summary's
    EXPECT_NE(text.find("answers and writes again"), std::string::npos) << text;
}

TEST(Health, ReadyzRouteRefusesAnUnknownExclusionAndHealthzTouchesNothing) {
    Fixture f;
    Health health(f.checks());
    health.set_started();
    f.gateway->check();
    const auto routes = health.routes();
    ASSERT_EQ(routes.size(), 2u);
    EXPECT_EQ(routes[0].path, "/healthz");
    EXPECT_EQ(routes[1].path, "/readyz");
    agency::mcp::HttpRequestView request;
    request.method = "GET";
    request.path = "/readyz";
    request.header = [](std::string_view) { return std::string(); };
    request.query = "exclude=store,bogus";
    EXPECT_EQ(routes[1].handler(request).status, 400);
    request.query = "exclude=store&exclude=gateway";
    f.sample->stop();
    EXPECT_THROW(f.gateway->refresh_discovery(), agency::gateway::Error);
    EXPECT_EQ(routes[1].handler(request).status, 200);
    request.query.clear();
    const auto unready = routes[1].handler(request);
    EXPECT_EQ(unready.status, 503);
    EXPECT_NE(unready.body.find("\"failed\":[\"gateway\"]"), std::string::npos) << unready.body;
    health.set_draining();
    request.path = "/healthz";
    const auto live = routes[0].handler(request);
    EXPECT_EQ(live.status, 200);
    EXPECT_EQ(live.body, R"({"status":"alive"})");
}

TEST(DrainGate, RefusesNewCallsOnceClosedAndWaitsForTheRest) {
    DrainGate gate;
    auto first = gate.enter();
    ASSERT_TRUE(first);
    auto second = gate.enter();
    EXPECT_EQ(gate.in_flight(), 2u);
    gate.close();
    EXPECT_TRUE(gate.draining());
    EXPECT_FALSE(gate.enter()) << "a call after the drain began";
    EXPECT_FALSE(gate.wait_idle(20ms));
    second.reset();
    std::thread finisher([&first] {
        std::this_thread::sleep_for(30ms);
        first.reset();
    });
    EXPECT_TRUE(gate.wait_idle(5s));
    finisher.join();
    EXPECT_EQ(gate.in_flight(), 0u);
}

TEST(DrainGate, ATicketMayOutliveItsGate) {
    DrainGate::Ticket ticket;
    {
        DrainGate gate;
        ticket = gate.enter();
    }
    ticket.reset();  // a stream's relay finishing after the transport went away
    SUCCEED();
}

}  // namespace
