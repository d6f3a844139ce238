-- AWAITING_APPROVAL: a payment a rule of its tenant wants approved
-- before it takes a slot (a control of Phase A). Like HELD it waits with
-- its context and no queue item; an index finds a tenant's, oldest
-- request first, for the approval list and its bulk approval.

-- +goose Up
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED',
                      'CANCELLED', 'HELD', 'AWAITING_APPROVAL'));
CREATE INDEX payments_awaiting_approval_idx ON payments (tenant_id, requested_execution_time) WHERE status = 'AWAITING_APPROVAL';

-- +goose Down
DROP INDEX payments_awaiting_approval_idx;
UPDATE payments SET status = 'CANCELLED', status_reason = 'AWAITING_APPROVAL: ' || coalesce(status_reason, '') WHERE status = 'AWAITING_APPROVAL';
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED',
                      'CANCELLED', 'HELD'));
