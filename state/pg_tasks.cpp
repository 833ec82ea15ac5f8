// PgStore as the core's TaskStore: one row per MCP task, and the task leases of several
// instances (claim, renew, orphans) decided in SQL.
#include "base/clock.hpp"
#include "state/pg_internal.hpp"
#include "state/rows.hpp"

namespace agency::state {

using json = nlohmann::json;

void PgStore::put(const TaskRecord& t) {
    // One statement: the upsert (a cancelled row stays so; leases untouched on update) and,
    // when it cancels, pg_notify, delivered to every LISTEN when it commits.
    acquire()->run("task_put", {t.id, t.owner, t.tool, t.era, to_string(t.status), t.status_message,
                                t.created_ms, t.updated_ms, t.ttl_ms, t.poll_ms, t.arguments.dump(),
                                t.result, PgParam::json(t.error), PgParam::json(t.input_requests),
                                PgParam::json(t.resume), t.lease_owner, t.lease_until_ms});
}

std::optional<TaskRecord> PgStore::get(std::string_view id) {
    const auto r = acquire()->run("task_get", {id});
    if (r.rows() == 0) return std::nullopt;
    return task_from_row(r.row(0));
}

std::vector<TaskRecord> PgStore::list(std::string_view owner, std::string_view era,
                                      std::size_t offset, std::size_t limit) {
    return acquire()
        ->run("task_list",
              {owner, static_cast<std::int64_t>(limit), static_cast<std::int64_t>(offset), era})
        .all(task_from_row<PgResult::Row>);
}

std::vector<TaskRecord> PgStore::unfinished() {
    return acquire()->run("task_unfinished", {}).all(task_from_row<PgResult::Row>);
}

void PgStore::erase_expired(std::int64_t now_ms) { acquire()->run("task_erase_expired", {now_ms}); }

std::optional<TaskRecord> PgStore::claim_task(std::string_view id, std::string_view owner,
                                              std::int64_t lease_ms, bool force) {
    const std::int64_t now = clock().unix_ms();
    const auto r =
        acquire()->run("task_claim", {id, owner, now + lease_ms, PgParam::boolean(force), now});
    if (r.rows() == 0) return std::nullopt;
    return task_from_row(r.row(0));
}

std::vector<std::string> PgStore::renew_task_leases(std::string_view owner, std::int64_t lease_ms) {
    return in_transaction([&](Conn& conn) {
        conn.run("task_renew", {owner, clock().unix_ms() + lease_ms});
        const auto r = conn.run("task_cancelled_seen", {owner});
        std::vector<std::string> cancelled;
        for (int i = 0; i < r.rows(); ++i) cancelled.push_back(r.text(i, 0));
        return cancelled;
    });
}

std::vector<TaskRecord> PgStore::orphaned_tasks(std::size_t limit) {
    return acquire()
        ->run("task_orphaned", {clock().unix_ms(), static_cast<std::int64_t>(limit)})
        .all(task_from_row<PgResult::Row>);
}

}  // namespace agency::state
