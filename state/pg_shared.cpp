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

// One call of agency_acquire_credit (state/pg_schema.cpp): under pg_advisory_xact_lock on the
// client, instances granting slots to the same client take turns, so the counts they read are
// the counts they write against; the lock is held for that one exchange.
CreditSlot PgStore::acquire_credit(std::string_view client_id, int max_in_flight,
                                   int max_per_minute, std::chrono::seconds hold_limit) {
    const std::int64_t now = clock().unix_ms();
    const std::int64_t abandoned_before = now - hold_limit.count() * 1000;
    const std::string id = "cs_" + crypto::random_hex(12);
    const auto r = acquire()->run(
        "credit_acquire", {client_id, id, now, max_in_flight, max_per_minute, abandoned_before});
    return credit_outcome(r.text(0, 0), id, r.integer(0, 1), now);
}

CreditSlot credit_outcome(const std::string& why, const std::string& slot_id,
                          std::int64_t oldest_ms, std::int64_t now_ms) {
    if (why.empty()) return CreditSlot{.granted = true, .id = slot_id};
    if (why == "in_flight") return CreditSlot{.why = why, .retry_after_s = 5};
    const std::int64_t wait_ms = oldest_ms + 60'000 - now_ms;
    return CreditSlot{
        .why = why,
        .retry_after_s = static_cast<int>(std::max<std::int64_t>(1, wait_ms / 1000 + 1))};
}

void PgStore::release_credit(std::string_view slot_id) {
    acquire()->run("credit_release", {slot_id, clock().unix_ms()});
}

// A generation action's key and slot: claim_idempotency and acquire_credit in one call (settled
// with the call's write-log row: append_write_log_settling).
Store::KeyAndSlot PgStore::claim_idempotency_with_credit(
    std::string_view principal, std::string_view tool, std::string_view key,
    std::string_view digest, std::chrono::seconds stale_after, const CreditRequest& credit) {
    const std::int64_t now = clock().unix_ms();
    const std::int64_t now_s = now / 1000;
    const std::string id = "cs_" + crypto::random_hex(12);
    const auto r = acquire()->run(
        "idem_claim_credit",
        {principal, tool, key, digest, now_s, now_s - stale_after.count(), credit.client_id, id,
         now, credit.max_in_flight, credit.max_per_minute, now - credit.hold_limit.count() * 1000});
    KeyAndSlot out;
    if (!r.boolean(0, 0)) {
        out.known = IdempotencyRecord{.args_digest = r.text(0, 1),
                                      .pending = r.boolean(0, 2),
                                      .is_error = r.boolean(0, 3),
                                      .result = r.text(0, 4),
                                      .created_at = r.integer(0, 5)};
        return out;
    }
    out.slot = credit_outcome(r.text(0, 6), id, r.integer(0, 7), now);
    return out;
}

// --- export / import -------------------------------------------------------------------------

namespace {

// Each table's key, for a stable export order.
const char* order_of(std::string_view table) {
    if (table == "write_log") return "at_ms, id";
    if (table == "action_budgets") return "caller, window_start";
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
            "idempotency, drafts, confirmations, tasks, credit_slots, write_log, action_budgets, \"row\": "
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
