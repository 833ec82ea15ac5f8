// PgStore's schema (migration steps by version) and every statement it prepares. Columns are
// SQLite's, with the same names and meanings (state/sqlite_file.cpp), so that `state export`
// rows are identical; JSON stays text so that an export/import round trip is exact. Booleans
// are boolean here and exported as 0/1 as SQLite's integers are.
#include <iterator>

#include "state/pg_internal.hpp"

namespace agency::state {

// 5: a draft is bound to the caller that made it; older drafts go to `local` (stdio, or HTTP
// without keys or OAuth).
constexpr const char* kDraftPrincipals = R"sql(
ALTER TABLE drafts ADD COLUMN IF NOT EXISTS principal text NOT NULL DEFAULT '';
UPDATE drafts SET principal = 'local' WHERE principal = '';
)sql";

// 6: each exactly-once decision of a generation action in one round trip. The credit slot is
// taken by one function call (under the client's advisory lock, for one exchange rather than
// six); the per-minute count reads per-second buckets (credit_grants: at most 61 rows a client)
// rather than every grant of the last minute, and the in-flight count a partial index of the
// slots held, so that a high limit stays cheap. A generation action's idempotency key is
// claimed with its slot in one call. A confirmation is consumed, or refused with its reason, by
// one call. The same lock key as version 5's transaction.
constexpr const char* kOneRoundTrip = R"sql(
CREATE TABLE IF NOT EXISTS credit_grants (
  client_id text NOT NULL,
  at_s bigint NOT NULL,
  grants integer NOT NULL,
  PRIMARY KEY (client_id, at_s)
);
INSERT INTO credit_grants (client_id, at_s, grants)
  SELECT client_id, granted_ms / 1000, count(*) FROM credit_slots GROUP BY 1, 2
  ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS credit_slots_held ON credit_slots (client_id, granted_ms) WHERE released_ms IS NULL;
CREATE OR REPLACE FUNCTION agency_acquire_credit(p_client text, p_slot text, p_now bigint,
    p_max_in_flight integer, p_max_per_minute integer, p_abandoned_before bigint)
  RETURNS TABLE (why text, oldest_ms bigint) LANGUAGE plpgsql AS $$
DECLARE
  held bigint;
  granted bigint;
  oldest bigint;
  newest bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1634166132, hashtext(p_client));
  -- Each statement below sees what the lock's previous holders committed.
  SELECT coalesce(sum(g.grants), 0), (min(g.at_s) + 1) * 1000, max(g.at_s)
    INTO granted, oldest, newest
    FROM credit_grants g WHERE g.client_id = p_client AND g.at_s >= (p_now - 60000) / 1000;
  -- Rows that count for nothing any more go, at most once a second (before a second's first
  -- grant): the tables stay small, and a busy client's calls do not each scan for them.
  IF newest IS DISTINCT FROM p_now / 1000 THEN
    DELETE FROM credit_slots WHERE client_id = p_client AND granted_ms < p_now - 60000
      AND (released_ms IS NOT NULL OR granted_ms < p_abandoned_before);
    DELETE FROM credit_grants WHERE client_id = p_client AND at_s < (p_now - 60000) / 1000;
  END IF;
  SELECT count(*) INTO held FROM credit_slots
    WHERE client_id = p_client AND released_ms IS NULL AND granted_ms >= p_abandoned_before;
  IF held >= p_max_in_flight THEN
    RETURN QUERY SELECT 'in_flight'::text, NULL::bigint;
    RETURN;
  END IF;
  IF granted >= p_max_per_minute THEN
    RETURN QUERY SELECT 'per_minute'::text, oldest;  -- when its oldest bucket leaves
    RETURN;
  END IF;
  INSERT INTO credit_slots (id, client_id, granted_ms) VALUES (p_slot, p_client, p_now);
  INSERT INTO credit_grants AS g (client_id, at_s, grants) VALUES (p_client, p_now / 1000, 1)
    ON CONFLICT (client_id, at_s) DO UPDATE SET grants = g.grants + 1;
  RETURN QUERY SELECT ''::text, NULL::bigint;
