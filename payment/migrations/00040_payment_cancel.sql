-- A payment can be cancelled until its execution begins. Its execution
-- begins in SubmitPayment's first step, in the transaction of the debit:
-- SCHEDULED → ACCEPTED, one guarded statement; a cancel is the other
-- guarded statement from SCHEDULED (or the payment stored CANCELLED
-- while it waits for Phase A), so one of the two wins.

-- +goose Up
-- A payment whose SubmitPayment process started before the execution
-- began in its first step may be debited while still SCHEDULED (it was
-- accepted at booking): it has begun, and is no longer cancellable.
UPDATE payments p SET status = 'ACCEPTED', accepted_at = coalesce(p.accepted_at, pi.created_at), updated_at = now()
FROM process_instance pi
WHERE pi.process_type = 'SubmitPayment' AND pi.business_key = p.payment_id AND p.status = 'SCHEDULED';

ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED',
                      'CANCELLED'));

-- +goose Down
UPDATE payments SET status = 'FAILED', status_reason = 'CANCELLED: ' || coalesce(status_reason, '')
WHERE status = 'CANCELLED';
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED'));
