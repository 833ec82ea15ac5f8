// What both backends share about their rows: the columns of a job and a task in the order
// their SELECTs list them, read through any row type with text(i), integer(i) and
// json_column(i); and which exported columns hold JSON. Private to state/.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <string_view>

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "state/store.hpp"

namespace agency::state {

// A new queued job as create_job stores it: its id and times assigned.
inline Job new_job(std::string_view kind, std::string_view client_id,
                   std::string_view principal, const nlohmann::json& args, std::int64_t now_s) {
    Job job{.id = "aud_" + crypto::random_hex(8),
            .kind = std::string(kind),
            .client_id = std::string(client_id),
            .principal = std::string(principal),
            .args = args,
            .status = "queued",
            .created_at = now_s};
    job.updated_at = job.created_at;
    return job;
}

// A new confirmation as create_confirmation stores it: its id and expiry assigned.
inline Confirmation new_confirmation(std::string_view principal, std::string_view tool,
                                     std::string_view digest, std::chrono::seconds ttl,
                                     std::int64_t now_s) {
    return {.id = "cf_" + crypto::random_hex(16),
            .principal = std::string(principal),
            .tool = std::string(tool),
            .args_digest = std::string(digest),
            .expires_at = now_s + ttl.count()};
}

template <typename Row>
Job job_from_row(const Row& s) {
    Job job;
    job.id = s.text(0);
    job.kind = s.text(1);
    job.client_id = s.text(2);
    job.principal = s.text(3);
    job.args = s.json_column(4);
    job.status = s.text(5);
    job.result = s.json_column(6);
    job.error = s.json_column(7);
    job.created_at = s.integer(8);
    job.updated_at = s.integer(9);
    job.lease_owner = s.text(10);
    job.lease_until_ms = s.integer(11);
    return job;
}

template <typename Row>
TaskRecord task_from_row(const Row& st) {
    TaskRecord t;
    t.id = st.text(0);
    t.owner = st.text(1);
    t.tool = st.text(2);
    t.era = st.text(3);
    t.status = parse_task_status(st.text(4)).value_or(TaskStatus::failed);
    t.status_message = st.text(5);
    t.created_ms = st.integer(6);
    t.updated_ms = st.integer(7);
    t.ttl_ms = st.integer(8);
    t.poll_ms = st.integer(9);
    t.arguments = st.json_column(10);
    t.result = st.text(11);
    t.error = st.json_column(12);
    t.input_requests = st.json_column(13);
    t.resume = st.json_column(14);
    t.lease_owner = st.text(15);
    t.lease_until_ms = st.integer(16);
    return t;
}

// A write log row in the order kWriteLogColumns lists its columns.
inline constexpr const char* kWriteLogColumns =
    "id, at_ms, principal, tool, client_id, args_digest, args_summary, confirmation, "
    "confirmation_ref, outcome, reason, record_id, replayed, detail, caller_clients";

template <typename Row>
WriteLogEntry write_log_from_row(const Row& r) {
    WriteLogEntry e;
    e.id = r.text(0);
    e.at_ms = r.integer(1);
    e.principal = r.text(2);
    e.tool = r.text(3);
    e.client_id = r.text(4);
    e.args_digest = r.text(5);
    e.args_summary = r.json_column(6);
    e.confirmation = r.text(7);
    e.confirmation_ref = r.text(8);
    e.outcome = r.text(9);
    e.reason = r.text(10);
    e.record_id = r.text(11);
    e.replayed = r.integer(12) != 0;
    e.detail = r.text(13);
    e.caller_clients = r.text(14);
    return e;
}

// A new write log row as append_write_log stores it: its id (and time, when unset) assigned.
// Rows are read in (at_ms, id) order, so the id sorts by this process's order of appends
// within a millisecond (a counter), then a random tail keeps instances' ids apart.
inline WriteLogEntry new_write_log_entry(WriteLogEntry e, std::int64_t now_ms) {
    // A row kept in the spool comes with its id (state/write_log_spool.hpp): appending it
    // again is then a no-op (ON CONFLICT DO NOTHING), never a second row.
    if (e.id.empty()) e.id = new_write_log_id();
    if (e.at_ms == 0) e.at_ms = now_ms;
    if (!e.args_summary.is_object()) e.args_summary = nlohmann::json::object();
    return e;
}

// The WHERE clause and ORDER BY of a write log query, with `mark(i)` writing the i-th
// parameter's placeholder ("?" or "$i"); the parameters are since_ms, then client_id, tool and
// principal when set, then the limit when set.
template <typename Mark>
std::string write_log_filter(const WriteLogQuery& q, Mark mark) {
    int n = 1;
    std::string sql = " WHERE at_ms >= " + mark(n++);
    if (!q.client_id.empty()) sql += " AND client_id = " + mark(n++);
    if (!q.tool.empty()) sql += " AND tool = " + mark(n++);
    if (!q.principal.empty()) sql += " AND principal = " + mark(n++);
    if (q.outcomes == WriteLogOutcomes::sent)
        sql += " AND outcome IN ('ok', 'failed', 'unknown')";
    else if (q.outcomes == WriteLogOutcomes::not_sent)
        sql += " AND outcome NOT IN ('ok', 'failed', 'unknown')";
    sql += q.newest_first ? " ORDER BY at_ms DESC, id DESC" : " ORDER BY at_ms, id";
    if (q.limit > 0) sql += " LIMIT " + mark(n++);
    return sql;
}

// Columns holding JSON text: exported as JSON values, imported back as text.
inline bool is_json_column(std::string_view table, std::string_view column) {
    if (table == "jobs") return column == "args" || column == "result" || column == "error";
    if (table == "tasks")
        return column == "arguments" || column == "error" || column == "input_requests" ||
               column == "resume";
    if (table == "write_log") return column == "args_summary";
    return false;
}

inline bool is_state_table(std::string_view name) {
    return std::find(std::begin(kStateTables), std::end(kStateTables), name) !=
           std::end(kStateTables);
}

}  // namespace agency::state
