// PgStore's action budgets: one row per caller and budget window, each step one statement
// (state/pg_schema.cpp: budget_take counts and checks at once, so that of several instances
// racing for a caller's last unit exactly one gets it).
#include "state/pg_internal.hpp"

namespace agency::state {

BudgetTake PgStore::take_budget(std::string_view caller, std::int64_t window_start,
                                std::int64_t limit) {
    if (limit <= 0) return BudgetTake{.granted = false, .used = budget_used(caller, window_start)};
    const PgResult r = acquire()->run("budget_take", {caller, window_start, limit});
    if (r.rows() > 0) return BudgetTake{.granted = true, .used = r.integer(0, 0)};
    return BudgetTake{.granted = false, .used = budget_used(caller, window_start)};
}

void PgStore::return_budget(std::string_view caller, std::int64_t window_start) {
    acquire()->run("budget_return", {caller, window_start});
}

std::int64_t PgStore::budget_used(std::string_view caller, std::int64_t window_start) {
    const PgResult r = acquire()->run("budget_used", {caller, window_start});
    return r.rows() > 0 ? r.integer(0, 0) : 0;
}

}  // namespace agency::state
