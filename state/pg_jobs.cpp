// PgStore's jobs, idempotency records, drafts and confirmations. Every exactly-once step is one
// statement (or a statement and a re-read) decided by the database, so it holds across
// instances: see the statements in state/pg_schema.cpp.
#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "state/pg_internal.hpp"
#include "state/rows.hpp"

namespace agency::state {

using json = nlohmann::json;

// --- jobs ------------------------------------------------------------------------------------

Job PgStore::create_job(std::string_view kind, std::string_view client_id,
                        std::string_view principal, const json& args) {
    const Job job = new_job(kind, client_id, principal, args, clock().unix_s());
    acquire()->run("job_create",
                   {job.id, job.kind, job.client_id, job.principal, args.dump(), job.created_at});
    return job;
}

std::optional<Job> PgStore::job(std::string_view id) {
    const auto r = acquire()->run("job_get", {id});
    if (r.rows() == 0) return std::nullopt;
    return job_from_row(r.row(0));
}

std::optional<Job> PgStore::claim_job(std::string_view id, std::string_view owner,
                                      std::chrono::milliseconds lease, bool force) {
    const std::int64_t now = clock().unix_ms();
    const auto r = acquire()->run(
        "job_claim", {id, owner, now + lease.count(), PgParam::boolean(force), now, now / 1000});
    if (r.rows() == 0) return std::nullopt;
    return job_from_row(r.row(0));
}

void PgStore::renew_job_leases(std::string_view owner, std::chrono::milliseconds lease) {
    acquire()->run("job_renew", {owner, clock().unix_ms() + lease.count()});
}

std::vector<Job> PgStore::orphaned_jobs(std::size_t limit) {
    return acquire()
        ->run("job_orphaned", {clock().unix_ms(), static_cast<std::int64_t>(limit)})
        .all(job_from_row<PgResult::Row>);
}

void PgStore::finish_job(std::string_view id, bool succeeded, const json& result,
                         const json& error) {
    acquire()->run("job_finish", {id, succeeded ? "succeeded" : "failed", PgParam::json(result),
                                  PgParam::json(error), clock().unix_s()});
}

std::optional<std::string> PgStore::cancel_job(std::string_view id) {
    const auto r = acquire()->run("job_cancel", {id, clock().unix_s()});
    if (r.rows() == 0) return std::nullopt;
    return r.text(0, 0);
}

std::vector<Job> PgStore::unfinished_jobs() {
    return acquire()->run("job_unfinished", {}).all(job_from_row<PgResult::Row>);
}

// --- idempotency -----------------------------------------------------------------------------

std::optional<IdempotencyRecord> PgStore::find_idempotency(std::string_view principal,
                                                           std::string_view tool,
                                                           std::string_view key) {
    const auto r = acquire()->run("idem_find", {principal, tool, key});
    if (r.rows() == 0) return std::nullopt;
    return IdempotencyRecord{.args_digest = r.text(0, 0),
                             .pending = r.boolean(0, 1),
                             .is_error = r.boolean(0, 2),
                             .result = r.text(0, 3),
                             .created_at = r.integer(0, 4)};
}

std::optional<IdempotencyRecord> PgStore::claim_idempotency(std::string_view principal,
                                                            std::string_view tool,
                                                            std::string_view key,
                                                            std::string_view digest,
                                                            std::chrono::seconds stale_after) {
    // A record released between the steps below is claimed afresh on the next round.
    for (int round = 0; round < 5; ++round) {
        const std::int64_t now = clock().unix_s();
        {
            auto conn = acquire();
            if (conn->run("idem_insert", {principal, tool, key, digest, now}).rows() > 0)
                return std::nullopt;
            if (conn->run("idem_takeover",
                          {principal, tool, key, digest, now, now - stale_after.count()})
                    .rows() > 0)
                return std::nullopt;
        }
        if (auto record = find_idempotency(principal, tool, key)) return record;
    }
    throw StoreError("state store (PostgreSQL): the idempotency key " + std::string(key) +
                         " keeps changing under this call: retry",
                     StoreError::Kind::busy, StoreError::Backend::postgres);
}

void PgStore::complete_idempotency(std::string_view principal, std::string_view tool,
                                   std::string_view key, bool is_error, std::string_view result) {
    acquire()->run("idem_complete", {principal, tool, key, PgParam::boolean(is_error), result});
}

void PgStore::release_idempotency(std::string_view principal, std::string_view tool,
                                  std::string_view key) {
    acquire()->run("idem_release", {principal, tool, key});
}

// --- drafts ----------------------------------------------------------------------------------

Draft PgStore::create_draft(Draft draft) {
    draft.id = "em_" + crypto::random_hex(8);
    draft.status = "draft";
    draft.created_at = clock().unix_s();
    acquire()->run("draft_create",
                   {draft.id, draft.client_id, draft.recipient, draft.subject, draft.html,
                    draft.gateway_id, draft.prospect_url, draft.created_at, draft.principal});
    return draft;
}

std::optional<Draft> PgStore::draft(std::string_view id, std::string_view principal) {
    const auto r = acquire()->run("draft_get", {id, principal});
    if (r.rows() == 0) return std::nullopt;
    return Draft{.id = r.text(0, 0),
                 .client_id = r.text(0, 1),
                 .recipient = r.text(0, 2),
                 .subject = r.text(0, 3),
                 .html = r.text(0, 4),
                 .status = r.text(0, 5),
                 .gateway_id = r.text(0, 6),
                 .prospect_url = r.text(0, 7),
                 .created_at = r.integer(0, 8),
                 .principal = r.text(0, 9)};
}

bool PgStore::mark_draft_sent(std::string_view id) {
    const auto r = acquire()->run("draft_sent", {id});
    return std::string_view(libpq().PQcmdTuples(r.get())) != "0";
}

// --- confirmations ---------------------------------------------------------------------------

Confirmation PgStore::create_confirmation(std::string_view principal, std::string_view tool,
                                          std::string_view digest, std::chrono::seconds ttl) {
    const Confirmation c = new_confirmation(principal, tool, digest, ttl, clock().unix_s());
    acquire()->run("confirm_create", {c.id, c.principal, c.tool, c.args_digest, c.expires_at});
    return c;
}

ConfirmOutcome PgStore::consume_confirmation(std::string_view id, std::string_view principal,
                                             std::string_view tool, std::string_view digest) {
    // One call: consumed, or refused with why (agency_consume_confirmation).
    const auto why = acquire()
                         ->run("confirm_consume", {id, principal, tool, digest, clock().unix_s()})
                         .text(0, 0);
    if (why == "accepted") return ConfirmOutcome::accepted;
    if (why == "unknown") return ConfirmOutcome::unknown;
    if (why == "mismatch") return ConfirmOutcome::mismatch;
    if (why == "expired") return ConfirmOutcome::expired;
    return ConfirmOutcome::used;
}

}  // namespace agency::state
