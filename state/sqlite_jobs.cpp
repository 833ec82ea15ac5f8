// SqliteStore's jobs, idempotency records, drafts and confirmations, each a section. Every
// exactly-once step is one statement or one transaction under the store's lock (opening the
// file and its schema: sqlite_file.cpp).
#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "state/sqlite_internal.hpp"

namespace agency::state {

using json = nlohmann::json;
// --- jobs ------------------------------------------------------------------------------------

Job SqliteStore::create_job(std::string_view kind, std::string_view client_id,
                            std::string_view principal, const json& args) {
    const Job job = new_job(kind, client_id, principal, args, clock().unix_s());
    const auto lock = open_locked();
    Statement s(db_,
                "INSERT INTO jobs (id, kind, client_id, principal, args, status, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)");
    s.bind(job.id).bind(job.kind).bind(job.client_id).bind(job.principal).bind(args.dump());
    s.bind(job.created_at).bind(job.updated_at).run();
    return job;
}

std::optional<Job> SqliteStore::job(std::string_view id) {
    const auto lock = open_locked();
    return row_by_id(kJobColumns, "jobs", id, job_from_row<Statement>);
}

void SqliteStore::finish_job(std::string_view id, bool succeeded, const json& result,
                             const json& error) {
    const auto lock = open_locked();
    Statement s(db_,
                "UPDATE jobs SET status = CASE status WHEN 'cancelled' THEN 'cancelled' ELSE ? "
                "END, result = ?, error = ?, updated_at = ? WHERE id = ?");
    s.bind(succeeded ? "succeeded" : "failed");
    if (result.is_null())
        s.bind_null();
    else
        s.bind(result.dump());
    if (error.is_null())
        s.bind_null();
    else
        s.bind(error.dump());
    s.bind(clock().unix_s()).bind(id).run();
}

std::optional<std::string> SqliteStore::cancel_job(std::string_view id) {
    const auto lock = open_locked();
    std::string before;
    {
        Statement s(db_, "SELECT status FROM jobs WHERE id = ?");
        s.bind(id);
        if (!s.step()) return std::nullopt;
        before = s.text(0);
    }
    // The status guard keeps a finish that lands between the two statements (another process
    // on the file) from being overwritten.
    Statement u(db_,
                "UPDATE jobs SET status = 'cancelled', updated_at = ? WHERE id = ? AND status = ?"
                " AND status IN ('queued','running')");
    u.bind(clock().unix_s()).bind(id).bind(before).run();
    if (u.changes() == 0) return std::nullopt;
    return before;
}

std::vector<Job> SqliteStore::unfinished_jobs() {
    return rows_if_created(kJobColumns, "jobs",
                           "WHERE status IN ('queued','running') ORDER BY created_at, rowid",
                           job_from_row<Statement>);
}

// --- idempotency -----------------------------------------------------------------------------

std::optional<IdempotencyRecord> SqliteStore::find_idempotency_locked(std::string_view principal,
                                                                      std::string_view tool,
                                                                      std::string_view key) {
    Statement s(db_,
                "SELECT args_digest, pending, is_error, result, created_at FROM idempotency "
                "WHERE principal = ? AND tool = ? AND key = ?");
    s.bind(principal).bind(tool).bind(key);
    if (!s.step()) return std::nullopt;
    return IdempotencyRecord{.args_digest = s.text(0),
                             .pending = s.integer(1) != 0,
                             .is_error = s.integer(2) != 0,
                             .result = s.text(3),
                             .created_at = s.integer(4)};
}

std::optional<IdempotencyRecord> SqliteStore::find_idempotency(std::string_view principal,
                                                               std::string_view tool,
                                                               std::string_view key) {
    const auto lock = open_locked();
    return find_idempotency_locked(principal, tool, key);
}

std::optional<IdempotencyRecord> SqliteStore::claim_idempotency(std::string_view principal,
                                                                std::string_view tool,
                                                                std::string_view key,
                                                                std::string_view digest,
                                                                std::chrono::seconds stale_after) {
    const auto lock = open_locked();
    // One IMMEDIATE transaction: another process on the file cannot claim between the look-up
    // and the write.
    return in_transaction([&]() -> std::optional<IdempotencyRecord> {
        const std::int64_t now = clock().unix_s();
        if (auto r = find_idempotency_locked(principal, tool, key)) {
            if (!(r->pending && r->args_digest == digest &&
                  now - r->created_at > stale_after.count()))
                return r;
        }
        Statement s(db_,
                    "INSERT OR REPLACE INTO idempotency (principal, tool, key, args_digest, "
                    "pending, is_error, result, created_at) VALUES (?, ?, ?, ?, 1, 0, NULL, ?)");
        s.bind(principal).bind(tool).bind(key).bind(digest).bind(now).run();
        return std::nullopt;
    });
}

void SqliteStore::complete_idempotency(std::string_view principal, std::string_view tool,
                                       std::string_view key, bool is_error,
                                       std::string_view result) {
    const auto lock = open_locked();
    Statement s(db_,
                "UPDATE idempotency SET pending = 0, is_error = ?, result = ? WHERE principal = ? "
                "AND tool = ? AND key = ?");
    s.bind(std::int64_t{is_error ? 1 : 0}).bind(result).bind(principal).bind(tool).bind(key).run();
}

void SqliteStore::release_idempotency(std::string_view principal, std::string_view tool,
                                      std::string_view key) {
    const auto lock = open_locked();
    Statement s(db_,
                "DELETE FROM idempotency WHERE principal = ? AND tool = ? AND key = ? AND "
                "pending = 1");
    s.bind(principal).bind(tool).bind(key).run();
}

// --- drafts ----------------------------------------------------------------------------------

Draft SqliteStore::create_draft(Draft draft) {
    draft.id = "em_" + crypto::random_hex(8);
    draft.status = "draft";
    draft.created_at = clock().unix_s();
    const auto lock = open_locked();
    Statement s(db_,
                "INSERT INTO drafts (id, client_id, recipient, subject, html, status, gateway_id, "
                "prospect_url, created_at, principal) VALUES (?, ?, ?, ?, ?, 'draft', ?, ?, ?, ?)");
    s.bind(draft.id).bind(draft.client_id).bind(draft.recipient).bind(draft.subject);
    s.bind(draft.html).bind(draft.gateway_id).bind(draft.prospect_url).bind(draft.created_at);
    s.bind(draft.principal).run();
    return draft;
}

std::optional<Draft> SqliteStore::draft(std::string_view id, std::string_view principal) {
    const auto lock = open_locked();
    Statement s(db_,
                "SELECT id, client_id, recipient, subject, html, status, gateway_id, "
                "prospect_url, created_at, principal FROM drafts WHERE id = ? AND principal = ? "
                "AND principal <> ''");
    s.bind(id).bind(principal);
    if (!s.step()) return std::nullopt;
    return Draft{.id = s.text(0),
                 .client_id = s.text(1),
                 .recipient = s.text(2),
                 .subject = s.text(3),
                 .html = s.text(4),
                 .status = s.text(5),
                 .gateway_id = s.text(6),
                 .prospect_url = s.text(7),
                 .created_at = s.integer(8),
                 .principal = s.text(9)};
}

bool SqliteStore::mark_draft_sent(std::string_view id) {
    const auto lock = open_locked();
    Statement s(db_, "UPDATE drafts SET status = 'sent' WHERE id = ? AND status = 'draft'");
    s.bind(id).run();
    return s.changes() > 0;
}

// --- confirmations ---------------------------------------------------------------------------

Confirmation SqliteStore::create_confirmation(std::string_view principal, std::string_view tool,
                                              std::string_view digest, std::chrono::seconds ttl) {
    const Confirmation c = new_confirmation(principal, tool, digest, ttl, clock().unix_s());
    const auto lock = open_locked();
    Statement s(db_,
                "INSERT INTO confirmations (id, principal, tool, args_digest, expires_at, used) "
                "VALUES (?, ?, ?, ?, ?, 0)");
    s.bind(c.id).bind(c.principal).bind(c.tool).bind(c.args_digest).bind(c.expires_at).run();
    return c;
}

ConfirmOutcome SqliteStore::consume_confirmation(std::string_view id, std::string_view principal,
                                                 std::string_view tool, std::string_view digest) {
    const auto lock = open_locked();
    // One IMMEDIATE transaction: the look-up's read cannot go stale before the write (another
    // process on the file would otherwise make the upgrade fail with SQLITE_BUSY at once).
    return in_transaction([&] {
        Statement s(db_,
                    "SELECT principal, tool, args_digest, expires_at, used FROM confirmations "
                    "WHERE id = ?");
        s.bind(id);
        if (!s.step()) return ConfirmOutcome::unknown;
        if (s.integer(4) != 0) return ConfirmOutcome::used;
        if (s.text(0) != principal || s.text(1) != tool || s.text(2) != digest)
            return ConfirmOutcome::mismatch;
        if (s.integer(3) < clock().unix_s()) return ConfirmOutcome::expired;
        Statement u(db_, "UPDATE confirmations SET used = 1 WHERE id = ? AND used = 0");
        u.bind(id).run();
        return u.changes() > 0 ? ConfirmOutcome::accepted : ConfirmOutcome::used;
    });
}

}  // namespace agency::state