END $$;
CREATE OR REPLACE FUNCTION agency_claim_key_and_credit(p_principal text, p_tool text, p_key text,
    p_digest text, p_now_s bigint, p_stale_before_s bigint, p_client text, p_slot text,
    p_now bigint, p_max_in_flight integer, p_max_per_minute integer, p_abandoned_before bigint)
  RETURNS TABLE (k_claimed boolean, k_digest text, k_pending boolean, k_is_error boolean,
                 k_result text, k_created_at bigint, c_why text, c_oldest_ms bigint)
  LANGUAGE plpgsql AS $$
DECLARE
  known idempotency%ROWTYPE;
  credit record;
BEGIN
  -- claim_idempotency's steps; a record released between them is claimed afresh next round.
  FOR attempt IN 1..5 LOOP
    INSERT INTO idempotency (principal, tool, key, args_digest, pending, is_error, result,
        created_at) VALUES (p_principal, p_tool, p_key, p_digest, true, false, NULL, p_now_s)
      ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN  -- a pending claim with the same digest whose caller died long ago
      UPDATE idempotency SET created_at = p_now_s, is_error = false, result = NULL
        WHERE principal = p_principal AND tool = p_tool AND key = p_key AND pending
          AND args_digest = p_digest AND created_at < p_stale_before_s;
    END IF;
    IF FOUND THEN
      SELECT * INTO credit FROM agency_acquire_credit(p_client, p_slot, p_now, p_max_in_flight,
                                                      p_max_per_minute, p_abandoned_before);
      IF credit.why <> '' THEN  -- refused: the key stays free
        DELETE FROM idempotency
          WHERE principal = p_principal AND tool = p_tool AND key = p_key AND pending;
      END IF;
      RETURN QUERY SELECT true, NULL::text, NULL::boolean, NULL::boolean, NULL::text,
                          NULL::bigint, credit.why, credit.oldest_ms;
      RETURN;
    END IF;
    SELECT * INTO known FROM idempotency
      WHERE principal = p_principal AND tool = p_tool AND key = p_key;
    IF FOUND THEN
      RETURN QUERY SELECT false, known.args_digest, known.pending, known.is_error, known.result,
                          known.created_at, NULL::text, NULL::bigint;
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'the idempotency key % keeps changing under this call: retry', p_key
    USING ERRCODE = '40001';
END $$;
CREATE OR REPLACE FUNCTION agency_consume_confirmation(p_id text, p_principal text, p_tool text,
    p_digest text, p_now bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  c confirmations%ROWTYPE;
BEGIN
  UPDATE confirmations SET used = true WHERE id = p_id AND NOT used AND principal = p_principal
    AND tool = p_tool AND args_digest = p_digest AND expires_at >= p_now;
  IF FOUND THEN RETURN 'accepted'; END IF;
  -- Refused: why, in SqliteStore's order (unknown, used, mismatch, expired).
  SELECT * INTO c FROM confirmations WHERE id = p_id;
  IF NOT FOUND THEN RETURN 'unknown'; END IF;
  IF c.used THEN RETURN 'used'; END IF;
  IF c.principal <> p_principal OR c.tool <> p_tool OR c.args_digest <> p_digest THEN
    RETURN 'mismatch';
  END IF;
  IF c.expires_at < p_now THEN RETURN 'expired'; END IF;
  RETURN 'used';  -- redeemed by another caller meanwhile
END $$;
)sql";

// 7: action budgets (generation actions per caller and budget window: its start in unix
// seconds), and the clients a write's caller could reach ("*": every client; rows written
// before: no caller was limited then).
constexpr const char* kBudgets = R"sql(
CREATE TABLE IF NOT EXISTS action_budgets (
  caller text NOT NULL,
  window_start bigint NOT NULL,
  used bigint NOT NULL,
  PRIMARY KEY (caller, window_start)
);
ALTER TABLE write_log ADD COLUMN IF NOT EXISTS caller_clients text NOT NULL DEFAULT '*';
)sql";

