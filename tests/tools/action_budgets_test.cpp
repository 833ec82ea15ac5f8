// Action budgets (issue 35, tools/pipeline/budgets.hpp): a caller's generation actions per window are
// counted in the state store, refused past the budget with reason `budget` and nothing sent,
// reset with the window (a ManualClock), kept across a restart, never spent twice by an
// idempotent replay and given back when the action never reached the gateway; on PostgreSQL
// two instances racing for the last unit get one action and one refusal. Also what previews
// and tools/list say of the cost, and the write log's record of the caller's client scope.
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "base/metrics.hpp"
#include "server/mcp_server.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/pg_cluster.hpp"
#include "tests/support/action_store.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/principals.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/tool_harness.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/pipeline/budgets.hpp"
#include "tools/registry.hpp"

namespace action_budgets_test {

namespace fs = std::filesystem;
using namespace agency::testing::tool_names;
using agency::state::WriteLogEntry;
using agency::testing::ManualClock;
using agency::tools::BudgetWindow;
using json = nlohmann::json;
using namespace std::chrono_literals;

using namespace agency::testing::sample_clients;

std::chrono::system_clock::time_point at(int y, unsigned m, unsigned d, int hour, int minute) {
    using namespace std::chrono;
    return sys_days(year(y) / month(m) / day(d)) + hours(hour) + minutes(minute);
}

Principal key(const std::string& name, std::optional<std::int64_t> budget,
              std::vector<std::string> clients = {}) {
    Principal p = agency::testing::key_principal(name);
    p.action_budget = budget;
    p.clients = std::move(clients);
    return p;
}

struct Budgets : agency::testing::ActionToolHarness {
    explicit Budgets(ActionSettings settings) : ActionToolHarness({}, std::move(settings)) {}

    ToolReply ideas(const Principal& who, const json& extra = json::object()) {
        json args = {{"client_id", kDental}, {"seed", "implants"}};
        args.update(extra);
        return h->call_as(who, "generate_keyword_ideas", args);
    }
    std::size_t posts() const { return h->gw->count_requests("POST", "generate_keywords"); }
    std::int64_t used(const Principal& who) {
        const auto window = agency::tools::budget_window_at(rt->settings().budgets.window,
                                                            rt->clock().unix_s());
        return rt->store().budget_used(who.name, window.start);
    }
    WriteLogEntry last_row() {
        WriteLogEntry last;
        rt->store().read_write_log({}, [&](const WriteLogEntry& e) { last = e; });
        return last;
    }
};

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("agency-budgets-" + agency::crypto::random_hex(6));
    TempDir() { fs::create_directories(path); }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// The value of one series in /metrics (0 when it is not there yet).
double metric(const std::string& series) {
    const std::string text = agency::base::metrics::render();
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) return 0;
    return std::stod(text.substr(at + series.size() + 2));
}

ActionSettings on_file(const std::string& file, const ManualClock* clock = nullptr) {
    ActionSettings s;
    s.clock = clock;
    return agency::testing::on_sqlite(std::move(s), file);
}

