-- name: InsertPayment :execrows
-- Insert-first, with the tenant's id claimed in the same statement; a
-- replay of the same payment inserts nothing (the id is claimed, or the
-- key taken).
WITH claim AS (
    INSERT INTO payment_keys (external_id, tenant_id, payment_id)
    VALUES (@external_id::text, @tenant_id::text, @payment_id::text)
    ON CONFLICT DO NOTHING
    RETURNING payment_id
)
INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time,
                      scheduled_execution_time, status, status_reason, request, details)
SELECT claim.payment_id, @external_id::text, @tenant_id::text, @debtor_account::text, sqlc.narg('amount')::numeric,
       sqlc.narg('currency')::text, @creditor_name::text, sqlc.narg('creditor_iban')::text, sqlc.narg('creditor_bic')::text,
       sqlc.narg('remittance_info')::text, @requested_execution_time::timestamptz,
       sqlc.narg('scheduled_execution_time')::timestamptz, @status::text, sqlc.narg('status_reason')::text, @request::jsonb,
       sqlc.narg('details')::jsonb
FROM claim
ON CONFLICT DO NOTHING;

-- name: ClaimKeys :many
-- The tenants' ids of payments taken in, each claimed once with its key
-- and the Phase A workflow given it (the i-th of each array is the i-th
-- payment's); the keys claimed now (the others were taken in before: a
-- replay, or another payment under the tenant's id).
INSERT INTO payment_keys (external_id, tenant_id, payment_id, init_workflow_id)
SELECT unnest(@external_ids::text[]), unnest(@tenant_ids::text[]), unnest(@payment_ids::text[]),
       unnest(@init_workflow_ids::text[])
ON CONFLICT DO NOTHING
RETURNING payment_id;

-- name: StageIntake :exec
-- Payments taken in, for the Phase A workflow that is to store them: its
-- intake row, the payments as arrays of their columns ("" for none). The
-- amounts travel as text, each with its scale: pgx's encoding of a
-- decimal array (big.Int arithmetic an element) cost more than the rest.
INSERT INTO payment_intake (init_workflow_id, payment_ids, external_ids, tenant_ids, debtor_accounts, amounts,
                            currencies, creditor_names, creditor_ibans, creditor_bics, remittance_infos,
                            requested_execution_times, rails, priorities, details)
VALUES (@init_workflow_id, @payment_ids::text[], @external_ids::text[], @tenant_ids::text[], @debtor_accounts::text[],
        (@amounts::text[])::numeric[], @currencies::text[], @creditor_names::text[], @creditor_ibans::text[],
        @creditor_bics::text[], @remittance_infos::text[], @requested_execution_times::timestamptz[], @rails::text[],
        @priorities::text[], @details::text[])
ON CONFLICT (init_workflow_id) DO UPDATE
SET payment_ids = payment_intake.payment_ids || EXCLUDED.payment_ids,
    external_ids = payment_intake.external_ids || EXCLUDED.external_ids,
    tenant_ids = payment_intake.tenant_ids || EXCLUDED.tenant_ids,
    debtor_accounts = payment_intake.debtor_accounts || EXCLUDED.debtor_accounts,
    amounts = payment_intake.amounts || EXCLUDED.amounts,
    currencies = payment_intake.currencies || EXCLUDED.currencies,
    creditor_names = payment_intake.creditor_names || EXCLUDED.creditor_names,
    creditor_ibans = payment_intake.creditor_ibans || EXCLUDED.creditor_ibans,
    creditor_bics = payment_intake.creditor_bics || EXCLUDED.creditor_bics,
    remittance_infos = payment_intake.remittance_infos || EXCLUDED.remittance_infos,
    requested_execution_times = payment_intake.requested_execution_times || EXCLUDED.requested_execution_times,
    rails = payment_intake.rails || EXCLUDED.rails,
    priorities = coalesce(payment_intake.priorities, array_fill(''::text, ARRAY[cardinality(payment_intake.payment_ids)]))
                 || EXCLUDED.priorities,
    details = coalesce(payment_intake.details, array_fill(''::text, ARRAY[cardinality(payment_intake.payment_ids)]))
              || EXCLUDED.details;

-- name: IntakeRequests :one
-- What a Phase A workflow is to store; no row once it stored it. The
-- amounts as text, as StageIntake writes them.
SELECT payment_ids, external_ids, tenant_ids, debtor_accounts, amounts::text[] AS amounts, currencies, creditor_names,
       creditor_ibans, creditor_bics, remittance_infos, requested_execution_times, rails,
       coalesce(priorities, '{}')::text[] AS priorities,
       coalesce(details, array_fill(''::text, ARRAY[cardinality(payment_ids)]))::text[] AS details,
       received_at
FROM payment_intake WHERE init_workflow_id = @init_workflow_id;

-- name: StorePhaseA :many
-- Phase A's verdicts, each payment stored once in the status it reached:
-- SCHEDULED with its slot and context, HELD with its context, or REJECTED
-- with its reason (the i-th of each array is the i-th payment's; "" for
-- none; an execution date before 1970 for none). The keys stored; one
-- stored before (another run of the same workflow) is left.
INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time,
                      status, status_reason, scheduled_execution_time, context, rail, execution_date, priority, details)
SELECT r.payment_id, r.external_id, r.tenant_id, r.debtor_account, r.amount, r.currency, r.creditor_name,
       nullif(r.creditor_iban, ''), nullif(r.creditor_bic, ''), nullif(r.remittance_info, ''),
       r.requested_execution_time, r.status, nullif(r.status_reason, ''),
       CASE WHEN r.status = 'SCHEDULED' THEN r.scheduled_execution_time END, nullif(r.context, '')::jsonb,
       nullif(r.rail, ''), CASE WHEN r.execution_date >= '1970-01-01' THEN r.execution_date END,
       coalesce(nullif(r.priority, ''), 'NORMAL'), nullif(r.details, '')::jsonb
FROM (SELECT unnest(@payment_ids::text[]) AS payment_id, unnest(@external_ids::text[]) AS external_id,
             unnest(@tenant_ids::text[]) AS tenant_id, unnest(@debtor_accounts::text[]) AS debtor_account,
             unnest(@amounts::numeric[]) AS amount, unnest(@currencies::text[]) AS currency,
             unnest(@creditor_names::text[]) AS creditor_name, unnest(@creditor_ibans::text[]) AS creditor_iban,
             unnest(@creditor_bics::text[]) AS creditor_bic, unnest(@remittance_infos::text[]) AS remittance_info,
             unnest(@requested_execution_times::timestamptz[]) AS requested_execution_time,
             unnest(@statuses::text[]) AS status, unnest(@status_reasons::text[]) AS status_reason,
             unnest(@scheduled_execution_times::timestamptz[]) AS scheduled_execution_time,
             unnest(@contexts::text[]) AS context, unnest(@rails::text[]) AS rail,
             unnest(@execution_dates::date[]) AS execution_date, unnest(@priorities::text[]) AS priority,
             unnest(@details::text[]) AS details) r