const std::vector<PgMigration>& pg_migrations() {
    // Version 1 was SQLite's alone (no leases); PostgreSQL starts at 2. A later version appends
    // a step here; a step never changes once released.
    static const std::vector<PgMigration> steps = {{2, R"sql(
CREATE TABLE jobs (
  id text PRIMARY KEY,
  kind text NOT NULL,
  client_id text NOT NULL,
  principal text NOT NULL,
  args text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued','running','succeeded','failed','cancelled')),
  result text,
  error text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  lease_owner text NOT NULL DEFAULT '',
  lease_until_ms bigint NOT NULL DEFAULT 0
);
CREATE INDEX jobs_status ON jobs (status, created_at);
CREATE TABLE idempotency (
  principal text NOT NULL,
  tool text NOT NULL,
  key text NOT NULL,
  args_digest text NOT NULL,
  pending boolean NOT NULL DEFAULT true,
  is_error boolean NOT NULL DEFAULT false,
  result text,
  created_at bigint NOT NULL,
  PRIMARY KEY (principal, tool, key)
);
CREATE TABLE drafts (
  id text PRIMARY KEY,
  client_id text NOT NULL,
  recipient text NOT NULL,
  subject text NOT NULL,
  html text NOT NULL,
  status text NOT NULL CHECK (status IN ('draft','sent')),
  gateway_id text,
  prospect_url text,
  created_at bigint NOT NULL
);
CREATE TABLE confirmations (
  id text PRIMARY KEY,
  principal text NOT NULL,
  tool text NOT NULL,
  args_digest text NOT NULL,
  expires_at bigint NOT NULL,
  used boolean NOT NULL DEFAULT false
);
CREATE TABLE tasks (
  id text PRIMARY KEY,
  owner text NOT NULL,
  tool text NOT NULL,
  era text NOT NULL,
  status text NOT NULL,
  status_message text NOT NULL,
  created_ms bigint NOT NULL,
  updated_ms bigint NOT NULL,
  ttl_ms bigint NOT NULL,
  poll_ms bigint NOT NULL,
  arguments text NOT NULL,
  result text NOT NULL,
  error text,
  input_requests text,
  resume text,
  lease_owner text NOT NULL DEFAULT '',
  lease_until_ms bigint NOT NULL DEFAULT 0
);
CREATE INDEX tasks_owner ON tasks (owner, created_ms);
CREATE INDEX tasks_status ON tasks (status);
CREATE TABLE credit_slots (
  id text PRIMARY KEY,
  client_id text NOT NULL,
  granted_ms bigint NOT NULL,
  released_ms bigint
);
CREATE INDEX credit_slots_client ON credit_slots (client_id, granted_ms);
)sql"},
                                                   // 3: the write log, append-only (an
                                                   // UPDATE is refused by the database).
                                                   {3, R"sql(
CREATE TABLE write_log (
  id text PRIMARY KEY,
  at_ms bigint NOT NULL,
  principal text NOT NULL,
  tool text NOT NULL,
  client_id text NOT NULL,
  args_digest text NOT NULL,
  args_summary text NOT NULL,
  confirmation text NOT NULL,
  confirmation_ref text NOT NULL DEFAULT '',
  outcome text NOT NULL,
  reason text NOT NULL DEFAULT '',
  record_id text NOT NULL DEFAULT '',
  replayed boolean NOT NULL DEFAULT false,
  detail text NOT NULL DEFAULT ''
);
CREATE INDEX write_log_at ON write_log (at_ms);
CREATE INDEX write_log_client ON write_log (client_id, at_ms);
CREATE FUNCTION agency_write_log_append_only() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'the write log is append-only'; END $$;
CREATE TRIGGER write_log_append_only BEFORE UPDATE ON write_log FOR EACH ROW
  EXECUTE FUNCTION agency_write_log_append_only();
)sql"},
                                                   // 4: a task of an authenticated caller is
                                                   // bound to the caller, no longer to its legacy
                                                   // session: "<caller>#<session id>" becomes
                                                   // "<caller>" (no column changes).
                                                   {4, R"sql(
UPDATE tasks SET owner = left(owner, -33)
  WHERE era = 'legacy' AND (owner LIKE 'key:%' OR owner LIKE 'oauth:%')
    AND owner ~ '#[0-9a-f]{32}$';
)sql"},
                                                   {5, kDraftPrincipals},
                                                   {6, kOneRoundTrip},
                                                   {7, kBudgets}};
    return steps;
}

