-- name: InsertPayment :execrows
-- Insert-first; a replay of the same payment inserts nothing (its key, or
-- its tenant's id, is taken).
INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time,
                      scheduled_execution_time, status, status_reason, request)
VALUES (@payment_id, @external_id, @tenant_id, @debtor_account, sqlc.narg('amount'), sqlc.narg('currency'), @creditor_name,
        sqlc.narg('creditor_iban'), sqlc.narg('creditor_bic'), sqlc.narg('remittance_info'), @requested_execution_time,
        sqlc.narg('scheduled_execution_time'), @status, sqlc.narg('status_reason'), @request)
ON CONFLICT DO NOTHING;

-- name: ReceivePayments :many
-- Payments taken in, stored RECEIVED, from arrays of their columns (the
-- i-th of each is the i-th payment's; "" for none); the keys inserted (the others
-- exist: a replay, or another payment under the tenant's id). The columns
-- hold the whole request, so request stays NULL (requestOf).
INSERT INTO payments (payment_id, external_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time, status)
SELECT unnest(@payment_ids::text[]), unnest(@external_ids::text[]), unnest(@tenant_ids::text[]), unnest(@debtor_accounts::text[]),
       unnest(@amounts::numeric[]), unnest(@currencies::text[]), unnest(@creditor_names::text[]),
       nullif(unnest(@creditor_ibans::text[]), ''), nullif(unnest(@creditor_bics::text[]), ''),
       nullif(unnest(@remittance_infos::text[]), ''),
       unnest(@requested_execution_times::timestamptz[]), 'RECEIVED'
ON CONFLICT DO NOTHING
RETURNING payment_id;

-- name: AddIntake :exec
-- The Phase A workflows that are to take on payments just received, each
-- with their keys, from a JSON array of {init_workflow_id, payment_ids}.
INSERT INTO payment_intake (init_workflow_id, payment_ids)
SELECT r.init_workflow_id, ARRAY(SELECT jsonb_array_elements_text(r.payment_ids))
FROM jsonb_to_recordset(@workflows::jsonb) AS r(init_workflow_id text, payment_ids jsonb)
ON CONFLICT (init_workflow_id) DO UPDATE SET payment_ids = payment_intake.payment_ids || EXCLUDED.payment_ids;

-- name: FindPayments :many
-- The payments stored under these tenants' ids (pairs: tenant_ids[i],
-- external_ids[i]).
SELECT sqlc.embed(p)
FROM payments p
WHERE (p.external_id, p.tenant_id) IN (SELECT unnest(@external_ids::text[]), unnest(@tenant_ids::text[]));

-- name: PaymentKeysByExternalID :many
-- Every tenant's payment under an id, for an operator who names no tenant.
SELECT payment_id FROM payments WHERE external_id = @external_id ORDER BY tenant_id LIMIT 10;

-- name: PaymentKey :one
SELECT payment_id FROM payments WHERE external_id = @external_id AND tenant_id = @tenant_id;

-- name: ReceivedPayments :many
-- Those of the keys that Phase A has yet to take on.
SELECT sqlc.embed(payments) FROM payments
WHERE payment_id = ANY(@payment_ids::text[]) AND status = 'RECEIVED'
ORDER BY payment_id;

-- name: ConcludePhaseA :many
-- Phase A's verdicts, from a JSON array of rows: each payment from
-- RECEIVED to SCHEDULED (with its slot and context) or REJECTED (with its
-- reason), in one guarded statement; the keys moved.
UPDATE payments p
SET status = r.status, status_reason = r.status_reason, scheduled_execution_time = r.scheduled_execution_time,
    context = r.context, updated_at = now()
FROM jsonb_to_recordset(@verdicts::jsonb) AS r(payment_id text, status text, status_reason text,
                                              scheduled_execution_time timestamptz, context jsonb)
WHERE p.payment_id = r.payment_id AND p.status = 'RECEIVED'
RETURNING p.payment_id;

-- name: IntakeKeys :many
-- The payments a Phase A workflow is to take on; none once it took them.
SELECT unnest(payment_ids)::text FROM payment_intake WHERE init_workflow_id = @init_workflow_id;

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

-- name: GetPayment :one
SELECT sqlc.embed(payments) FROM payments WHERE payment_id = @payment_id;

-- name: TransitionPayment :one
-- A guarded status change: only from the expected status. ACCEPTED records
-- when execution began: accepted_at, else now.
UPDATE payments
SET status = @to_status, status_reason = sqlc.narg('status_reason'), updated_at = now(),
    accepted_at = CASE WHEN @to_status::text = 'ACCEPTED' THEN coalesce(sqlc.narg('accepted_at')::timestamptz, clock_timestamp()) ELSE accepted_at END
WHERE payment_id = @payment_id AND status = @from_status
RETURNING status;

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
-- than the notification step).
UPDATE payments SET status = 'DELIVERED', status_reason = NULL, updated_at = now()
WHERE payment_id = ANY(@payment_ids::text[]) AND status IN ('ACCEPTED', 'PROCESSING')
RETURNING payment_id;

-- name: ReturnPayment :execrows
UPDATE payments SET status = 'RETURNED', status_reason = @status_reason, updated_at = now()
WHERE payment_id = @payment_id AND status IN ('ACCEPTED', 'PROCESSING');

-- name: SetBookingReturn :execrows
UPDATE payment_booking SET return_transaction_id = @return_transaction_id, return_code = @return_code
WHERE payment_id = @payment_id AND return_transaction_id IS NULL;

-- name: InsertBatch :execrows
INSERT INTO payment_batches (batch_id, tenants, payments, chunks)
VALUES (@batch_id, @tenants::text[], @payments, @chunks)
ON CONFLICT (batch_id) DO NOTHING;

-- name: SetBatchRejections :exec
UPDATE payment_batches SET rejected = @rejected, rejections = @rejections WHERE batch_id = @batch_id;

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
       count(*) FILTER (WHERE p.status = 'RETURNED')::int AS returned
FROM payment_batch_items i
LEFT JOIN payments p ON p.payment_id = i.payment_id
WHERE i.batch_id = @batch_id;

-- name: PaymentOutcomes :many
-- Where Phase A left these payments (for a run that found them taken on).
SELECT payment_id, external_id, status, status_reason, scheduled_execution_time
FROM payments WHERE payment_id = ANY(@payment_ids::text[]);