ON CONFLICT DO NOTHING
RETURNING payment_id;

-- name: FindPayments :many
-- The payments stored under these tenants' ids (pairs: tenant_ids[i],
-- external_ids[i]).
SELECT sqlc.embed(p)
FROM payment_keys k
JOIN payments p ON p.payment_id = k.payment_id
WHERE (k.external_id, k.tenant_id) IN (SELECT unnest(@external_ids::text[]), unnest(@tenant_ids::text[]));

-- name: PendingRequests :many
-- The payments under these tenants' ids that wait in an intake row for
-- Phase A, with when they were taken in.
WITH w AS (
    SELECT DISTINCT k.init_workflow_id
    FROM payment_keys k
    WHERE (k.external_id, k.tenant_id) IN (SELECT unnest(@external_ids::text[]), unnest(@tenant_ids::text[]))
      AND k.init_workflow_id IS NOT NULL
)
SELECT r.payment_id::text AS payment_id, r.external_id::text AS external_id, r.tenant_id::text AS tenant_id,
       r.debtor_account::text AS debtor_account, r.amount::numeric AS amount, r.currency::text AS currency,
       r.creditor_name::text AS creditor_name, r.creditor_iban::text AS creditor_iban,
       r.creditor_bic::text AS creditor_bic, r.remittance_info::text AS remittance_info,
       r.requested_execution_time::timestamptz AS requested_execution_time, r.rail::text AS rail,
       coalesce(r.priority, '')::text AS priority, coalesce(r.details, '')::text AS details, i.received_at
FROM w
JOIN payment_intake i ON i.init_workflow_id = w.init_workflow_id
CROSS JOIN LATERAL (
    SELECT unnest(i.payment_ids) AS payment_id, unnest(i.external_ids) AS external_id, unnest(i.tenant_ids) AS tenant_id,
           unnest(i.debtor_accounts) AS debtor_account, unnest(i.amounts) AS amount, unnest(i.currencies) AS currency,
           unnest(i.creditor_names) AS creditor_name, unnest(i.creditor_ibans) AS creditor_iban,
           unnest(i.creditor_bics) AS creditor_bic, unnest(i.remittance_infos) AS remittance_info,
           unnest(i.requested_execution_times) AS requested_execution_time,
           unnest(i.rails || array_fill(''::text, ARRAY[cardinality(i.payment_ids) - cardinality(i.rails)])) AS rail,
           unnest(i.priorities) AS priority, unnest(i.details) AS details) r
WHERE (r.external_id, r.tenant_id) IN (SELECT unnest(@external_ids::text[]), unnest(@tenant_ids::text[]));

-- name: PaymentKeysByExternalID :many
-- Every tenant's payment under an id, for an operator who names no tenant.
SELECT payment_id, tenant_id FROM payment_keys WHERE external_id = @external_id ORDER BY tenant_id LIMIT 10;

-- name: PaymentKey :one
SELECT payment_id, init_workflow_id FROM payment_keys WHERE external_id = @external_id AND tenant_id = @tenant_id;

-- name: DeleteIntake :exec
-- A Phase A workflow took on its payments.
DELETE FROM payment_intake WHERE init_workflow_id = @init_workflow_id;

-- name: PendingIntake :many
-- The Phase A workflows whose payments have waited since before @before,
-- oldest first, with how many payments each is to take on (the workflow
-- reads their keys itself).
SELECT init_workflow_id, cardinality(payment_ids)::int AS payments
FROM payment_intake
WHERE received_at < @before
ORDER BY received_at
LIMIT @max_workflows;

-- name: PaymentContext :one
SELECT sqlc.embed(payments) FROM payments WHERE payment_id = @payment_id;

-- name: PaymentContexts :many
-- A batch execution's group read at once (its primary key, one probe each).
SELECT sqlc.embed(payments) FROM payments WHERE payment_id = ANY(@payment_ids::text[]);

-- name: GetPayment :one
SELECT sqlc.embed(payments) FROM payments WHERE payment_id = @payment_id;

-- name: TransitionPayment :one
-- A guarded status change: only from the expected status. ACCEPTED records
-- when execution began: accepted_at, else now. The row is found by key
-- and locked, and its status checked on the locked row (as in
-- BeginExecutions: a status asked of payments may be read through a
-- partial index whole).
WITH locked AS (
    SELECT l.payment_id, l.status FROM payments l WHERE l.payment_id = @payment_id FOR UPDATE
)
UPDATE payments p
SET status = @to_status, status_reason = sqlc.narg('status_reason'), updated_at = now(),
    accepted_at = CASE WHEN @to_status::text = 'ACCEPTED' THEN coalesce(sqlc.narg('accepted_at')::timestamptz, clock_timestamp()) ELSE p.accepted_at END
FROM locked
WHERE p.payment_id = locked.payment_id AND locked.status = @from_status::text
RETURNING p.status;

-- name: BeginExecution :one
-- The payment's execution begins, in the transaction of its debit:
-- SCHEDULED → ACCEPTED at @accepted_at. The guarded transition a cancel
-- races (CancelScheduled): one of the two wins. By key, the status
-- checked on the locked row (as in BeginExecutions).
WITH locked AS (
    SELECT l.payment_id, l.status FROM payments l WHERE l.payment_id = @payment_id FOR UPDATE
)
UPDATE payments p
SET status = 'ACCEPTED', status_reason = NULL, accepted_at = @accepted_at, updated_at = now()
FROM locked
WHERE p.payment_id = locked.payment_id AND locked.status = 'SCHEDULED'
RETURNING p.status;

-- name: CancelScheduled :many
-- Cancels, of these payments, those whose execution has not begun
-- (SCHEDULED, HELD at a cut-off or by a control, AWAITING_APPROVAL): the
-- guarded transition the execution's BeginExecution races. The keys
-- cancelled.
UPDATE payments
SET status = 'CANCELLED', status_reason = @status_reason, updated_at = now()
WHERE payment_id = ANY(@payment_ids::text[]) AND status IN ('SCHEDULED', 'HELD', 'AWAITING_APPROVAL')
  AND (@tenant_id::text = '' OR tenant_id = @tenant_id::text)