// The case: a budget of 3 gives 3 generations; the 4th is refused at once, says what
// is left (0), the limit and when the window resets, reaches no gateway, and is a write-log row.
TEST(ActionBudgets, ABudgetOfThreeGivesThreeGenerationsAndAClearRefusalOnTheFourth) {
    TempDir dir;
    ManualClock clock(at(2026, 11, 27, 14, 0));
    Budgets b(on_file((dir.path / "state.db").string(), &clock));
    const Principal writer = key("writer", 3);
    for (int i = 0; i < 3; ++i) {
        const ToolReply r = b.ideas(writer);
        ASSERT_FALSE(r.is_error()) << i << ": " << r.response.dump().substr(0, 600);
    }
    EXPECT_EQ(b.posts(), 3u);
    EXPECT_EQ(b.used(writer), 3);

    const ToolReply fourth = b.ideas(writer);
    ASSERT_TRUE(fourth.is_error());
    EXPECT_EQ(fourth.reason(), "budget");
    const json error = fourth.tool_error();
    EXPECT_EQ(error["budget"]["remaining"], 0);
    EXPECT_EQ(error["budget"]["limit"], 3);
    EXPECT_EQ(error["budget"]["window"], "month");
    EXPECT_EQ(error["budget"]["resets_at"], "2026-12-01T00:00:00Z");
    const std::string message = error.value("message", "");
    EXPECT_NE(message.find("0 of 3"), std::string::npos) << message;
    EXPECT_NE(message.find("2026-12-01T00:00:00Z"), std::string::npos) << message;
    EXPECT_NE(message.find("Nothing was sent"), std::string::npos) << message;
    EXPECT_EQ(b.posts(), 3u) << "a refused action is never sent";
    EXPECT_EQ(b.used(writer), 3);

    const WriteLogEntry row = b.last_row();
    EXPECT_EQ(row.outcome, "refused");
    EXPECT_EQ(row.reason, "budget");

    // Another caller's budget is its own; reads and actions that spend nothing still work.
    EXPECT_FALSE(b.ideas(key("other", 3)).is_error());
    EXPECT_FALSE(b.h->call_as(writer, "list_clients", json::object()).is_error());
    EXPECT_FALSE(
        b.h->call_as(writer, "refresh_backlinks", {{"client_id", kDental}}).is_error());
}

// The window ends at the first of the next month (UTC) by the injected clock; a day or week
// window too.
TEST(ActionBudgets, TheBudgetResetsOnSchedule) {
    TempDir dir;
    ManualClock clock(at(2026, 11, 30, 23, 58));
    Budgets b(on_file((dir.path / "state.db").string(), &clock));
    const Principal writer = key("writer", 1);
    ASSERT_FALSE(b.ideas(writer).is_error());
    const ToolReply refused = b.ideas(writer);
    ASSERT_EQ(refused.reason(), "budget");
    EXPECT_EQ(refused.tool_error()["budget"]["resets_at"], "2026-12-01T00:00:00Z");
    clock.advance(1min);  // 23:59: still November
    EXPECT_EQ(b.ideas(writer).reason(), "budget");
    clock.advance(1min);  // 00:00 on the first: a new window
    const ToolReply december = b.ideas(writer);
    EXPECT_FALSE(december.is_error()) << december.response.dump().substr(0, 600);
    EXPECT_EQ(b.ideas(writer).reason(), "budget");
    EXPECT_EQ(b.posts(), 2u);

    using agency::tools::budget_window_at;
    const auto unix_of = [](std::chrono::system_clock::time_point t) {
        return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
    };
    const std::int64_t friday = unix_of(at(2026, 11, 27, 14, 30));
    EXPECT_EQ(budget_window_at(BudgetWindow::week, friday).start, unix_of(at(2026, 11, 23, 0, 0)));
    EXPECT_EQ(budget_window_at(BudgetWindow::week, friday).end, unix_of(at(2026, 11, 30, 0, 0)));
    EXPECT_EQ(budget_window_at(BudgetWindow::day, friday).end, unix_of(at(2026, 11, 28, 0, 0)));
    EXPECT_EQ(budget_window_at(BudgetWindow::month, unix_of(at(2026, 12, 31, 23, 59))).end,
              unix_of(at(2027, 1, 1, 0, 0)));
}

// The count is a row of the state database: a restarted server (a new runtime on the same
// file) goes on from it.
TEST(ActionBudgets, ARestartKeepsTheCount) {
    TempDir dir;
    const std::string file = (dir.path / "state.db").string();
    ManualClock clock(at(2026, 11, 27, 14, 0));
    const Principal writer = key("writer", 3);
    {
        Budgets before(on_file(file, &clock));
        ASSERT_FALSE(before.ideas(writer).is_error());
        ASSERT_FALSE(before.ideas(writer).is_error());
    }
    Budgets after(on_file(file, &clock));
    EXPECT_EQ(after.used(writer), 2);
    EXPECT_FALSE(after.ideas(writer).is_error());
    EXPECT_EQ(after.ideas(writer).reason(), "budget");
    EXPECT_EQ(after.posts(), 1u);
}

