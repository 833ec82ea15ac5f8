#include "tools/pipeline/budgets.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/log.hpp"
#include "tools/kit/tool_kit.hpp"
#include "tools/kit/tool_metrics.hpp"

namespace agency::tools {

std::optional<BudgetWindow> parse_budget_window(std::string_view text) {
    if (text == "month") return BudgetWindow::month;
    if (text == "week") return BudgetWindow::week;
    if (text == "day") return BudgetWindow::day;
    return std::nullopt;
}

std::string_view to_string(BudgetWindow window) {
    switch (window) {
        case BudgetWindow::week: return "week";
        case BudgetWindow::day: return "day";
        case BudgetWindow::month: break;
    }
    return "month";
}

WindowSpan budget_window_at(BudgetWindow window, std::int64_t unix_s) {
    using namespace std::chrono;
    const sys_seconds at{seconds(unix_s)};
    const sys_days day = floor<days>(at);
    const auto unix_of = [](sys_days d) {
        return static_cast<std::int64_t>(duration_cast<seconds>(d.time_since_epoch()).count());
    };
    switch (window) {
        case BudgetWindow::day: return {unix_of(day), unix_of(day + days(1))};
        case BudgetWindow::week: {
            // ISO weeks begin on Monday.
            const sys_days monday = day - (weekday(day) - Monday);
            return {unix_of(monday), unix_of(monday + days(7))};
        }
        case BudgetWindow::month: break;
    }
    const year_month ym = year_month_day(day).year() / year_month_day(day).month();
    const sys_days first = sys_days(ym / 1);
    const sys_days next = sys_days((ym + months(1)) / 1);
    return {unix_of(first), unix_of(next)};
}

std::optional<std::int64_t> budget_limit(const BudgetSettings& settings,
                                         const mcp::Principal& caller) {
    if (caller.action_budget) return std::max<std::int64_t>(0, *caller.action_budget);
    if (settings.default_limit) return std::max<std::int64_t>(0, *settings.default_limit);
    return std::nullopt;
}

nlohmann::json BudgetStatus::to_json() const {
    return {{"limit", limit},
            {"used", used},
            {"remaining", remaining},
            {"window", to_string(kind)},
            {"resets_at", iso_time(window.end)}};
}

std::optional<BudgetStatus> budget_status(state::Store& store, const BudgetSettings& settings,
                                          const base::Clock& clock, const mcp::Principal& caller) {
    const auto limit = budget_limit(settings, caller);
    if (!limit) return std::nullopt;
    BudgetStatus s{.limit = *limit,
                   .window = budget_window_at(settings.window, clock.unix_s()),
                   .kind = settings.window};
    s.used = store.budget_used(caller.name, s.window.start);
    s.remaining = std::max<std::int64_t>(0, s.limit - s.used);
    return s;
}

std::string budget_sentence(const BudgetStatus& status) {
    return "It costs 1 unit of the caller's action budget: " + std::to_string(status.remaining) +
           " of " + std::to_string(status.limit) + " left this " +
           std::string(to_string(status.kind)) + " (resets " + iso_time(status.window.end) + ").";
}

mcp::ToolResult budget_refusal(const std::string& tool, const BudgetStatus& status) {
    count_budget_refusal(tool);
    log::info("{}: refused, the caller's action budget ({} per {}) is used up until {}", tool,
              status.limit, to_string(status.kind), iso_time(status.window.end));
    json details = status.to_json();
    details["remaining"] = 0;
    return tool_error(
        "budget",
        "this caller's action budget is used up: 0 of " + std::to_string(status.limit) +
            " generation actions left this " + std::string(to_string(status.kind)) +
            "; it resets at " + iso_time(status.window.end) +
            ". Nothing was sent. Read tools and actions that spend no credits still work; the "
            "operator can raise the budget (keys update --monthly-actions, or serve "
            "--monthly-actions).",
        {{"budget", std::move(details)}});
}

BudgetUnit::BudgetUnit(BudgetUnit&& other) noexcept
    : store_(std::exchange(other.store_, nullptr)),
      caller_(std::move(other.caller_)),
      window_start_(other.window_start_) {}

BudgetUnit& BudgetUnit::operator=(BudgetUnit&& other) noexcept {
    if (this != &other) {
        give_back();
        store_ = std::exchange(other.store_, nullptr);
        caller_ = std::move(other.caller_);
        window_start_ = other.window_start_;
    }
    return *this;
}

void BudgetUnit::give_back() {
    state::Store* store = std::exchange(store_, nullptr);
    if (!store) return;
    try {
        store->return_budget(caller_, window_start_);
        count_budget_unit("returned");
    } catch (const std::exception& e) {
        // The unit stays spent: the caller has one action fewer this window, never one more.
        log::warn("action budget: giving back a unit of {} failed: {}", caller_, e.what());
    }
}

}  // namespace agency::tools
