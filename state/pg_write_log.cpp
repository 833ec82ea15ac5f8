// PgStore's write log: appended by the action pipeline of every instance, read by
// `agency-mcp write-log` and the write-log resource, pruned only by `write-log prune`.
#include <string>

#include "base/clock.hpp"

#include "state/pg_internal.hpp"
#include "state/rows.hpp"

namespace agency::state {

namespace {

// The columns as write_log_from_row reads them: the boolean as 0/1.
const std::string& select_columns() {
    static const std::string columns = [] {
        std::string c = kWriteLogColumns;
        c.replace(c.find("replayed"), 8, "replayed::int");
        return c;
    }();
    return columns;
}

void append(PgStore::Conn& conn, const WriteLogEntry& e) {
    conn.run("write_log_append",
             {e.id, e.at_ms, e.principal, e.tool, e.client_id, e.args_digest,
              e.args_summary.dump(), e.confirmation, e.confirmation_ref, e.outcome, e.reason,
              e.record_id, PgParam::boolean(e.replayed), e.detail, e.caller_clients});
}

}  // namespace

WriteLogEntry PgStore::append_write_log(WriteLogEntry entry) {
    entry = new_write_log_entry(std::move(entry), clock().unix_ms());
    append(*acquire(), entry);
    return entry;
}

WriteLogEntry PgStore::append_write_log_settling(WriteLogEntry entry, const Settlement& settle) {
    entry = new_write_log_entry(std::move(entry), clock().unix_ms());
    const auto text_or_null = [](const std::string& s) {
        return s.empty() ? PgParam(nullptr) : PgParam(s);
    };
    const WriteLogEntry& e = entry;
    acquire()->run("write_log_settle", {e.id,
                                        e.at_ms,
                                        e.principal,
                                        e.tool,
                                        e.client_id,
                                        e.args_digest,
                                        e.args_summary.dump(),
                                        e.confirmation,
                                        e.confirmation_ref,
                                        e.outcome,
                                        e.reason,
                                        e.record_id,
                                        PgParam::boolean(e.replayed),
                                        e.detail,
                                        PgParam::boolean(settle.is_error),
                                        settle.result,
                                        settle.principal,
                                        settle.tool,
                                        text_or_null(settle.key),
                                        text_or_null(settle.slot_id),
                                        clock().unix_ms(),
                                        e.caller_clients});
    return entry;
}

void PgStore::read_write_log(const WriteLogQuery& query,
                             const std::function<void(const WriteLogEntry&)>& sink) {
    std::vector<PgParam> params{PgParam(query.since_ms)};
    if (!query.client_id.empty()) params.emplace_back(query.client_id);
    if (!query.tool.empty()) params.emplace_back(query.tool);
    if (!query.principal.empty()) params.emplace_back(query.principal);
    if (query.limit > 0) params.emplace_back(static_cast<std::int64_t>(query.limit));
    const std::string sql =
        "SELECT " + select_columns() + " FROM write_log" +
        write_log_filter(query, [](int i) { return "$" + std::to_string(i); });
    const PgResult r = acquire()->sql(sql, params);
    for (int i = 0; i < r.rows(); ++i) sink(write_log_from_row(r.row(i)));
}

std::int64_t PgStore::prune_write_log(std::int64_t before_ms, WriteLogEntry note) {
    note = new_write_log_entry(std::move(note), clock().unix_ms());
    return in_transaction([&](Conn& conn) {
        const PgResult r = conn.run("write_log_prune", {before_ms});
        const std::int64_t deleted = std::stoll(libpq().PQcmdTuples(r.get()));
        note.detail += (note.detail.empty() ? "" : ": ") + std::to_string(deleted) +
                       " row(s) deleted";
        append(conn, note);
        return deleted;
    });
}

}  // namespace agency::state