RETURNING payment_id;

-- name: CancelWaiting :many
-- Cancels, of these payments, those that wait for Phase A in these
-- intake rows: stored CANCELLED from them (Phase A then finds them
-- stored, and leaves them). The keys cancelled.
INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time, status, status_reason,
                      details)
SELECT r.payment_id, r.external_id, r.tenant_id, r.debtor_account, r.amount, r.currency, r.creditor_name,
       nullif(r.creditor_iban, ''), nullif(r.creditor_bic, ''), nullif(r.remittance_info, ''),
       r.requested_execution_time, 'CANCELLED', @status_reason::text, nullif(r.details, '')::jsonb
FROM payment_intake i
CROSS JOIN LATERAL (
    SELECT unnest(i.payment_ids) AS payment_id, unnest(i.external_ids) AS external_id, unnest(i.tenant_ids) AS tenant_id,
           unnest(i.debtor_accounts) AS debtor_account, unnest(i.amounts) AS amount, unnest(i.currencies) AS currency,
           unnest(i.creditor_names) AS creditor_name, unnest(i.creditor_ibans) AS creditor_iban,
           unnest(i.creditor_bics) AS creditor_bic, unnest(i.remittance_infos) AS remittance_info,
           unnest(i.requested_execution_times) AS requested_execution_time, unnest(i.details) AS details) r
JOIN unnest(@payment_ids::text[]) AS c (payment_id) ON c.payment_id = r.payment_id
WHERE i.init_workflow_id = ANY(@init_workflow_ids::text[])
  AND (@tenant_id::text = '' OR r.tenant_id = @tenant_id::text)
ON CONFLICT DO NOTHING
RETURNING payment_id;

-- name: MatchTenantPayments :many
-- An operator's selection of stored payments: the tenant's, requested
-- in [@requested_from, @requested_to), in one of @statuses (none: any).
-- Those a cancel may move (SCHEDULED, HELD, AWAITING_APPROVAL) one by one, read through the
-- partial indexes of the waiting payments; the rest, which grows by
-- every payment for years, counted by status (payment_id ''), from the
-- index of the tenant's statuses alone. One statement: one snapshot.
SELECT w.payment_id, w.status, 1::int AS n FROM payments w
WHERE w.tenant_id = @tenant_id AND w.status IN ('SCHEDULED', 'HELD', 'AWAITING_APPROVAL')
  AND w.requested_execution_time >= @requested_from AND w.requested_execution_time < @requested_to
  AND (coalesce(cardinality(@statuses::text[]), 0) = 0 OR w.status = ANY(@statuses::text[]))
UNION ALL
SELECT ''::text, s.status, count(*)::int FROM payments s
WHERE s.tenant_id = @tenant_id AND s.status NOT IN ('SCHEDULED', 'HELD', 'AWAITING_APPROVAL')
  AND s.requested_execution_time >= @requested_from AND s.requested_execution_time < @requested_to
  AND (coalesce(cardinality(@statuses::text[]), 0) = 0 OR s.status = ANY(@statuses::text[]))
GROUP BY s.status;

-- name: MatchKeyedPayments :many
-- The same selection among these payments (a file's), of one tenant or
-- (empty) any.
SELECT payment_id, status FROM payments
WHERE payment_id = ANY(@payment_ids::text[])
  AND (@tenant_id::text = '' OR tenant_id = @tenant_id::text)
  AND requested_execution_time >= @requested_from AND requested_execution_time < @requested_to
  AND (coalesce(cardinality(@statuses::text[]), 0) = 0 OR status = ANY(@statuses::text[]));

-- name: MatchWaiting :many
-- The payments waiting for Phase A, of one tenant or (empty) any,
-- requested in [@requested_from, @requested_to), with their intake rows;
-- only in these rows when @init_workflow_ids is not empty.
SELECT r.payment_id::text AS payment_id, i.init_workflow_id
FROM payment_intake i
CROSS JOIN LATERAL (
    SELECT unnest(i.payment_ids) AS payment_id, unnest(i.tenant_ids) AS tenant_id,
           unnest(i.requested_execution_times) AS requested_execution_time) r
WHERE (coalesce(cardinality(@init_workflow_ids::text[]), 0) = 0 OR i.init_workflow_id = ANY(@init_workflow_ids::text[]))
  AND (@tenant_id::text = '' OR r.tenant_id = @tenant_id::text)
  AND r.requested_execution_time >= @requested_from::timestamptz AND r.requested_execution_time < @requested_to::timestamptz;

-- name: BatchIntakeRows :many
-- The intake rows of a file's chunks still waiting for Phase A (a few:
-- rows are deleted as Phase A takes them).
SELECT init_workflow_id FROM payment_intake WHERE starts_with(init_workflow_id, @prefix::text);

-- name: PaymentStatuses :many
-- Where these payments are (of one tenant, or any); a payment waiting
-- for Phase A has no row.
SELECT payment_id, status FROM payments
WHERE payment_id = ANY(@payment_ids::text[]) AND (@tenant_id::text = '' OR tenant_id = @tenant_id::text);

-- name: BatchParts :many
-- A file's payments, a chunk to a row (part is the chunk's number).
SELECT part, payment_ids FROM payment_batch_parts WHERE batch_id = @batch_id ORDER BY part;

-- name: SetExecutionRef :execrows
UPDATE payments SET execution_ref = @execution_ref, updated_at = now()
WHERE payment_id = @payment_id AND execution_ref IS DISTINCT FROM @execution_ref;

-- name: FinishExecution :one
-- Records which execution handled the payment, tells both parties once,
-- and moves it ACCEPTED → PROCESSING, in one statement and one new
-- version of the row. A payment the rail answered for already
-- (DELIVERED, RETURNED) keeps its status; one in any other status is
-- left alone and no row is returned.
WITH moved AS (
    UPDATE payments p
    SET execution_ref = @execution_ref, updated_at = now(),
        status = CASE WHEN p.status = 'ACCEPTED' THEN 'PROCESSING' ELSE p.status END,
        status_reason = CASE WHEN p.status = 'ACCEPTED' THEN NULL ELSE p.status_reason END
    WHERE p.payment_id = @payment_id::text AND p.status IN ('ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED')
    RETURNING p.payment_id, p.status
), notified AS (
    INSERT INTO payment_notifications (payment_id, party, status)
    SELECT m.payment_id, party.party, 'PROCESSING'
    FROM moved m, unnest('{DEBTOR,CREDITOR}'::text[]) AS party (party)
    ON CONFLICT DO NOTHING
)
SELECT moved.status FROM moved;

