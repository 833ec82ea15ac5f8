// SqliteStore's part in sharing work: job leases, the credit slots and export/import. One
// instance is the usual case on SQLite, but every step is one IMMEDIATE transaction, so two
// processes on the same file still claim a job once and count credits together.
#include <algorithm>
#include <string>

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "state/sqlite_internal.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

using json = nlohmann::json;

namespace {
}  // namespace

// --- readiness -------------------------------------------------------------------------------

void SqliteStore::probe_write() {
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return;  // never created: nothing to write to yet
    const std::string id = "readiness-probe-" + crypto::random_hex(8);
    in_transaction([&] {
        Statement(db_,
                  "INSERT INTO confirmations (id, principal, tool, args_digest, expires_at, used) "
                  "VALUES (?, '', '', '', 0, 1)")
            .bind(id)
            .run();
        Statement(db_, "DELETE FROM confirmations WHERE id = ?").bind(id).run();
    });
}

// --- job leases ------------------------------------------------------------------------------

std::optional<Job> SqliteStore::claim_job(std::string_view id, std::string_view owner,
                                          std::chrono::milliseconds lease, bool force) {
    const auto lock = open_locked();
    return in_transaction([&]() -> std::optional<Job> {
        std::optional<Job> found = row_by_id(kJobColumns, "jobs", id, job_from_row<Statement>);
        if (!found) return std::nullopt;
        Job before = std::move(*found);
        const std::int64_t now = clock().unix_ms();
        const bool free = before.status == "queued" ||
                          (before.status == "running" &&
                           (force || before.lease_owner.empty() || before.lease_owner == owner ||
                            before.lease_until_ms < now));
        if (!free) return std::nullopt;
        Statement u(db_,
                    "UPDATE jobs SET status = 'running', lease_owner = ?, lease_until_ms = ?, "
                    "updated_at = ? WHERE id = ?");
        u.bind(owner).bind(now + lease.count()).bind(now / 1000).bind(id).run();
        return before;
    });
}

void SqliteStore::renew_job_leases(std::string_view owner, std::chrono::milliseconds lease) {
    const auto lock = open_locked();
    Statement u(db_,
                "UPDATE jobs SET lease_until_ms = ? WHERE lease_owner = ? AND status = 'running'");
    u.bind(clock().unix_ms() + lease.count()).bind(owner).run();
}

std::vector<Job> SqliteStore::orphaned_jobs(std::size_t limit) {
    return rows_if_created(kJobColumns, "jobs",
                           "WHERE status = 'queued' OR (status = 'running' AND lease_until_ms < "
                           "?) ORDER BY created_at, rowid LIMIT ?",
                           job_from_row<Statement>, clock().unix_ms(), static_cast<std::int64_t>(limit));
}

// --- credits ---------------------------------------------------------------------------------

CreditSlot SqliteStore::acquire_credit(std::string_view client_id, int max_in_flight,
                                       int max_per_minute, std::chrono::seconds hold_limit) {
    const auto lock = open_locked();
    return in_transaction([&] {
        const std::int64_t now = clock().unix_ms();
        const std::int64_t minute_ago = now - 60'000;
        const std::int64_t abandoned_before = now - hold_limit.count() * 1000;
        // Rows that count for nothing any more go first: the table stays small.
        Statement gc(db_,
                     "DELETE FROM credit_slots WHERE granted_ms < ? AND (released_ms IS NOT NULL "
                     "OR granted_ms < ?)");
        gc.bind(minute_ago).bind(abandoned_before).run();
        Statement c(db_,
                    "SELECT count(*) FILTER (WHERE released_ms IS NULL AND granted_ms >= ?), "
                    "count(*) FILTER (WHERE granted_ms >= ?), min(granted_ms) FILTER (WHERE "
                    "granted_ms >= ?) FROM credit_slots WHERE client_id = ?");
        c.bind(abandoned_before).bind(minute_ago).bind(minute_ago).bind(client_id);
        c.step();
        const std::int64_t in_flight = c.integer(0);
        const std::int64_t in_minute = c.integer(1);
        if (in_flight >= max_in_flight)
            return CreditSlot{.why = "in_flight", .retry_after_s = 5};
        if (in_minute >= max_per_minute) {
            const std::int64_t wait_ms = c.integer(2) + 60'000 - now;
            return CreditSlot{.why = "per_minute",
                              .retry_after_s = static_cast<int>(
                                  std::max<std::int64_t>(1, wait_ms / 1000 + 1))};
        }
        CreditSlot slot{.granted = true, .id = "cs_" + crypto::random_hex(12)};
        Statement i(db_, "INSERT INTO credit_slots (id, client_id, granted_ms) VALUES (?, ?, ?)");
        i.bind(slot.id).bind(client_id).bind(now).run();
        return slot;
    });
}

void SqliteStore::release_credit(std::string_view slot_id) {
    const auto lock = open_locked();
    Statement u(db_,
                "UPDATE credit_slots SET released_ms = ? WHERE id = ? AND released_ms IS NULL");
    u.bind(clock().unix_ms()).bind(slot_id).run();
}

// --- export / import -------------------------------------------------------------------------


void SqliteStore::export_rows(const std::function<void(const json&)>& sink) {
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return;
    for (const char* table : kStateTables) {
        Statement s(db_, (std::string("SELECT * FROM ") + table + " ORDER BY rowid").c_str());
        const int columns = sqlite3_column_count(s.stmt);
        while (s.step()) {
            json row = json::object();
            for (int i = 0; i < columns; ++i) {
                const std::string name = sqlite3_column_name(s.stmt, i);
                switch (sqlite3_column_type(s.stmt, i)) {
                    case SQLITE_NULL: row[name] = nullptr; break;
                    case SQLITE_INTEGER: row[name] = s.integer(i); break;
                    default:
                        row[name] =
                            is_json_column(table, name) ? s.json_column(i) : json(s.text(i));
                }
            }
            sink({{"table", table}, {"row", std::move(row)}});
        }
    }
}

void SqliteStore::import_row(const json& line) {
    const std::string table = line.value("table", "");
    const auto row = line.find("row");
    if (!is_state_table(table) || row == line.end() || !row->is_object() || row->empty())
        throw StoreError("not an exported state row (want {\"table\": one of jobs, "
                         "idempotency, drafts, confirmations, tasks, credit_slots, write_log, action_budgets, \"row\": "
                         "{...}})");
    std::string columns, marks;
    for (const auto& [name, value] : row->items()) {
        if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") !=
                                std::string::npos)
            throw StoreError("not a column name: " + name);
        columns += (columns.empty() ? "" : ", ") + name;
        marks += marks.empty() ? "?" : ", ?";
    }
    const auto lock = open_locked();
    Statement s(db_, ("INSERT INTO " + table + " (" + columns + ") VALUES (" + marks + ")").c_str());
    for (const auto& [name, value] : row->items()) {
        if (value.is_null())
            s.bind_null();
        else if (is_json_column(table, name))
            s.bind(value.dump());
        else if (value.is_boolean())
            s.bind(std::int64_t{value.get<bool>() ? 1 : 0});
        else if (value.is_number_integer())
            s.bind(value.get<std::int64_t>());
        else if (value.is_string())
            s.bind(value.get_ref<const std::string&>());
        else
            throw StoreError("column " + name + " of " + table + " has an unexpected value");
    }
    s.run();
}

}  // namespace agency::state