// A repeat with a finished idempotency_key answers the first result and spends nothing, even
// once the budget is used up.
TEST(ActionBudgets, AnIdempotentReplayDoesNotSpendTwice) {
    TempDir dir;
    ManualClock clock(at(2026, 11, 27, 14, 0));
    Budgets b(on_file((dir.path / "state.db").string(), &clock));
    const Principal writer = key("writer", 2);
    const ToolReply first = b.ideas(writer, {{"idempotency_key", "ideas-1"}});
    ASSERT_FALSE(first.is_error()) << first.response.dump().substr(0, 600);
    const ToolReply again = b.ideas(writer, {{"idempotency_key", "ideas-1"}});
    ASSERT_FALSE(again.is_error()) << again.response.dump().substr(0, 600);
    EXPECT_EQ(again.structured().value("replayed", false), true);
    EXPECT_EQ(b.used(writer), 1) << "the replay spent a unit";
    ASSERT_FALSE(b.ideas(writer, {{"idempotency_key", "ideas-2"}}).is_error());
    EXPECT_EQ(b.used(writer), 2);
    const ToolReply late = b.ideas(writer, {{"idempotency_key", "ideas-1"}});
    EXPECT_FALSE(late.is_error()) << "a replay is answered after the budget is used up: "
                                  << late.response.dump().substr(0, 600);
    EXPECT_EQ(b.ideas(writer, {{"idempotency_key", "ideas-3"}}).reason(), "budget");
    EXPECT_EQ(b.posts(), 2u);
}

// A call refused after its unit was taken but before the POST (here by the per-client credit
// limiter; a gateway that refuses and creates nothing too) gives the unit back.
TEST(ActionBudgets, ARefusalBeforeThePostGivesTheUnitBack) {
    TempDir dir;
    ManualClock clock(at(2026, 11, 27, 14, 0));
    ActionSettings settings = on_file((dir.path / "state.db").string(), &clock);
    settings.credits.max_per_minute_per_client = 1;
    Budgets b(std::move(settings));
    const Principal writer = key("writer", 2);
    ASSERT_FALSE(b.ideas(writer).is_error());
    const ToolReply limited = b.ideas(writer);
    ASSERT_EQ(limited.reason(), "rate_limited") << limited.response.dump().substr(0, 600);
    EXPECT_EQ(b.used(writer), 1) << "the unit of a call that was never sent was kept";
    EXPECT_EQ(b.posts(), 1u);

    b.h->gw->inject({.target = "generate_keywords",
                     .mode = agency::sample::FaultMode::status_error,
                     .count = 1,
                     .status_code = 422});
    const ToolReply failed = b.h->call_as(writer, "generate_keyword_ideas",
                                          {{"client_id", "demo-law"}, {"seed", "lawyer"}});
    ASSERT_TRUE(failed.is_error());
    EXPECT_EQ(b.used(writer), 1) << "the gateway refused it and created nothing";
    // (another client: the limiter counted demo-law's refused call in its minute)
    const ToolReply next = b.h->call_as(writer, "generate_keyword_ideas",
                                        {{"client_id", kPlumbing}, {"seed", "x"}});
    EXPECT_FALSE(next.is_error()) << next.response.dump().substr(0, 600);
    EXPECT_EQ(b.used(writer), 2);
}

// serve --monthly-actions 0: no generation action at all (read-only in effect); a key's own
// budget stands above the default.
TEST(ActionBudgets, ADefaultOfZeroRefusesEveryGenerationUnlessTheKeySaysOtherwise) {
    TempDir dir;
    ActionSettings settings = on_file((dir.path / "state.db").string());
    settings.budgets.default_limit = 0;
    Budgets b(std::move(settings));
    const Principal plain = key("plain", std::nullopt);
    EXPECT_EQ(b.ideas(plain).reason(), "budget");
    EXPECT_EQ(b.h->call("generate_keyword_ideas", {{"client_id", kDental}}).reason(), "budget")
        << "the local caller (stdio) has the default too";
    EXPECT_EQ(b.posts(), 0u);
    EXPECT_FALSE(b.h->call_as(plain, "list_clients", json::object()).is_error());
    EXPECT_FALSE(b.ideas(key("allowed", 1)).is_error());
    EXPECT_EQ(b.posts(), 1u);
}

