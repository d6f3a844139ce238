-- name: InsertPayment :execrows
-- Insert-first; a replay of the same payment id inserts nothing.
INSERT INTO payments (payment_id, tenant_id, debtor_account, amount, currency, creditor_name,
                      creditor_iban, creditor_bic, remittance_info, requested_execution_time,
                      scheduled_execution_time, status, status_reason, request)
VALUES (@payment_id, @tenant_id, @debtor_account, sqlc.narg('amount'), sqlc.narg('currency'), @creditor_name,
        sqlc.narg('creditor_iban'), sqlc.narg('creditor_bic'), sqlc.narg('remittance_info'), @requested_execution_time,
        sqlc.narg('scheduled_execution_time'), @status, sqlc.narg('status_reason'), @request)
ON CONFLICT (payment_id) DO NOTHING;

-- name: GetPayment :one
SELECT payment_id, tenant_id, debtor_account, amount, currency, creditor_name, creditor_iban,
       creditor_bic, remittance_info, requested_execution_time, scheduled_execution_time,
       status, status_reason, request, execution_ref, created_at, updated_at
FROM payments
WHERE payment_id = @payment_id;

-- name: TransitionPayment :one
-- A guarded status change: only from the expected status.
UPDATE payments
SET status = @to_status, status_reason = sqlc.narg('status_reason'), updated_at = now(),
    accepted_at = CASE WHEN @to_status::text = 'ACCEPTED' THEN clock_timestamp() ELSE accepted_at END
WHERE payment_id = @payment_id AND status = @from_status
RETURNING status;

-- name: SetExecutionRef :execrows
UPDATE payments SET execution_ref = @execution_ref, updated_at = now()
WHERE payment_id = @payment_id AND execution_ref IS DISTINCT FROM @execution_ref;

-- name: InsertNotification :execrows
INSERT INTO payment_notifications (payment_id, party, status)
VALUES (@payment_id, @party, @status)
ON CONFLICT DO NOTHING;