-- name: InsertNotification :execrows
INSERT INTO payment_notifications (payment_id, party, status)
VALUES (@payment_id, @party, @status)
ON CONFLICT DO NOTHING;

-- name: InsertBooking :execrows
-- Insert-first; a replayed step inserts nothing.
INSERT INTO payment_booking (payment_id, process_id, debit_account_id, debit_transaction_id, fx_contract_id,
                             debit_currency, debit_amount, credit_currency, credit_amount, fee_currency, fee_amount,
                             value_date, beneficiary_name, beneficiary_iban, beneficiary_bic, outbox_id)
VALUES (@payment_id, @process_id, @debit_account_id, @debit_transaction_id, sqlc.narg('fx_contract_id'),
        @debit_currency, @debit_amount, @credit_currency, @credit_amount, @fee_currency, @fee_amount,
        @value_date, @beneficiary_name, sqlc.narg('beneficiary_iban'), sqlc.narg('beneficiary_bic'), sqlc.narg('outbox_id'))
ON CONFLICT (payment_id) DO NOTHING;

-- name: GetBooking :one
SELECT * FROM payment_booking WHERE payment_id = @payment_id;

-- name: FailPayment :execrows
-- An execution that failed: from wherever it was before delivery.
UPDATE payments SET status = 'FAILED', status_reason = @status_reason, updated_at = now()
WHERE payment_id = @payment_id AND status IN ('SCHEDULED', 'ACCEPTED');