namespace {
#define AGENCY_JOB_COLUMNS                                                                  \
    "id, kind, client_id, principal, args, status, result, error, created_at, updated_at, " \
    "lease_owner, lease_until_ms"
#define AGENCY_TASK_COLUMNS                                                                   \
    "id, owner, tool, era, status, status_message, created_ms, updated_ms, ttl_ms, poll_ms, " \
    "arguments, result, error, input_requests, resume, lease_owner, lease_until_ms"
#define AGENCY_TASK_BEFORE                                                                   \
    "b.id, b.owner, b.tool, b.era, b.status, b.status_message, b.created_ms, b.updated_ms, " \
    "b.ttl_ms, b.poll_ms, b.arguments, b.result, b.error, b.input_requests, b.resume, "      \
    "b.lease_owner, b.lease_until_ms"

const PgStatement kStatements[] = {
    // --- jobs
    {"job_create",
     "INSERT INTO jobs (id, kind, client_id, principal, args, status, created_at, "
     "updated_at) VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6)"},
    {"job_get", "SELECT " AGENCY_JOB_COLUMNS " FROM jobs WHERE id = $1"},
    // The row is locked and its claim checked against the committed state: of several
    // instances claiming at once, one gets it; the others skip the locked row rather than wait
    // (SKIP LOCKED: it is being claimed, cancelled or finished). RETURNING gives the row as it
    // was.
    {"job_claim",
     "WITH b AS (SELECT " AGENCY_JOB_COLUMNS " FROM jobs WHERE id = $1 AND (status = "
     "'queued' OR (status = 'running' AND ($4::boolean OR lease_owner = '' OR lease_owner = "
     "$2 OR lease_until_ms < $5::bigint))) FOR UPDATE SKIP LOCKED) UPDATE jobs SET status = "
     "'running', lease_owner = $2, lease_until_ms = $3, updated_at = $6 FROM b WHERE jobs.id = "
     "b.id "
     "RETURNING b.id, b.kind, b.client_id, b.principal, b.args, b.status, b.result, b.error, "
     "b.created_at, b.updated_at, b.lease_owner, b.lease_until_ms"},
    {"job_renew",
     "UPDATE jobs SET lease_until_ms = $2 WHERE lease_owner = $1 AND status = 'running'"},
    {"job_orphaned", "SELECT " AGENCY_JOB_COLUMNS " FROM jobs WHERE status = 'queued' OR (status = "
                     "'running' AND lease_until_ms < $1) ORDER BY created_at, id LIMIT $2"},
    {"job_finish",
     "UPDATE jobs SET status = CASE status WHEN 'cancelled' THEN 'cancelled' ELSE "
     "$2::text END, result = $3, error = $4, updated_at = $5 WHERE id = $1"},
    {"job_cancel",
     "WITH b AS (SELECT id, status FROM jobs WHERE id = $1 AND status IN "
     "('queued','running') FOR UPDATE) UPDATE jobs SET status = 'cancelled', updated_at = "
     "$2 FROM b WHERE jobs.id = b.id RETURNING b.status"},
    {"job_unfinished",
     "SELECT " AGENCY_JOB_COLUMNS " FROM jobs WHERE status IN ('queued','running') ORDER BY "
     "created_at, id"},
    // --- idempotency
    {"idem_insert",
     "INSERT INTO idempotency (principal, tool, key, args_digest, pending, is_error, result, "
     "created_at) VALUES ($1, $2, $3, $4, true, false, NULL, $5) ON CONFLICT DO NOTHING "
     "RETURNING 1"},
    // A pending claim with the same digest whose caller died long ago is taken over.
    {"idem_takeover",
     "UPDATE idempotency SET created_at = $5, is_error = false, result = NULL WHERE "
     "principal = $1 AND tool = $2 AND key = $3 AND pending AND args_digest = $4 AND "
     "created_at < $6 RETURNING 1"},
    {"idem_find",
     "SELECT args_digest, pending, is_error, result, created_at FROM idempotency WHERE "
     "principal = $1 AND tool = $2 AND key = $3"},
    {"idem_complete",
     "UPDATE idempotency SET pending = false, is_error = $4, result = $5 WHERE principal = "
     "$1 AND tool = $2 AND key = $3"},
    // claim_idempotency and acquire_credit in one call.
    {"idem_claim_credit",
     "SELECT k_claimed, k_digest, k_pending, k_is_error, k_result, k_created_at, c_why, "
     "c_oldest_ms FROM agency_claim_key_and_credit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
     "$11, $12)"},
    {"idem_release",
     "DELETE FROM idempotency WHERE principal = $1 AND tool = $2 AND key = $3 AND pending"},
    // --- drafts
    {"draft_create",
     "INSERT INTO drafts (id, client_id, recipient, subject, html, status, gateway_id, "
     "prospect_url, created_at, principal) VALUES ($1, $2, $3, $4, $5, 'draft', $6, $7, $8, "
     "$9)"},
    // Another caller's draft reads as an unknown id.
    {"draft_get",
     "SELECT id, client_id, recipient, subject, html, status, gateway_id, prospect_url, "
     "created_at, principal FROM drafts WHERE id = $1 AND principal = $2 AND principal <> ''"},
    {"draft_sent", "UPDATE drafts SET status = 'sent' WHERE id = $1 AND status = 'draft'"},
    // --- confirmations
    {"confirm_create",
     "INSERT INTO confirmations (id, principal, tool, args_digest, expires_at, used) VALUES "
     "($1, $2, $3, $4, $5, false)"},
    // Marked used only when every condition holds, in one statement: one redeemer wins. A
    // refusal says why in the same call.
    {"confirm_consume", "SELECT agency_consume_confirmation($1, $2, $3, $4, $5)"},
    // --- credits (one call each; agency_acquire_credit takes the client's advisory lock)
    {"credit_acquire", "SELECT why, oldest_ms FROM agency_acquire_credit($1, $2, $3, $4, $5, $6)"},
    {"credit_release",
     "UPDATE credit_slots SET released_ms = $2 WHERE id = $1 AND released_ms IS NULL"},
    // --- the write log
    {"write_log_append",
     "INSERT INTO write_log (id, at_ms, principal, tool, client_id, args_digest, args_summary, "
     "confirmation, confirmation_ref, outcome, reason, record_id, replayed, detail, "
     "caller_clients) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
     "$15) ON CONFLICT (id) DO NOTHING"},
    // write_log_append ($1-$14, caller_clients $22) with the call's idempotency key completed
    // ($15-$19; none when $19 is NULL) and its credit slot released ($20 at $21; none when
    // NULL): all or none.
    {"write_log_settle",
     "WITH done AS (UPDATE idempotency SET pending = false, is_error = $15, result = $16 WHERE "
     "principal = $17 AND tool = $18 AND key = $19), freed AS (UPDATE credit_slots SET "
     "released_ms = $21 WHERE id = $20 AND released_ms IS NULL) INSERT INTO write_log (id, "
     "at_ms, principal, tool, client_id, args_digest, args_summary, confirmation, "
     "confirmation_ref, outcome, reason, record_id, replayed, detail, caller_clients) VALUES "
     "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $22) ON CONFLICT (id) DO "
     "NOTHING"},
    {"write_log_prune", "DELETE FROM write_log WHERE at_ms < $1"},
    // --- action budgets: the count and the check in one statement (of instances racing for
    // the last unit, one gets it: the row's lock orders them, and the WHERE reads the
    // committed count)
    {"budget_take",
     "INSERT INTO action_budgets AS b (caller, window_start, used) VALUES ($1, $2, 1) ON "
     "CONFLICT (caller, window_start) DO UPDATE SET used = b.used + 1 WHERE b.used < $3 "
     "RETURNING used"},
    {"budget_return",
     "UPDATE action_budgets SET used = used - 1 WHERE caller = $1 AND window_start = $2 AND "
     "used > 0"},
    {"budget_used", "SELECT used FROM action_budgets WHERE caller = $1 AND window_start = $2"},
    // --- tasks
    // Leases change only through claim and renew; a cancelled row stays cancelled; a put
    // that cancels notifies every instance's LISTEN in the same transaction.
    {"task_put",
     "WITH up AS (INSERT INTO tasks (" AGENCY_TASK_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, "
     "$7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) ON CONFLICT (id) DO UPDATE SET "
     "owner = excluded.owner, tool = excluded.tool, era = excluded.era, status = "
     "excluded.status, status_message = excluded.status_message, created_ms = "
     "excluded.created_ms, updated_ms = excluded.updated_ms, ttl_ms = excluded.ttl_ms, "
     "poll_ms = excluded.poll_ms, arguments = excluded.arguments, result = excluded.result, "
     "error = excluded.error, input_requests = excluded.input_requests, resume = "
     "excluded.resume WHERE tasks.status <> 'cancelled' RETURNING id, status) SELECT "
     "pg_notify('agency_task_cancelled', id) FROM up WHERE status = 'cancelled'"},
    {"task_get", "SELECT " AGENCY_TASK_COLUMNS " FROM tasks WHERE id = $1"},
    {"task_list",
     "SELECT " AGENCY_TASK_COLUMNS " FROM tasks WHERE owner = $1 AND era = $4 ORDER BY "
     "created_ms DESC, id LIMIT $2 OFFSET $3"},
    {"task_unfinished",
     "SELECT " AGENCY_TASK_COLUMNS " FROM tasks WHERE status IN ('working','input_required') "
     "ORDER BY created_ms, id"},
    {"task_erase_expired", "DELETE FROM tasks WHERE ttl_ms > 0 AND created_ms + ttl_ms < $1"},
    {"task_claim",
     "WITH b AS (SELECT " AGENCY_TASK_COLUMNS " FROM tasks WHERE id = $1 AND status IN "
     "('working','input_required') AND ($4::boolean OR lease_owner = '' OR lease_owner = $2 "
     "OR lease_until_ms < $5::bigint) FOR UPDATE SKIP LOCKED) UPDATE tasks SET lease_owner = "
     "$2, "
     "lease_until_ms = $3 FROM b WHERE tasks.id = b.id RETURNING " AGENCY_TASK_BEFORE},
    {"task_renew",
     "UPDATE tasks SET lease_until_ms = $2 WHERE lease_owner = $1 AND status IN "
     "('working','input_required')"},
    // Each cancel is reported once: the lease is cleared as it is reported.
    {"task_cancelled_seen",
     "UPDATE tasks SET lease_until_ms = 0 WHERE lease_owner = $1 AND status = 'cancelled' "
     "AND lease_until_ms > 0 RETURNING id"},
    {"task_orphaned",
     "SELECT " AGENCY_TASK_COLUMNS " FROM tasks WHERE status IN ('working','input_required') "
     "AND lease_until_ms < $1 ORDER BY created_ms, id LIMIT $2"},
};
}  // namespace

const std::vector<PgStatement>& pg_statements() {
    static const std::vector<PgStatement> statements(std::begin(kStatements),
                                                     std::end(kStatements));
    return statements;
}

#undef AGENCY_JOB_COLUMNS
#undef AGENCY_TASK_COLUMNS
#undef AGENCY_TASK_BEFORE

}  // namespace agency::state
