// Action budgets (issue 35): how many generation actions (ActionCall::spends_credits) a caller
// may run per budget window, counted in the state store (Store::take_budget) so that the count
// holds across instances and restarts. A key's own budget (Principal::action_budget, its
// `monthly_actions`) or else the server's default (`serve --monthly-actions`); none: no limit.
// Windows are calendar months, ISO weeks (from Monday) or days, in UTC, by the injected clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.hpp"
#include "server/tool_def.hpp"
#include "state/store.hpp"

namespace agency::tools {

enum class BudgetWindow { month, week, day };

struct BudgetSettings {
    // Generation actions per caller and window when the caller has no budget of its own;
    // nullopt: none (no limit); 0: no generation action at all.
    std::optional<std::int64_t> default_limit;
    BudgetWindow window = BudgetWindow::month;
};

// "month" | "week" | "day"; nullopt for anything else.
std::optional<BudgetWindow> parse_budget_window(std::string_view text);
std::string_view to_string(BudgetWindow window);

// The window holding `unix_s`: [start, end) in unix seconds.
struct WindowSpan {
    std::int64_t start = 0;
    std::int64_t end = 0;
};
WindowSpan budget_window_at(BudgetWindow window, std::int64_t unix_s);

// The caller's limit: its own, else the default; nullopt when neither is set.
std::optional<std::int64_t> budget_limit(const BudgetSettings& settings,
                                         const mcp::Principal& caller);

// Where a caller stands in the current window.
struct BudgetStatus {
    std::int64_t limit = 0;
    std::int64_t used = 0;
    std::int64_t remaining = 0;  // max(0, limit - used)
    WindowSpan window;
    BudgetWindow kind = BudgetWindow::month;
    // {limit, used, remaining, window, resets_at} as previews and refusals show it.
    nlohmann::json to_json() const;
};

// The caller's standing now (one store read), nullopt when no budget applies to it.
std::optional<BudgetStatus> budget_status(state::Store& store, const BudgetSettings& settings,
                                          const base::Clock& clock, const mcp::Principal& caller);

// The tool error `budget`: nothing was sent; what is left (0), the limit and when it resets.
mcp::ToolResult budget_refusal(const std::string& tool, const BudgetStatus& status);
// "1 budget unit; 2 of 3 left this month (resets 2026-12-01T00:00:00Z)."
std::string budget_sentence(const BudgetStatus& status);

// A unit taken for one call, given back (Store::return_budget) unless kept: the call never
// reached the gateway.
class BudgetUnit {
public:
    BudgetUnit() = default;
    BudgetUnit(state::Store* store, std::string caller, std::int64_t window_start)
        : store_(store), caller_(std::move(caller)), window_start_(window_start) {}
    BudgetUnit(BudgetUnit&& other) noexcept;
    BudgetUnit& operator=(BudgetUnit&& other) noexcept;
    BudgetUnit(const BudgetUnit&) = delete;
    BudgetUnit& operator=(const BudgetUnit&) = delete;
    ~BudgetUnit() { give_back(); }
    // The action reached (or may have reached) the gateway: the unit stays spent.
    void keep() { store_ = nullptr; }
    // Returns the unit now (a store failure is logged: the unit then stays spent).
    void give_back();

private:
    state::Store* store_ = nullptr;
    std::string caller_;
    std::int64_t window_start_ = 0;
};

}  // namespace agency::tools
