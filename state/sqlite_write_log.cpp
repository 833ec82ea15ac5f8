// SqliteStore's write log: appended by the action pipeline, read by `agency-mcp write-log` and
// the write-log resource, pruned only by `agency-mcp write-log prune`.
#include <string>

#include "state/sqlite_internal.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

namespace {

// (a template: the statement type is private to the store)
template <typename Statement>
void bind_entry(Statement& s, const WriteLogEntry& e) {
    s.bind(e.id).bind(e.at_ms).bind(e.principal).bind(e.tool).bind(e.client_id);
    s.bind(e.args_digest).bind(e.args_summary.dump()).bind(e.confirmation);
    s.bind(e.confirmation_ref).bind(e.outcome).bind(e.reason).bind(e.record_id);
    s.bind(std::int64_t{e.replayed ? 1 : 0}).bind(e.detail).bind(e.caller_clients);
}

constexpr const char* kInsert =
    "INSERT INTO write_log (id, at_ms, principal, tool, client_id, args_digest, args_summary, "
    "confirmation, confirmation_ref, outcome, reason, record_id, replayed, detail, "
    "caller_clients) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING";

}  // namespace

WriteLogEntry SqliteStore::append_write_log(WriteLogEntry entry) {
    entry = new_write_log_entry(std::move(entry), clock().unix_ms());
    const auto lock = open_locked();
    Statement s(db_, kInsert);
    bind_entry(s, entry);
    s.run();
    return entry;
}

void SqliteStore::read_write_log(const WriteLogQuery& query,
                                 const std::function<void(const WriteLogEntry&)>& sink) {
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return;
    const std::string sql = std::string("SELECT ") + kWriteLogColumns + " FROM write_log" +
                            write_log_filter(query, [](int) { return std::string("?"); });
    Statement s(db_, sql.c_str());
    s.bind(query.since_ms);
    if (!query.client_id.empty()) s.bind(query.client_id);
    if (!query.tool.empty()) s.bind(query.tool);
    if (!query.principal.empty()) s.bind(query.principal);
    if (query.limit > 0) s.bind(static_cast<std::int64_t>(query.limit));
    while (s.step()) sink(write_log_from_row(s));
}

std::int64_t SqliteStore::prune_write_log(std::int64_t before_ms, WriteLogEntry note) {
    note = new_write_log_entry(std::move(note), clock().unix_ms());
    const auto lock = open_locked();
    return in_transaction([&] {
        Statement d(db_, "DELETE FROM write_log WHERE at_ms < ?");
        d.bind(before_ms).run();
        const std::int64_t deleted = d.changes();
        note.detail += (note.detail.empty() ? "" : ": ") + std::to_string(deleted) +
                       " row(s) deleted";
        Statement s(db_, kInsert);
        bind_entry(s, note);
        s.run();
        return deleted;
    });
}

}  // namespace agency::state
