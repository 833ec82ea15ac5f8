// PgStore's credit slots (counted across instances) and export/import in the format every
// backend shares (kStateTables).
#include <algorithm>

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "state/pg_internal.hpp"
#include "state/rows.hpp"

namespace agency::state {

using json = nlohmann::json;

// --- readiness -------------------------------------------------------------------------------

void PgStore::probe_write() {
    const std::string id = "readiness-probe-" + crypto::random_hex(8);
    in_transaction([&](Conn& conn) {
        conn.run("confirm_create", {id, "", "", "", 0});
        conn.sql("DELETE FROM confirmations WHERE id = $1", {id});
    });
}

// --- credits ---------------------------------------------------------------------------------

// One transaction under pg_advisory_xact_lock on the client: instances granting slots to the
// same client take turns, so the counts they read are the counts they write against.
CreditSlot PgStore::acquire_credit(std::string_view client_id, int max_in_flight,
                                   int max_per_minute, std::chrono::seconds hold_limit) {
    return in_transaction([&](Conn& conn) {
        conn.run("credit_lock", {client_id});
        const std::int64_t now = base::Clock::system().unix_ms();
        const std::int64_t minute_ago = now - 60'000;
        const std::int64_t abandoned_before = now - hold_limit.count() * 1000;
        // Rows that count for nothing any more go first: the table stays small.
        conn.run("credit_gc", {client_id, minute_ago, abandoned_before});
        const auto c = conn.run("credit_count", {client_id, abandoned_before, minute_ago});
        const std::int64_t in_flight = c.integer(0, 0);
        const std::int64_t in_minute = c.integer(0, 1);
        if (in_flight >= max_in_flight) return CreditSlot{.why = "in_flight", .retry_after_s = 5};
        if (in_minute >= max_per_minute) {
            const std::int64_t wait_ms = c.integer(0, 2) + 60'000 - now;
            return CreditSlot{
                .why = "per_minute",
                .retry_after_s = static_cast<int>(std::max<std::int64_t>(1, wait_ms / 1000 + 1))};
        }
        CreditSlot slot{.granted = true, .id = "cs_" + crypto::random_hex(12)};
        conn.run("credit_insert", {slot.id, client_id, now});
        return slot;
    });
}

void PgStore::release_credit(std::string_view slot_id) {
    acquire()->run("credit_release", {slot_id, base::Clock::system().unix_ms()});
}

// --- export / import -------------------------------------------------------------------------

namespace {

// Each table's key, for a stable export order.
const char* order_of(std::string_view table) {
    if (table == "write_log") return "at_ms, id";
    return table == "idempotency" ? "principal, tool, key" : "id";
}

constexpr Oid kBoolOid = 16, kInt8Oid = 20, kInt2Oid = 21, kInt4Oid = 23;
}  // namespace

void PgStore::export_rows(const std::function<void(const json&)>& sink) {
    // One snapshot for every table: rows written meanwhile by other instances are all in or out.
    in_transaction([&](Conn& conn) {
        conn.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
        for (const char* table : kStateTables) {
            const auto r =
                conn.sql(std::string("SELECT * FROM ") + table + " ORDER BY " + order_of(table));
            for (int i = 0; i < r.rows(); ++i) {
                json row = json::object();
                for (int c = 0; c < r.columns(); ++c) {
                    const std::string name = libpq().PQfname(r.get(), c);
                    const Oid type = libpq().PQftype(r.get(), c);
                    if (r.null(i, c))
                        row[name] = nullptr;
                    else if (type == kBoolOid)
                        row[name] = r.boolean(i, c) ? 1 : 0;  // SQLite's integers
                    else if (type == kInt8Oid || type == kInt2Oid || type == kInt4Oid)
                        row[name] = r.integer(i, c);
                    else
                        row[name] =
                            is_json_column(table, name) ? r.json_column(i, c) : json(r.text(i, c));
                }
                sink({{"table", table}, {"row", std::move(row)}});
            }
        }
    });
}

void PgStore::import_row(const json& line) {
    const std::string table = line.value("table", "");
    const auto row = line.find("row");
    if (!is_state_table(table) || row == line.end() || !row->is_object() || row->empty())
        throw StoreError(
            "not an exported state row (want {\"table\": one of jobs, "
            "idempotency, drafts, confirmations, tasks, credit_slots, write_log, \"row\": "
            "{...}})",
            StoreError::Kind::other, StoreError::Backend::postgres);
    std::string columns, marks;
    std::vector<PgParam> values;
    for (const auto& [name, value] : row->items()) {
        if (name.empty() ||
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
            throw StoreError("not a column name: " + name, StoreError::Kind::other,
                             StoreError::Backend::postgres);
        columns += (columns.empty() ? "" : ", ") + name;
        marks += (marks.empty() ? "$" : ", $") + std::to_string(values.size() + 1);
        if (value.is_null())
            values.emplace_back(nullptr);
        else if (is_json_column(table, name))
            values.emplace_back(value.dump());
        else if (value.is_boolean())
            values.emplace_back(value.get<bool>() ? "1" : "0");
        else if (value.is_number_integer())
            values.emplace_back(value.get<std::int64_t>());
        else if (value.is_string())
            values.emplace_back(value.get_ref<const std::string&>());
        else
            throw StoreError("column " + name + " of " + table + " has an unexpected value",
                             StoreError::Kind::other, StoreError::Backend::postgres);
    }
    try {
        acquire()->sql("INSERT INTO " + table + " (" + columns + ") VALUES (" + marks + ")",
                       values);
    } catch (const StoreError& e) {
        throw StoreError("cannot import a row of " + table + ": " + e.what(), e.kind(),
                         StoreError::Backend::postgres);
    }
}

}  // namespace agency::state
