// SqliteStore as the core's TaskStore: one row per MCP task, replaced on every change.
#include <string>

#include "base/clock.hpp"

#include "state/sqlite_internal.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

using json = nlohmann::json;

// --- tasks (TaskStore) ------------------------------------------------------------------------

namespace {
constexpr const char* kTaskColumns =
    "id, owner, tool, era, status, status_message, created_ms, updated_ms, ttl_ms, poll_ms, "
    "arguments, result, error, input_requests, resume, lease_owner, lease_until_ms";

std::string json_or_null(const json& value) { return value.is_null() ? std::string() : value.dump(); }
}  // namespace

void SqliteStore::put(const TaskRecord& t) {
    const auto lock = open_locked();
    // Leases change only through claim_task and renew_task_leases; a cancelled row stays so.
    Statement st(db_, (std::string("INSERT INTO tasks (") + kTaskColumns +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO UPDATE "
                       "SET owner = excluded.owner, tool = excluded.tool, era = excluded.era, "
                       "status = excluded.status, status_message = excluded.status_message, "
                       "created_ms = excluded.created_ms, updated_ms = excluded.updated_ms, "
                       "ttl_ms = excluded.ttl_ms, poll_ms = excluded.poll_ms, "
                       "arguments = excluded.arguments, result = excluded.result, "
                       "error = excluded.error, input_requests = excluded.input_requests, "
                       "resume = excluded.resume WHERE tasks.status <> 'cancelled'")
                          .c_str());
    st.bind(t.id).bind(t.owner).bind(t.tool).bind(t.era).bind(to_string(t.status));
    st.bind(t.status_message).bind(t.created_ms).bind(t.updated_ms).bind(t.ttl_ms).bind(t.poll_ms);
    st.bind(t.arguments.dump()).bind(t.result);
    for (const json* v : {&t.error, &t.input_requests, &t.resume}) {
        if (v->is_null())
            st.bind_null();
        else
            st.bind(json_or_null(*v));
    }
    st.bind(t.lease_owner).bind(t.lease_until_ms);
    st.run();
}

std::optional<TaskRecord> SqliteStore::get(std::string_view id) {
    const auto lock = open_locked();
    return row_by_id(kTaskColumns, "tasks", id, task_from_row<Statement>);
}

std::vector<TaskRecord> SqliteStore::list(std::string_view owner, std::string_view era,
                                          std::size_t offset, std::size_t limit) {
    const auto lock = open_locked();
    Statement st(db_,
                 (std::string("SELECT ") + kTaskColumns +
                  " FROM tasks WHERE owner = ? AND era = ? ORDER BY created_ms DESC, id LIMIT ? "
                  "OFFSET ?")
                     .c_str());
    st.bind(owner)
        .bind(era)
        .bind(static_cast<std::int64_t>(limit))
        .bind(static_cast<std::int64_t>(offset));
    return all_rows(st, task_from_row<Statement>);
}

std::vector<TaskRecord> SqliteStore::unfinished() {
    return rows_if_created(kTaskColumns, "tasks",
                           "WHERE status IN ('working','input_required') ORDER BY created_ms",
                           task_from_row<Statement>);
}

void SqliteStore::erase_expired(std::int64_t now_ms) {
    const auto lock = open_locked();
    Statement st(db_, "DELETE FROM tasks WHERE ttl_ms > 0 AND created_ms + ttl_ms < ?");
    st.bind(now_ms).run();
}

// --- task leases ------------------------------------------------------------------------------

std::optional<TaskRecord> SqliteStore::claim_task(std::string_view id, std::string_view owner,
                                                  std::int64_t lease_ms, bool force) {
    const auto lock = open_locked();
    return in_transaction([&]() -> std::optional<TaskRecord> {
        std::optional<TaskRecord> found =
            row_by_id(kTaskColumns, "tasks", id, task_from_row<Statement>);
        if (!found) return std::nullopt;
        TaskRecord before = std::move(*found);
        const std::int64_t now = clock().unix_ms();
        if (is_terminal(before.status) ||
            !(force || before.lease_owner.empty() || before.lease_owner == owner ||
              before.lease_until_ms < now))
            return std::nullopt;
        Statement u(db_, "UPDATE tasks SET lease_owner = ?, lease_until_ms = ? WHERE id = ?");
        u.bind(owner).bind(now + lease_ms).bind(id).run();
        return before;
    });
}

std::vector<std::string> SqliteStore::renew_task_leases(std::string_view owner,
                                                        std::int64_t lease_ms) {
    const auto lock = open_locked();
    return in_transaction([&] {
        const std::int64_t now = clock().unix_ms();
        Statement u(db_,
                    "UPDATE tasks SET lease_until_ms = ? WHERE lease_owner = ? AND status IN "
                    "('working','input_required')");
        u.bind(now + lease_ms).bind(owner).run();
        std::vector<std::string> cancelled;
        Statement s(db_,
                    "SELECT id FROM tasks WHERE lease_owner = ? AND status = 'cancelled' AND "
                    "lease_until_ms > 0");
        s.bind(owner);
        while (s.step()) cancelled.push_back(s.text(0));
        Statement seen(db_,
                       "UPDATE tasks SET lease_until_ms = 0 WHERE lease_owner = ? AND status = "
                       "'cancelled' AND lease_until_ms > 0");
        seen.bind(owner).run();
        return cancelled;
    });
}

std::vector<TaskRecord> SqliteStore::orphaned_tasks(std::size_t limit) {
    return rows_if_created(kTaskColumns, "tasks",
                           "WHERE status IN ('working','input_required') AND lease_until_ms < ? "
                           "ORDER BY created_ms LIMIT ?",
                           task_from_row<Statement>, clock().unix_ms(),
                           static_cast<std::int64_t>(limit));
}

}  // namespace agency::state