-- name: DeliverPayments :many
-- The rail took them: from ACCEPTED or PROCESSING (the rail can be faster
-- than the notification step). Locked in key order first, as a group's
-- FinishExecutions locks them: an UPDATE alone locks in the order its
-- plan meets the rows (a bitmap scan: the table's), and two such orders
-- over the same payments deadlock at 1,000/s.
WITH locked AS (
    SELECT p.payment_id FROM payments p
    WHERE p.payment_id = ANY(@payment_ids::text[]) AND p.status IN ('ACCEPTED', 'PROCESSING')
    ORDER BY p.payment_id
    FOR UPDATE
)
UPDATE payments p SET status = 'DELIVERED', status_reason = NULL, updated_at = now()
FROM locked
WHERE p.payment_id = locked.payment_id AND p.status IN ('ACCEPTED', 'PROCESSING')
  AND p.payment_id = ANY(@payment_ids::text[])
RETURNING p.payment_id;

-- name: LockPaymentsToReturn :exec
-- The payments whose instructions the rail refused, locked in key order
-- before they are returned one by one, as FinishExecutions and
-- DeliverPayments lock theirs: two orders over the same payments
-- deadlock.
SELECT p.payment_id FROM payments p
WHERE p.payment_id = ANY(@payment_ids::text[]) AND p.status IN ('ACCEPTED', 'PROCESSING')
ORDER BY p.payment_id
FOR UPDATE;

-- name: ReturnPayment :execrows
UPDATE payments SET status = 'RETURNED', status_reason = @status_reason, updated_at = now()
WHERE payment_id = @payment_id AND status IN ('ACCEPTED', 'PROCESSING');

-- name: SetBookingReturn :execrows
UPDATE payment_booking SET return_transaction_id = @return_transaction_id, return_code = @return_code
WHERE payment_id = @payment_id AND return_transaction_id IS NULL;

-- name: RedriveBookings :many
-- The bookings of RETURNED payments whose instructions an operator sends
-- again, locked with their payments, in payment order.
SELECT b.*
FROM payment_booking b
JOIN payments p ON p.payment_id = b.payment_id
WHERE b.payment_id = ANY(@payment_ids::text[]) AND p.status = 'RETURNED' AND b.return_transaction_id IS NOT NULL
ORDER BY b.payment_id
FOR UPDATE;

-- name: RedrivePayment :execrows
-- A RETURNED payment debited again for its instruction's requeue: it is
-- PROCESSING once more, and its booking names the debit that stands.
WITH booking AS (
    UPDATE payment_booking b
    SET debit_transaction_id = @debit_transaction_id, return_transaction_id = NULL, return_code = NULL,
        redrives = b.redrives + 1
    WHERE b.payment_id = @payment_id AND b.return_transaction_id IS NOT NULL
    RETURNING b.payment_id
)
UPDATE payments p SET status = 'PROCESSING', status_reason = NULL, updated_at = now()
FROM booking
WHERE p.payment_id = booking.payment_id AND p.status = 'RETURNED';

-- name: InsertBatch :execrows
INSERT INTO payment_batches (batch_id, tenants, payments, chunks)
VALUES (@batch_id, @tenants::text[], @payments, @chunks)
ON CONFLICT (batch_id) DO NOTHING;

-- name: SetBatchRejections :exec
UPDATE payment_batches SET rejected = @rejected, rejections = @rejections WHERE batch_id = @batch_id;

-- name: InsertBatchPart :exec
INSERT INTO payment_batch_parts (batch_id, part, payment_ids) VALUES (@batch_id, @part, @payment_ids::text[]);

-- name: GetBatch :one
SELECT * FROM payment_batches WHERE batch_id = @batch_id;

-- name: BatchProgress :one
SELECT count(*)::int AS started,
       count(*) FILTER (WHERE p.payment_id IS NULL OR p.status = 'RECEIVED')::int AS received,
       count(*) FILTER (WHERE p.status = 'REJECTED')::int AS rejected,
       count(*) FILTER (WHERE p.status = 'SCHEDULED')::int AS scheduled,
       count(*) FILTER (WHERE p.status IN ('ACCEPTED', 'PROCESSING'))::int AS executing,
       count(*) FILTER (WHERE p.status = 'DELIVERED')::int AS delivered,
       count(*) FILTER (WHERE p.status = 'FAILED')::int AS failed,
       count(*) FILTER (WHERE p.status = 'RETURNED')::int AS returned,
       count(*) FILTER (WHERE p.status = 'CANCELLED')::int AS cancelled
FROM payment_batch_parts b
CROSS JOIN LATERAL unnest(b.payment_ids) AS i (payment_id)
LEFT JOIN payments p ON p.payment_id = i.payment_id
WHERE b.batch_id = @batch_id;

-- name: PaymentOutcomes :many
-- Where Phase A left these payments (for a run that found them taken on).
SELECT payment_id, external_id, status, status_reason, scheduled_execution_time, rail, execution_date, details
FROM payments WHERE payment_id = ANY(@payment_ids::text[]);

-- name: ListByTenant :many
-- A page of GET /v1/payments: up to @budget of the tenant's payments
-- before the cursor, newest first, each marked whether it passes the
-- filters this index does not take (hit). ListByStatus and
-- ListByDebtor are the same on their own index.
SELECT payment_id, requested_execution_time, list_seq,
       ((@status::text = '' OR status = @status::text) AND (@debtor_account::text = '' OR debtor_account = @debtor_account::text)
        AND (@rail::text = '' OR rail = @rail::text) AND (@priority::text = '' OR priority = @priority::text))::boolean AS hit
FROM payments
WHERE tenant_id = @tenant_id
  AND requested_execution_time >= @requested_from AND requested_execution_time < @requested_to
  AND (requested_execution_time, list_seq) < (@after_requested::timestamptz, @after_seq::bigint)
ORDER BY requested_execution_time DESC, list_seq DESC
LIMIT @budget;

-- name: ListByStatus :many
SELECT payment_id, requested_execution_time, list_seq,
       ((@debtor_account::text = '' OR debtor_account = @debtor_account::text) AND (@rail::text = '' OR rail = @rail::text)
        AND (@priority::text = '' OR priority = @priority::text))::boolean AS hit
FROM payments
WHERE tenant_id = @tenant_id AND status = @status
  AND requested_execution_time >= @requested_from AND requested_execution_time < @requested_to
  AND (requested_execution_time, list_seq) < (@after_requested::timestamptz, @after_seq::bigint)
ORDER BY requested_execution_time DESC, list_seq DESC
LIMIT @budget;

-- name: ListByDebtor :many
SELECT payment_id, requested_execution_time, list_seq,
       ((@status::text = '' OR status = @status::text) AND (@rail::text = '' OR rail = @rail::text)
        AND (@priority::text = '' OR priority = @priority::text))::boolean AS hit
FROM payments
WHERE tenant_id = @tenant_id AND debtor_account = @debtor_account
  AND requested_execution_time >= @requested_from AND requested_execution_time < @requested_to
  AND (requested_execution_time, list_seq) < (@after_requested::timestamptz, @after_seq::bigint)
ORDER BY requested_execution_time DESC, list_seq DESC
LIMIT @budget;

-- name: BatchHasTenant :one
-- Whether a file holds any of the tenant's payments (its list is empty
-- otherwise, as an unknown file's).
SELECT EXISTS (SELECT 1 FROM payment_batches WHERE batch_id = @batch_id AND @tenant_id::text = ANY (tenants));

-- name: BatchPartsBefore :many
-- A file's parts from @last_part down, for its list (last line first).
SELECT part, payment_ids FROM payment_batch_parts
WHERE batch_id = @batch_id AND part <= @last_part
ORDER BY part DESC
LIMIT @max_parts;

-- name: ListedPayments :many
-- The listed payments' rows: the tenant's among these keys that pass the
-- filters (all of them for a page read through an index, which applied
-- the filters itself).
SELECT payment_id, external_id, tenant_id, status, status_reason, amount, currency, requested_execution_time,
       scheduled_execution_time, created_at, updated_at, execution_ref, rail, execution_date, priority
FROM payments
WHERE payment_id = ANY(@payment_ids::text[]) AND tenant_id = @tenant_id
  AND (@status::text = '' OR status = @status::text)
  AND (@debtor_account::text = '' OR debtor_account = @debtor_account::text)
  AND (@rail::text = '' OR rail = @rail::text)
  AND (@priority::text = '' OR priority = @priority::text)
  AND requested_execution_time >= @requested_from AND requested_execution_time < @requested_to;

-- name: SetPacingConfig :execrows
-- Payments an operator requeued from the dispatch queue's dead letters
-- take their new slots from another rate-limit config: their executions
-- are held to that config's windows (ExecActivities.hold).
UPDATE payments
SET context = jsonb_set(context, '{pacingConfig}', to_jsonb(@pacing_config::text))
WHERE payment_id = ANY(@payment_ids::text[]) AND context IS NOT NULL;

-- name: SetEventStream :exec
-- Turns the event stream on (payment_event_stream), or changes its rail
-- type or lanes.
INSERT INTO payment_event_stream (only_row, rail_type, lanes) VALUES (true, @rail_type::text, @lanes::int)
ON CONFLICT (only_row) DO UPDATE SET rail_type = excluded.rail_type, lanes = excluded.lanes, updated_at = now()
WHERE (payment_event_stream.rail_type, payment_event_stream.lanes) IS DISTINCT FROM (excluded.rail_type, excluded.lanes);

-- name: StopEventStream :execrows
DELETE FROM payment_event_stream;

-- name: InsertBatchPain001 :exec
-- A file sent again keeps the first record: its transactions are the same.
INSERT INTO payment_batch_pain001 (batch_id, msg_id, namespace, document)
VALUES (@batch_id, @msg_id, @namespace, @document)
ON CONFLICT (batch_id) DO NOTHING;

-- name: GetBatchPain001 :one
SELECT document FROM payment_batch_pain001 WHERE batch_id = @batch_id;

-- name: ReschedulePayments :many
-- Payments given new slots (a ROLL past a missed cut-off, an operator's
-- release of held payments): SCHEDULED at their new times, on their new
-- execution dates, from one of the statuses given; the others are left.
-- The context keeps the date its execution checks the cut-off of.
UPDATE payments p
SET status = 'SCHEDULED', status_reason = nullif(r.reason, ''), scheduled_execution_time = r.at,
    execution_date = r.execution_date,
    context = jsonb_set(p.context, '{executionDate}', to_jsonb(r.execution_date::text)),
    updated_at = now()
FROM (SELECT unnest(@payment_ids::text[]) AS payment_id, unnest(@ats::timestamptz[]) AS at,
             unnest(@execution_dates::date[]) AS execution_date, unnest(@reasons::text[]) AS reason) r
WHERE p.payment_id = r.payment_id AND p.status = ANY(@from_statuses::text[]) AND p.context IS NOT NULL
RETURNING p.payment_id, p.tenant_id;

-- name: MatchHeld :many
-- HELD payments an operator releases: on a rail (or any), of a tenant
-- (or any), among these keys (none: any), held for one of the reasons
-- (the reason's first word), oldest request first.
SELECT payment_id, tenant_id, external_id, rail, requested_execution_time FROM payments
WHERE status = 'HELD'
  AND split_part(coalesce(status_reason, ''), ':', 1) = ANY(@reasons::text[])
  AND (@rail::text = '' OR rail = @rail::text)
  AND (@tenant_id::text = '' OR tenant_id = @tenant_id::text)
  AND (coalesce(cardinality(@payment_ids::text[]), 0) = 0 OR payment_id = ANY(@payment_ids::text[]))
ORDER BY requested_execution_time, payment_id
LIMIT @max_rows;

-- name: RejectWaiting :many
-- Waiting payments that are not to go, by key (a denial's, an operator's
-- rejection of a hold): REJECTED with the reason, from one of
-- @from_statuses. Locked in key order, the status checked on the locked
-- rows; others are left.
WITH locked AS (
    SELECT l.payment_id, l.status FROM payments l
    WHERE l.payment_id = ANY(@payment_ids::text[])
    ORDER BY l.payment_id
    FOR UPDATE
)
UPDATE payments p SET status = 'REJECTED', status_reason = @status_reason::text, updated_at = now()
FROM locked
WHERE p.payment_id = locked.payment_id AND locked.status = ANY(@from_statuses::text[])
RETURNING p.payment_id;

-- name: RailBacklog :one
-- What waits for a rail: its SCHEDULED payments with slots before @until
-- (how many, their first and last slots: the epoch for none) and its HELD
-- ones.
SELECT (SELECT count(*) FROM payments w WHERE w.status = 'SCHEDULED' AND w.rail = @rail::text
          AND w.scheduled_execution_time < @until::timestamptz)::bigint AS waiting,
       coalesce((SELECT min(w.scheduled_execution_time) FROM payments w WHERE w.status = 'SCHEDULED' AND w.rail = @rail::text
                   AND w.scheduled_execution_time < @until::timestamptz), 'epoch')::timestamptz AS first_slot,
       coalesce((SELECT max(w.scheduled_execution_time) FROM payments w WHERE w.status = 'SCHEDULED' AND w.rail = @rail::text
                   AND w.scheduled_execution_time < @until::timestamptz), 'epoch')::timestamptz AS last_slot,
       (SELECT count(*) FROM payments h WHERE h.status = 'HELD' AND h.rail = @rail::text)::bigint AS held;

-- name: WaitingOnRails :many
-- The SCHEDULED payments on these rails (of a tenant, or any; among these
-- keys, or any), not paused, by slot: what a lever moves
-- (payments_rail_waiting_idx).
SELECT p.payment_id, p.tenant_id, coalesce(p.rail, '')::text AS rail, p.execution_date, p.requested_execution_time,
       coalesce(p.scheduled_execution_time, p.requested_execution_time)::timestamptz AS scheduled_at,
       coalesce(p.context->>'pacingConfig', '')::text AS pacing_config,
       coalesce(p.context->>'tenantPacingConfig', '')::text AS tenant_pacing_config,
       p.priority, p.created_at
FROM payments p
WHERE p.status = 'SCHEDULED' AND p.rail = ANY(@rails::text[]) AND p.paused_by IS NULL
  AND (@tenant_id::text = '' OR p.tenant_id = @tenant_id::text)
  AND (coalesce(cardinality(@payment_ids::text[]), 0) = 0 OR p.payment_id = ANY(@payment_ids::text[]))
ORDER BY p.scheduled_execution_time, p.list_seq;

-- name: InsertPause :execrows
INSERT INTO payment_pause (scope, scope_id) VALUES (@scope, @scope_id) ON CONFLICT DO NOTHING;

-- name: DeletePause :execrows
DELETE FROM payment_pause WHERE scope = @scope AND scope_id = @scope_id;

-- name: ListPauses :many
SELECT scope, scope_id, paused_at FROM payment_pause ORDER BY paused_at, scope, scope_id;

-- name: MarkPaused :many
-- A pause's waiting payments: SCHEDULED, of the tenant, on the rail or
-- among the keys (a file's) as the scope says, not paused already, marked
-- with it. Their keys and rails.
UPDATE payments p SET paused_by = @tag::text, updated_at = now()
WHERE p.status = 'SCHEDULED' AND (p.paused_by IS NULL OR p.paused_by = 'RESUMED')
  AND ((@scope::text = 'TENANT' AND p.tenant_id = @scope_id::text)
    OR (@scope::text = 'RAIL' AND p.rail = @scope_id::text)
    OR (@scope::text = 'BATCH' AND p.payment_id = ANY(@payment_ids::text[])))
RETURNING p.payment_id, coalesce(p.rail, '')::text AS rail;

-- name: PausedPayments :many
-- A pause's payments still waiting, in their order (their slots before
-- the pause), for its resume (payments_paused_idx).
SELECT p.payment_id, p.tenant_id, coalesce(p.rail, '')::text AS rail, p.execution_date, p.requested_execution_time,
       coalesce(p.scheduled_execution_time, p.requested_execution_time)::timestamptz AS scheduled_at,
       coalesce(p.context->>'pacingConfig', '')::text AS pacing_config,
       coalesce(p.context->>'tenantPacingConfig', '')::text AS tenant_pacing_config,
       p.priority, p.created_at
FROM payments p
WHERE p.paused_by = @tag::text AND p.status = 'SCHEDULED'
ORDER BY p.scheduled_execution_time, p.list_seq;

-- name: ClearPaused :exec
-- A resumed pause's payments: no longer marked, or RESUMED among
-- @in_flight (their executions held their items at the resume).
UPDATE payments
SET paused_by = CASE WHEN payment_id = ANY(@in_flight::text[]) THEN 'RESUMED' END
WHERE paused_by = @tag::text;

-- name: ResumedPayments :many
-- Payments marked RESUMED (their executions held their items at their
-- resumes), for the sweep that settles them, with their statuses.
SELECT p.payment_id, p.tenant_id, coalesce(p.rail, '')::text AS rail, p.execution_date, p.requested_execution_time,
       coalesce(p.scheduled_execution_time, p.requested_execution_time)::timestamptz AS scheduled_at,
       coalesce(p.context->>'pacingConfig', '')::text AS pacing_config,
       coalesce(p.context->>'tenantPacingConfig', '')::text AS tenant_pacing_config,
       p.priority, p.created_at, p.status
FROM payments p
WHERE p.paused_by = 'RESUMED'
ORDER BY p.scheduled_execution_time, p.list_seq
LIMIT @max_rows
FOR UPDATE;

-- name: ClearResumed :exec
UPDATE payments SET paused_by = NULL WHERE payment_id = ANY(@payment_ids::text[]) AND paused_by = 'RESUMED';

-- name: SetPriority :many
-- Waiting payments' priority changed (SCHEDULED, or HELD: it counts when
-- released), of a tenant or any. The keys changed, with their rails.
UPDATE payments p SET priority = @priority::text, updated_at = now()
WHERE p.payment_id = ANY(@payment_ids::text[]) AND p.status IN ('SCHEDULED', 'HELD') AND p.priority <> @priority::text
  AND (@tenant_id::text = '' OR p.tenant_id = @tenant_id::text)
RETURNING p.payment_id, coalesce(p.rail, '')::text AS rail;

-- name: SetIntakePriority :execrows
-- The priority of payments still waiting for Phase A in these intake
-- rows: those among @payment_ids (none: all), of a tenant or any.
UPDATE payment_intake i
SET priorities = ARRAY(
    SELECT CASE WHEN (@tenant_id::text = '' OR u.tenant_id = @tenant_id::text)
                 AND (coalesce(cardinality(@payment_ids::text[]), 0) = 0 OR i.payment_ids[u.n] = ANY(@payment_ids::text[]))
                THEN @priority::text ELSE coalesce(i.priorities[u.n], '') END
    FROM unnest(i.tenant_ids) WITH ORDINALITY AS u (tenant_id, n) ORDER BY u.n)
WHERE i.init_workflow_id = ANY(@init_workflow_ids::text[]);

-- name: SetPausedBy :exec
-- Payments Phase A stored while their scope was paused: marked with it.
-- By key, the status checked on the locked rows (as in BeginExecutions).
WITH locked AS (
    SELECT l.payment_id, l.status FROM payments l
    WHERE l.payment_id = ANY(@payment_ids::text[])
    ORDER BY l.payment_id
    FOR UPDATE
)
UPDATE payments p SET paused_by = x.tag
FROM locked, (SELECT unnest(@payment_ids::text[]) AS payment_id, unnest(@tags::text[]) AS tag) x
WHERE p.payment_id = locked.payment_id AND locked.status = 'SCHEDULED' AND p.payment_id = x.payment_id
  AND p.payment_id = ANY(@payment_ids::text[]);

-- name: LockPauses :exec
-- Serialises a pause's and a resume's transactions with Phase A's stores
-- (LockPausesShared): a store sees every pause committed before it, and a
-- pause every payment stored before it.
SELECT pg_advisory_xact_lock(hashtext('payment_pause'));

-- name: LockPausesShared :exec
SELECT pg_advisory_xact_lock_shared(hashtext('payment_pause'));

-- name: LowWaitingOnRails :one
-- Whether LOW payments wait on any of these rails (payments_low_waiting_idx).
SELECT EXISTS (SELECT 1 FROM payments WHERE status = 'SCHEDULED' AND priority = 'LOW' AND rail = ANY(@rails::text[]));

-- name: AskReorder :exec
-- Rails whose waiting payments are to be put in order again (a priority
-- came in ahead of some): one row each, however often asked.
INSERT INTO payment_reorder (rail) SELECT DISTINCT unnest(@rails::text[])
ON CONFLICT (rail) DO UPDATE SET last_asked = now();

-- name: TakeReorders :many
-- The rails asked for that are due: not asked for again for a quiet
-- interval, or first asked for the most interval ago; each taken by one
-- caller.
DELETE FROM payment_reorder
WHERE last_asked < now() - @quiet::interval OR first_asked < now() - @most::interval
RETURNING rail;

-- name: DeleteNotifications :execrows
-- Retention: up to @max_rows notification records written before
-- @before, oldest first (payment_notifications_created_idx), of payments
-- settled for good (DELIVERED, RETURNED, REJECTED, FAILED, CANCELLED): a
-- payment still on its way may be told again, and its records keep that
-- once. Deleted by their rows' addresses (a TID scan).
DELETE FROM payment_notifications d
WHERE d.ctid = ANY(ARRAY(
    SELECT n.ctid FROM payment_notifications n
    WHERE n.created_at < @before::timestamptz
      AND EXISTS (SELECT 1 FROM payments p WHERE p.payment_id = n.payment_id
                  AND p.status IN ('DELIVERED', 'RETURNED', 'REJECTED', 'FAILED', 'CANCELLED'))
    ORDER BY n.created_at
    LIMIT @max_rows::int));

-- name: BeginExecutions :many
-- BeginExecution for a group's payments, each at its own time: the rows
-- locked first, in key order (a bulk cancel locks them in that order
-- too), then moved. The keys begun; a payment not SCHEDULED is not.
-- The status is read from the locked rows, not asked of payments: a
-- condition status = 'SCHEDULED' on payments lets the planner read the
-- waiting payments' partial indexes whole, which statistics taken before
-- the day's payments came hold for nearly empty
-- (TestGroupPlansWithStaleStatistics); by key, a group reads its own.
WITH locked AS (
    SELECT p.payment_id, p.status FROM payments p
    WHERE p.payment_id = ANY(@payment_ids::text[])
    ORDER BY p.payment_id
    FOR UPDATE
)
UPDATE payments p
SET status = 'ACCEPTED', status_reason = NULL, accepted_at = (@accepted_ats::timestamptz[])[n], updated_at = now()
FROM locked, generate_subscripts(@payment_ids::text[], 1) AS n
WHERE p.payment_id = locked.payment_id AND locked.status = 'SCHEDULED' AND p.payment_id = (@payment_ids::text[])[n]
  AND p.payment_id = ANY(@payment_ids::text[])
RETURNING p.payment_id;

-- name: InsertBookings :execrows
-- InsertBooking for a group's payments, in one statement.
INSERT INTO payment_booking (payment_id, process_id, debit_account_id, debit_transaction_id, fx_contract_id,
                             debit_currency, debit_amount, credit_currency, credit_amount, fee_currency, fee_amount,
                             value_date, beneficiary_name, beneficiary_iban, beneficiary_bic, outbox_id)
SELECT (@payment_ids::text[])[n], (@process_ids::uuid[])[n], (@debit_account_ids::text[])[n],
       (@debit_transaction_ids::uuid[])[n], NULL, (@debit_currencies::text[])[n], (@debit_amounts::numeric[])[n],
       (@credit_currencies::text[])[n], (@credit_amounts::numeric[])[n], (@debit_currencies::text[])[n],
       (@fee_amounts::numeric[])[n], (@value_dates::date[])[n], (@beneficiary_names::text[])[n],
       nullif((@beneficiary_ibans::text[])[n], ''), nullif((@beneficiary_bics::text[])[n], ''), (@outbox_ids::uuid[])[n]
FROM generate_subscripts(@payment_ids::text[], 1) AS n
ORDER BY n
ON CONFLICT (payment_id) DO NOTHING;

-- name: FinishExecutions :many
-- FinishExecution for a group's payments, under one execution: the keys
-- finished; one in any other status is left alone and not returned.
WITH locked AS (
    SELECT p.payment_id FROM payments p
    WHERE p.payment_id = ANY(@payment_ids::text[]) AND p.status IN ('ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED')
    ORDER BY p.payment_id
    FOR UPDATE
), moved AS (
    UPDATE payments p
    SET execution_ref = @execution_ref, updated_at = now(),
        status = CASE WHEN p.status = 'ACCEPTED' THEN 'PROCESSING' ELSE p.status END,
        status_reason = CASE WHEN p.status = 'ACCEPTED' THEN NULL ELSE p.status_reason END
    FROM locked
    WHERE p.payment_id = locked.payment_id AND p.payment_id = ANY(@payment_ids::text[])
    RETURNING p.payment_id, p.status
), notified AS (
    INSERT INTO payment_notifications (payment_id, party, status)
    SELECT m.payment_id, party.party, 'PROCESSING'
    FROM moved m, unnest('{DEBTOR,CREDITOR}'::text[]) AS party (party)
    ON CONFLICT DO NOTHING
)
SELECT moved.payment_id FROM moved;

-- name: LatestFileFingerprint :one
-- The latest file of one of @tenant_ids with the fingerprint, received
-- at or after @since (payment_file_fingerprints_lookup_idx).
SELECT tenant_id, batch_id, received_at FROM payment_file_fingerprints
WHERE fingerprint = @fingerprint::text AND tenant_id = ANY(@tenant_ids::text[]) AND received_at >= @since::timestamptz
ORDER BY received_at DESC
LIMIT 1;

-- name: InsertFileFingerprints :exec
-- A file accepted: its fingerprint, once for each of its tenants.
INSERT INTO payment_file_fingerprints (tenant_id, fingerprint, batch_id, received_at, expires_at)
SELECT unnest(@tenant_ids::text[]), @fingerprint::text, @batch_id::text, @received_at::timestamptz, @expires_at::timestamptz;

-- name: DeleteFileFingerprints :execrows
-- Retention: up to @max_rows fingerprints whose window closed before
-- @before, oldest first (payment_file_fingerprints_expires_idx), by
-- their rows' addresses (a TID scan).
DELETE FROM payment_file_fingerprints d
WHERE d.ctid = ANY(ARRAY(
    SELECT f.ctid FROM payment_file_fingerprints f
    WHERE f.expires_at < @before::timestamptz
    ORDER BY f.expires_at
    LIMIT @max_rows::int));

-- name: LockFile :exec
-- A session's lock on a file's fingerprint, held from its look-up to its
-- record: two files with one fingerprint are taken one after the other.
-- Keys of two ints: apart from every one-key advisory lock.
SELECT pg_advisory_lock(1718185061, hashtext(@fingerprint::text));

-- name: UnlockFile :exec
SELECT pg_advisory_unlock(1718185061, hashtext(@fingerprint::text));

-- name: LockQueueMark :exec
-- Serialises the feeder (this lock) with the transactions that write
-- payments' slots and queue items below its mark (LockQueueMarkShared:
-- Phase A's store, a lever moving payments without queue items): the
-- feeder sees every payment stored before it, and they the mark and
-- items it left.
SELECT pg_advisory_xact_lock(hashtext('payment_queue_mark'));

-- name: LockQueueMarkShared :exec
SELECT pg_advisory_xact_lock_shared(hashtext('payment_queue_mark'));

-- name: QueueMark :one
-- The queue's mark (payment_queue_mark): read after its lock, in a
-- statement of its own, so that it is the one the last feeder left.
SELECT mark FROM payment_queue_mark;

-- name: SetQueueMark :exec
UPDATE payment_queue_mark SET mark = @mark::timestamptz;

-- name: WaitingBetween :many
-- The SCHEDULED payments, not paused, with slots in [from, to): what the
-- feeder enqueues. A rail at a time on payments_rail_waiting_idx (the
-- rails found by a skip scan of it), and those without a rail.
WITH RECURSIVE rails AS (
    (SELECT w.rail FROM payments w WHERE w.status = 'SCHEDULED' AND w.rail IS NOT NULL ORDER BY w.rail LIMIT 1)
    UNION ALL
    SELECT (SELECT w.rail FROM payments w WHERE w.status = 'SCHEDULED' AND w.rail > r.rail ORDER BY w.rail LIMIT 1)
    FROM rails r WHERE r.rail IS NOT NULL
)
SELECT w.payment_id, w.tenant_id, w.slot, w.paced
FROM rails r, LATERAL (
    SELECT p.payment_id, p.tenant_id, p.scheduled_execution_time::timestamptz AS slot,
           (coalesce(p.context->>'pacingConfig', '') <> '')::boolean AS paced
    FROM payments p
    WHERE p.status = 'SCHEDULED' AND p.rail = r.rail AND p.paused_by IS NULL
      AND p.scheduled_execution_time >= @from_time::timestamptz AND p.scheduled_execution_time < @to_time::timestamptz
    OFFSET 0 -- kept a subquery: a rail's range of the index each, not every rail's filtered
) w
UNION ALL
SELECT p.payment_id, p.tenant_id, p.scheduled_execution_time::timestamptz, (coalesce(p.context->>'pacingConfig', '') <> '')::boolean
FROM payments p
WHERE p.status = 'SCHEDULED' AND p.rail IS NULL AND p.paused_by IS NULL
  AND p.scheduled_execution_time >= @from_time::timestamptz AND p.scheduled_execution_time < @to_time::timestamptz;

-- name: LockWaitingRows :many
-- Of these payments, those SCHEDULED and not paused, locked to the
-- caller's commit, skipping those another transaction holds: a lever's
-- claim on payments that have no queue item to lock.
SELECT p.payment_id FROM payments p
WHERE p.payment_id = ANY(@payment_ids::text[]) AND p.status = 'SCHEDULED' AND p.paused_by IS NULL
ORDER BY p.payment_id
FOR UPDATE SKIP LOCKED;
