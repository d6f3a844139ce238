-- Rails as configuration (package routing): each payment leaves by one
-- rail, chosen at intake (the one it names, or the first routing rule
-- that matches it), and executes on an execution date: its requested
-- date, moved to the rail's next business day, and on by its tenant's
-- cut-off rule when it cannot make that day's cut-off (ROLL). A payment
-- held by that rule (HOLD) waits HELD for an operator.
--
--   rail            the rail's name (NULL: stored before rails were
--                   configuration: the DEFAULT rail's behaviour)
--   execution_date  the business day it executes on, in the rail's zone
--   payment_intake.rails  each payment's rail, chosen at intake ('' for
--                   one staged before: Phase A routes it)
--
-- A rail's waiting payments (SCHEDULED) and its held ones are counted and
-- listed by rail (GET /admin/rails/{name}, the release of held payments):
-- each has a partial index, so neither touches the payments that left.

-- +goose Up
ALTER TABLE payments ADD COLUMN rail text, ADD COLUMN execution_date date;
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED',
                      'CANCELLED', 'HELD'));
ALTER TABLE payment_intake ADD COLUMN rails text[] NOT NULL DEFAULT '{}';
CREATE INDEX payments_rail_waiting_idx ON payments (rail, scheduled_execution_time) WHERE status = 'SCHEDULED';
CREATE INDEX payments_held_idx ON payments (rail, tenant_id, requested_execution_time) WHERE status = 'HELD';

-- +goose Down
DROP INDEX payments_held_idx;
DROP INDEX payments_rail_waiting_idx;
ALTER TABLE payment_intake DROP COLUMN rails;
UPDATE payments SET status = 'CANCELLED', status_reason = 'HELD: ' || coalesce(status_reason, '') WHERE status = 'HELD';
ALTER TABLE payments DROP CONSTRAINT payments_status_check;
ALTER TABLE payments ADD CONSTRAINT payments_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'ACCEPTED', 'PROCESSING', 'DELIVERED', 'RETURNED', 'REJECTED', 'FAILED',
                      'CANCELLED'));
ALTER TABLE payments DROP COLUMN execution_date, DROP COLUMN rail;
