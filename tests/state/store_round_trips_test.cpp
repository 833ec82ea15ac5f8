// A generation action's exactly-once steps in as few store round trips as they take (issue 33):
// on PostgreSQL a generate_article costs 2 (its credit slot taken in one call, released with
// its write-log row), 3 with an idempotency_key (the key looked up, then claimed with the slot,
// then completed with the row), counted by the store on the calling thread
// (PgStore::exchanges_on_this_thread: every statement sent and answered, connections opened and
// statements prepared included). The combined steps behind them keep the contract of the steps
// they stand for, on both backends, and across instances racing on one database.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "server/mcp_server.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/shared_store.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

// Named: the tests are built as unity batches, where another file's anonymous names meet these.
namespace store_round_trips_test {

namespace fs = std::filesystem;
using namespace agency::testing::store_names;
using agency::state::Store;
using json = nlohmann::json;
using namespace std::chrono_literals;

using Backend = agency::testing::StoreBackend;

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::sqlite ? "sqlite" : "postgres";
}

// One database (a SQLite file or a fresh PostgreSQL database); open() is another instance.
struct Database : agency::testing::SharedStore {
    explicit Database(Backend b) : SharedStore(b, "agency-steps-") {}
};

constexpr const char* kTool = "generate_article";

Store::CreditRequest credit(const char* client, int in_flight, int per_minute) {
    return {.client_id = client,
            .max_in_flight = in_flight,
            .max_per_minute = per_minute,
            .hold_limit = 600s};
}

std::size_t log_rows(Store& store) {
    std::size_t n = 0;
    store.read_write_log(WriteLogQuery{}, [&](const WriteLogEntry&) { ++n; });
    return n;
}

class StoreSteps : public ::testing::TestWithParam<Backend> {
protected:
    Database db_{GetParam()};
};

TEST_P(StoreSteps, AKeyIsClaimedWithItsCreditSlotOrNotAtAll) {
    auto store = db_.open();
    const auto first =
        store->claim_idempotency_with_credit("alice", kTool, "k1", "d", 600s, credit("acme", 1, 3));
    ASSERT_FALSE(first.known) << "claimed";
    ASSERT_TRUE(first.slot.granted);
    EXPECT_TRUE(store->find_idempotency("alice", kTool, "k1")->pending);

    const auto again =
        store->claim_idempotency_with_credit("alice", kTool, "k1", "d", 600s, credit("acme", 1, 3));
    ASSERT_TRUE(again.known) << "a known key: its record, and no slot";
    EXPECT_TRUE(again.known->pending);
    EXPECT_EQ(again.known->args_digest, "d");
    EXPECT_FALSE(again.slot.granted);

    const auto busy =
        store->claim_idempotency_with_credit("alice", kTool, "k2", "d", 600s, credit("acme", 1, 3));
    ASSERT_FALSE(busy.known);
    EXPECT_FALSE(busy.slot.granted);
    EXPECT_EQ(busy.slot.why, "in_flight");
    EXPECT_FALSE(store->find_idempotency("alice", kTool, "k2")) << "a refused slot: key free";

    // Settled with the call's write-log row: the key's result kept, the slot released.
    store->append_write_log_settling({.principal = "alice", .tool = kTool, .outcome = "ok"},
                                     {.principal = "alice",
                                      .tool = kTool,
                                      .key = "k1",
                                      .result = R"({"ok":1})",
                                      .slot_id = first.slot.id});
    const auto done = store->find_idempotency("alice", kTool, "k1");
    ASSERT_TRUE(done);
    EXPECT_FALSE(done->pending);
    EXPECT_FALSE(done->is_error);
    EXPECT_EQ(done->result, R"({"ok":1})");
    EXPECT_EQ(log_rows(*store), 1u);
    const auto next =
        store->claim_idempotency_with_credit("alice", kTool, "k2", "d", 600s, credit("acme", 1, 3));
    EXPECT_TRUE(next.slot.granted) << "the settled slot was released";

    // Per minute (released slots still count): a third grant, then a refusal.
    store->append_write_log_settling({.tool = kTool}, {.slot_id = next.slot.id});
    EXPECT_TRUE(store->acquire_credit("acme", 1, 3, 600s).granted);
    const auto minute =
        store->claim_idempotency_with_credit("alice", kTool, "k3", "d", 600s, credit("acme", 5, 3));
    EXPECT_EQ(minute.slot.why, "per_minute");
    EXPECT_GE(minute.slot.retry_after_s, 1);
    EXPECT_LE(minute.slot.retry_after_s, 62);
    EXPECT_FALSE(store->find_idempotency("alice", kTool, "k3"));
}

TEST_P(StoreSteps, ASettlementWithNeitherKeyNorSlotAppendsTheRowAlone) {
    auto store = db_.open();
    ASSERT_FALSE(store->claim_idempotency("alice", kTool, "k", "d", 600s));
    const auto slot = store->acquire_credit("acme", 1, 10, 600s);
    const auto row = store->append_write_log_settling(
        {.principal = "alice", .tool = kTool, .client_id = "acme", .outcome = "refused"}, {});
    EXPECT_TRUE(row.id.starts_with("wl_"));
    EXPECT_EQ(log_rows(*store), 1u);
    EXPECT_TRUE(store->find_idempotency("alice", kTool, "k")->pending) << "untouched";
    EXPECT_FALSE(store->acquire_credit("acme", 1, 10, 600s).granted) << "still held";
    store->release_credit(slot.id);
}

