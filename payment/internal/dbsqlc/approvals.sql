-- name: DeleteApprovalRules :exec
DELETE FROM approval_rules WHERE tenant_id = @tenant_id;

-- name: InsertApprovalRules :exec
-- A tenant's rules, in order; "" and 0 stand for "any".
INSERT INTO approval_rules (tenant_id, position, name, min_amount, currency, source, debtor_account, rail,
                            file_min_total, file_min_count, approvals)
SELECT @tenant_id::text, unnest(@positions::int[]), unnest(@names::text[]), nullif(unnest(@min_amounts::text[]), '')::numeric,
       nullif(unnest(@currencies::text[]), ''), nullif(unnest(@sources::text[]), ''), nullif(unnest(@debtor_accounts::text[]), ''),
       nullif(unnest(@rails::text[]), ''), nullif(unnest(@file_min_totals::text[]), '')::numeric,
       nullif(unnest(@file_min_counts::int[]), 0), unnest(@approvals::int[]);

-- name: ApprovalRules :many
-- The tenants' rules, in their order.
SELECT * FROM approval_rules WHERE tenant_id = ANY(@tenant_ids::text[]) ORDER BY tenant_id, position;

-- name: InsertApprovalRequirements :exec
-- The requirements of payments whose ids were claimed now, in the
-- transaction that claims them; a payment taken in before keeps its own.
INSERT INTO payment_approval_requirements (payment_id, tenant_id, rule, approvals, submitter)
SELECT unnest(@payment_ids::text[]), unnest(@tenant_ids::text[]), unnest(@rules::text[]), unnest(@approvals::int[]),
       unnest(@submitters::text[])
ON CONFLICT (payment_id) DO NOTHING;

-- name: ApprovalStates :many
-- Of these payments, those with a requirement: what it asks, who
-- submitted them, how many approved and whether any denied.
-- Each payment's decisions are read by its key (payment_approvals_pkey),
-- never every denial of every payment.
SELECT r.payment_id, r.rule, r.approvals AS needed, r.submitter,
       coalesce(d.approved, 0)::int AS approved, coalesce(d.denied, false)::bool AS denied
FROM payment_approval_requirements r
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE a.decision = 'APPROVE') AS approved, bool_or(a.decision = 'DENY') AS denied
    FROM payment_approvals a WHERE a.payment_id = r.payment_id
) d ON true
WHERE r.payment_id = ANY(@payment_ids::text[]);

-- name: MatchAwaitingApproval :many
-- The payments an approval or a denial selects, locked: AWAITING_APPROVAL
-- or HELD with a requirement, of a tenant (or any), among these keys (none:
-- any), requested in [@requested_from, @requested_to), oldest request
-- first, at most @max_rows. With @skip_principal, neither those it
-- submitted nor those it decided on already: a filter's next call finds
-- the payments after them.
SELECT p.payment_id, p.tenant_id, p.external_id, p.status, coalesce(p.rail, '')::text AS rail, p.execution_date,
       p.requested_execution_time, coalesce(p.context->>'pacingConfig', '')::text AS pacing_config,
       coalesce(p.context->>'tenantPacingConfig', '')::text AS tenant_pacing_config, p.priority, p.created_at,
       r.approvals AS needed, r.submitter, r.rule
FROM payments p
JOIN payment_approval_requirements r ON r.payment_id = p.payment_id
WHERE p.status IN ('AWAITING_APPROVAL', 'HELD')
  AND (@tenant_id::text = '' OR p.tenant_id = @tenant_id::text)
  AND (coalesce(cardinality(@payment_ids::text[]), 0) = 0 OR p.payment_id = ANY(@payment_ids::text[]))
  AND p.requested_execution_time >= @requested_from AND p.requested_execution_time < @requested_to
  AND (@skip_principal::text = ''
    OR (r.submitter IS DISTINCT FROM @skip_principal::text
      AND NOT EXISTS (SELECT 1 FROM payment_approvals a WHERE a.payment_id = p.payment_id AND a.principal = @skip_principal::text)))
ORDER BY p.requested_execution_time, p.payment_id
LIMIT @max_rows
FOR UPDATE OF p;

-- name: InsertApprovals :many
-- Decisions of one principal; one already given on a payment stays
-- (a principal counts once). The payments decided now.
INSERT INTO payment_approvals (payment_id, principal, decision, actor, reason)
SELECT unnest(@payment_ids::text[]), @principal::text, @decision::text, @actor::text, nullif(@reason::text, '')
ON CONFLICT (payment_id, principal) DO NOTHING
RETURNING payment_id;

-- name: LockHeldWithRequirement :many
-- The HELD payments among these keys that have an approval requirement,
-- locked, as an approval locks them (MatchAwaitingApproval): a release
-- reads their approvals after any approval in flight has committed.
SELECT p.payment_id
FROM payments p
WHERE p.payment_id = ANY(@payment_ids::text[]) AND p.status = 'HELD'
  AND EXISTS (SELECT 1 FROM payment_approval_requirements r WHERE r.payment_id = p.payment_id)
ORDER BY p.payment_id
FOR UPDATE OF p;

-- name: AwaitApproval :many
-- HELD payments whose approvals are missing, released by an operator:
-- AWAITING_APPROVAL with the reason.
UPDATE payments
SET status = 'AWAITING_APPROVAL', status_reason = @status_reason::text, updated_at = now()
WHERE payment_id = ANY(@payment_ids::text[]) AND status = 'HELD'
RETURNING payment_id;

-- name: AwaitingApprovalOnRails :many
-- The payments awaiting approval on a rail, for the cut-off sweep, oldest
-- request first, after (@after_time, @after_id): the sweep goes on from
-- where its last round stopped.
SELECT payment_id, tenant_id, coalesce(rail, '')::text AS rail, execution_date, requested_execution_time, status_reason
FROM payments
WHERE status = 'AWAITING_APPROVAL' AND rail IS NOT NULL AND requested_execution_time < @before
  AND (requested_execution_time, payment_id) > (@after_time::timestamptz, @after_id::text)
ORDER BY requested_execution_time, payment_id
LIMIT @max_rows;

-- name: MissApprovalCutoff :execrows
-- The cut-off sweep's move of one payment whose approvals are missing:
-- REJECTED or HELD with the reason, or (ROLL) AWAITING_APPROVAL on its
-- next business day.
UPDATE payments
SET status = @to_status::text, status_reason = @status_reason::text, execution_date = sqlc.narg('execution_date')::date,
    updated_at = now()
WHERE payment_id = @payment_id AND status = 'AWAITING_APPROVAL';

-- name: TryApprovalSweepLock :one
-- One process at a time sweeps (a transaction-scoped advisory lock).
SELECT pg_try_advisory_xact_lock(hashtext('paydispatch.payment.approval_cutoff'));

-- name: SetApprovalReason :exec
-- How many approvals a payment awaiting them has, as its status reason.
UPDATE payments SET status_reason = @status_reason::text, updated_at = now()
WHERE payment_id = @payment_id AND status = 'AWAITING_APPROVAL';