// A confirmation says what the action costs and what remains; past the budget nothing is
// previewed or asked, the refusal comes first.
TEST(ActionBudgets, PreviewsSayTheCostAndWhatRemains) {
    TempDir dir;
    ManualClock clock(at(2026, 11, 27, 14, 0));
    Budgets b(on_file((dir.path / "state.db").string(), &clock));
    const Principal writer = key("writer", 3);
    ASSERT_FALSE(b.ideas(writer).is_error());
    const ToolReply preview = b.h->call_as(writer, "generate_article",
                                           {{"client_id", kPlumbing}, {"keyword", "boilers"}});
    ASSERT_FALSE(preview.is_error()) << preview.response.dump().substr(0, 600);
    const json& s = preview.structured();
    ASSERT_EQ(s.value("status", ""), "confirmation_required") << s.dump();
    EXPECT_EQ(s["preview"]["budget"]["cost"], 1);
    EXPECT_EQ(s["preview"]["budget"]["remaining"], 2);
    EXPECT_EQ(s["preview"]["budget"]["limit"], 3);
    EXPECT_EQ(s["preview"]["budget"]["resets_at"], "2026-12-01T00:00:00Z");
    const std::string message = s.value("message", "");
    EXPECT_NE(message.find("1 unit of the caller's action budget: 2 of 3 left this month"),
              std::string::npos)
        << message;
    EXPECT_EQ(b.used(writer), 1) << "a preview spends nothing";

    ASSERT_FALSE(b.ideas(writer).is_error());
    ASSERT_FALSE(b.ideas(writer).is_error());
    const std::size_t reads = b.h->gw->count_requests("GET", "clients");
    const ToolReply refused = b.h->call_as(writer, "generate_article",
                                           {{"client_id", kPlumbing}, {"keyword", "boilers"}});
    EXPECT_EQ(refused.reason(), "budget");
    EXPECT_EQ(b.h->gw->count_requests("GET", "clients"), reads) << "refused before the preview";
    EXPECT_EQ(b.h->gw->count_requests("POST", "generate_blog"), 0u);
}

// tools/list marks the tools that spend credits, for hosts that ask approval for those alone,
// and their descriptions say so.
TEST(ActionBudgets, BillableToolsAreMarkedInToolsList) {
    Budgets b(ActionSettings{});
    std::set<std::string> billable;
    for (const json& tool : b.h->tools()) {
        const std::string name = tool["name"];
        const bool marked = tool.contains("_meta") && tool["_meta"].value("billable", false);
        if (marked) {
            billable.insert(name);
            EXPECT_NE(tool.value("description", "").find("Spends credits."),
                      std::string::npos)
                << name;
        }
    }
    EXPECT_TRUE(billable.contains("generate_article"));
    EXPECT_TRUE(billable.contains("generate_keyword_ideas"));
    EXPECT_TRUE(billable.contains("index_url"));
    EXPECT_FALSE(billable.contains("deploy_article")) << "deploys spend no credits";
    EXPECT_FALSE(billable.contains("refresh_backlinks"));
    EXPECT_FALSE(billable.contains("list_clients"));
}

// Each write-log row records the clients its caller could reach.
TEST(ActionBudgets, TheWriteLogRecordsTheCallersClientScope) {
    TempDir dir;
    Budgets b(on_file((dir.path / "state.db").string()));
    ASSERT_FALSE(b.ideas(key("scoped", std::nullopt, {kDental, "demo-law"})).is_error());
    EXPECT_EQ(b.last_row().caller_clients, "demo-dental,demo-law");
    ASSERT_FALSE(b.ideas(key("everyone", std::nullopt)).is_error());
    EXPECT_EQ(b.last_row().caller_clients, "*");
    // A call refused for its arguments is recorded with the scope too.
    b.h->call_as(key("scoped", std::nullopt, {kDental}), "generate_keyword_ideas", json::object());
    EXPECT_EQ(b.last_row().outcome, "refused");
    EXPECT_EQ(b.last_row().caller_clients, "demo-dental");
}

