// SqliteStore's action budgets: one row per caller and budget window, counted by single
// statements (atomic against other processes on the file too).
#include "state/sqlite_internal.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

BudgetTake SqliteStore::take_budget(std::string_view caller, std::int64_t window_start,
                                    std::int64_t limit) {
    if (limit <= 0) return BudgetTake{.granted = false, .used = budget_used(caller, window_start)};
    const auto lock = open_locked();
    // The count and the check in one statement: a unit is counted only while some are left.
    Statement s(db_,
                "INSERT INTO action_budgets AS b (caller, window_start, used) VALUES (?, ?, 1) "
                "ON CONFLICT (caller, window_start) DO UPDATE SET used = b.used + 1 WHERE "
                "b.used < ? RETURNING used");
    s.bind(caller).bind(window_start).bind(limit);
    if (s.step()) return BudgetTake{.granted = true, .used = s.integer(0)};
    Statement r(db_, "SELECT used FROM action_budgets WHERE caller = ? AND window_start = ?");
    r.bind(caller).bind(window_start);
    return BudgetTake{.granted = false, .used = r.step() ? r.integer(0) : 0};
}

void SqliteStore::return_budget(std::string_view caller, std::int64_t window_start) {
    const auto lock = open_locked();
    Statement s(db_,
                "UPDATE action_budgets SET used = used - 1 WHERE caller = ? AND window_start = ? "
                "AND used > 0");
    s.bind(caller).bind(window_start).run();
}

std::int64_t SqliteStore::budget_used(std::string_view caller, std::int64_t window_start) {
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return 0;
    Statement s(db_, "SELECT used FROM action_budgets WHERE caller = ? AND window_start = ?");
    s.bind(caller).bind(window_start);
    return s.step() ? s.integer(0) : 0;
}

}  // namespace agency::state