TEST_P(StoreSteps, InstancesRacingClaimAKeyOnceAndGrantTheLimit) {
    std::vector<std::unique_ptr<Store>> stores;
    for (int i = 0; i < 8; ++i) stores.push_back(db_.open());
    const auto race = [&](const auto& attempt) {
        std::atomic<bool> go{false};
        std::atomic<int> won{0};
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < stores.size(); ++i)
            threads.emplace_back([&, i] {
                while (!go) std::this_thread::yield();
                if (attempt(*stores[i], static_cast<int>(i))) ++won;
            });
        go = true;
        for (auto& t : threads) t.join();
        return won.load();
    };
    EXPECT_EQ(race([](Store& s, int) {
                  const auto got = s.claim_idempotency_with_credit("alice", kTool, "same", "d",
                                                                   600s, credit("acme", 8, 100));
                  return !got.known && got.slot.granted;
              }),
              1)
        << "one key, one claim (and one slot)";
    EXPECT_EQ(race([](Store& s, int i) {
                  const auto got = s.claim_idempotency_with_credit(
                      "alice", kTool, "k" + std::to_string(i), "d", 600s, credit("zeta", 2, 100));
                  return !got.known && got.slot.granted;
              }),
              2)
        << "max_in_flight 2 grants two slots across the instances";
    int free_keys = 0;
    for (int i = 0; i < 8; ++i)
        free_keys += !stores[0]->find_idempotency("alice", kTool, "k" + std::to_string(i));
    EXPECT_EQ(free_keys, 6) << "every refused call left its key free";
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreSteps, ::testing::Values(Backend::sqlite, Backend::postgres),
                         backend_name);

// --- the round trips of a generate_article on PostgreSQL -------------------------------------

// The product's tools on a PgStore, with the sample gateway (demo-dental generates without a
// preview: auto_deploy off).
struct PgInstance {
    std::shared_ptr<PgStore> store;
    std::shared_ptr<agency::tools::ActionRuntime> rt;
    agency::testing::ToolHarness h;
    explicit PgInstance(const std::string& url)
        : store(std::make_shared<PgStore>(url)),
          rt(std::make_shared<agency::tools::ActionRuntime>(
              agency::testing::with_store(agency::tools::ActionSettings{
                  .store = store,
                  .sharing = {.instance_id = "i_rt", .lease = 60s},
                  .credits = {.max_in_flight_per_client = 8, .max_per_minute_per_client = 1000}}))),
          h({}, agency::tools::Settings{},
            [this](agency::mcp::Server& server,
                   const std::shared_ptr<agency::tools::Toolbox>& box) {
                agency::tools::register_all(server, box, rt);
            }) {}
    ~PgInstance() { rt->audits().stop(); }

    // The fewest round trips of `calls` generate_article calls (each must succeed): a call
    // that happens to find no idle connection opens and prepares one (counted too), which a
    // background lease renewal can cause; the fewest is what every call costs at least.
    std::int64_t fewest(int calls, const std::string& tag, bool with_key) {
        std::int64_t least = -1;
        for (int i = 0; i < calls; ++i) {
            json args = {{"client_id", "demo-dental"},
                         {"keyword", "round trips " + tag + std::to_string(i)}};
            if (with_key) args["idempotency_key"] = "rt-" + tag + std::to_string(i);
            const auto before = PgStore::exchanges_on_this_thread();
            const auto reply = h.call("generate_article", args);
            const auto spent = PgStore::exchanges_on_this_thread() - before;
            EXPECT_FALSE(reply.is_error()) << reply.response;
            if (least < 0 || spent < least) least = spent;
        }
        return least;
    }
};

TEST(PgRoundTrips, AGenerateArticleTakesTwoAndThreeWithAnIdempotencyKey) {
    PgInstance instance(agency::testing::pg_fresh_database());
    instance.fewest(2, "warm-", false);  // the pool's connections opened and prepared
    EXPECT_GT(instance.fewest(1, "seen-", false), 0) << "the call's store work is counted here";
    EXPECT_LE(instance.fewest(5, "plain-", false), 2)
        << "the credit slot taken (1), released with the write-log row (1)";
    EXPECT_LE(instance.fewest(5, "keyed-", true), 3)
        << "the key looked up (1), claimed with the slot (1), completed with the row (1)";

    // A repeat with a key answers from its record: looked up, and the row.
    const json args = {{"client_id", "demo-dental"},
                       {"keyword", "round trips keyed-0"},
                       {"idempotency_key", "rt-keyed-0"}};
    const auto before = PgStore::exchanges_on_this_thread();
    const auto replay = instance.h.call("generate_article", args);
    EXPECT_FALSE(replay.is_error()) << replay.response;
    EXPECT_TRUE(replay.structured().value("replayed", false)) << replay.response;
    EXPECT_LE(PgStore::exchanges_on_this_thread() - before, 2);
}

}  // namespace store_round_trips_test