// Two instances (two runtimes on one PostgreSQL database, each with its own gateway) race for
// a caller's last unit: exactly one action and one refusal.
TEST(ActionBudgets, TwoInstancesRacingForTheLastUnitGetOneActionAndOneRefusal) {
    const std::string url = agency::testing::pg_fresh_database();
    ManualClock clock(at(2026, 11, 27, 14, 0));
    const auto instance = [&] {
        ActionSettings s;
        s.store = std::make_shared<agency::state::PgStore>(url);
        s.clock = &clock;
        return std::make_unique<Budgets>(std::move(s));
    };
    auto a = instance();
    auto b = instance();
    const Principal writer = key("writer", 3);
    for (int round = 0; round < 5; ++round) {
        // Each round a fresh window (a caller of its own), two units used, then the race.
        const Principal racer = key("writer-" + std::to_string(round), 3);
        ASSERT_FALSE(a->ideas(racer).is_error());
        ASSERT_FALSE(b->ideas(racer).is_error());
        const std::size_t before = a->posts() + b->posts();
        std::promise<void> go;
        std::shared_future<void> start = go.get_future().share();
        auto on_a = std::async(std::launch::async, [&] {
            start.wait();
            return a->h->call_as(racer, "generate_keyword_ideas",
                                 {{"client_id", "demo-law"}, {"seed", "a"}});
        });
        auto on_b = std::async(std::launch::async, [&] {
            start.wait();
            return b->h->call_as(racer, "generate_keyword_ideas",
                                 {{"client_id", "demo-plumbing"}, {"seed", "b"}});
        });
        go.set_value();
        const ToolReply ra = on_a.get();
        const ToolReply rb = on_b.get();
        EXPECT_NE(ra.is_error(), rb.is_error())
            << "round " << round << ": " << ra.response.dump().substr(0, 300) << " / "
            << rb.response.dump().substr(0, 300);
        EXPECT_EQ((ra.is_error() ? ra : rb).reason(), "budget");
        EXPECT_EQ(a->posts() + b->posts(), before + 1) << "round " << round;
        EXPECT_EQ(a->used(racer), 3);
    }
    (void)writer;
}

// /metrics counts units taken and given back and the refusals, with no per-caller label.
TEST(ActionBudgets, MetricsCountUnitsAndRefusalsWithoutCallers) {
    TempDir dir;
    ActionSettings settings = on_file((dir.path / "state.db").string());
    settings.credits.max_per_minute_per_client = 1;
    Budgets b(std::move(settings));
    const std::string taken = "agency_mcp_budget_units_total{event=\"taken\"}";
    const std::string returned = "agency_mcp_budget_units_total{event=\"returned\"}";
    const std::string refused =
        "agency_mcp_budget_refusals_total{gen_ai_tool_name=\"generate_keyword_ideas\"}";
    const double taken0 = metric(taken), returned0 = metric(returned), refused0 = metric(refused);
    const Principal writer = key("metrics-writer-" + agency::crypto::random_hex(4), 1);
    ASSERT_FALSE(b.ideas(writer).is_error());
    EXPECT_EQ(b.ideas(writer).reason(), "budget");
    const Principal other = key("metrics-other-" + agency::crypto::random_hex(4), 5);
    ASSERT_FALSE(b.h->call_as(other, "generate_keyword_ideas",
                              {{"client_id", "demo-law"}, {"seed", "x"}})
                     .is_error());
    EXPECT_EQ(b.h->call_as(other, "generate_keyword_ideas",
                           {{"client_id", "demo-law"}, {"seed", "y"}})
                  .reason(),
              "rate_limited");
    EXPECT_EQ(metric(taken), taken0 + 3);
    EXPECT_EQ(metric(returned), returned0 + 1);
    EXPECT_EQ(metric(refused), refused0 + 1);
    EXPECT_EQ(agency::base::metrics::render().find(writer.name), std::string::npos);
}

}  // namespace action_budgets_test
