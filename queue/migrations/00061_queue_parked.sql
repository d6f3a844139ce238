-- PARKED: an item its domain has set aside (a payment held at its rail's
-- cut-off): never claimed, its retries kept, until it is resumed (READY
-- at a new time) or completed (cancelled). Resumed items are found by id,
-- so no index: a parked row is read by its key only.

-- +goose Up
ALTER TABLE exec_queue DROP CONSTRAINT exec_queue_queue_status_check;
ALTER TABLE exec_queue ADD CONSTRAINT exec_queue_queue_status_check
    CHECK (queue_status IN ('READY', 'CLAIMED', 'DISPATCHED', 'COMPLETED', 'FAILED', 'DEAD_LETTER', 'PARKED'));

-- +goose Down
UPDATE exec_queue SET queue_status = 'READY' WHERE queue_status = 'PARKED';
ALTER TABLE exec_queue DROP CONSTRAINT exec_queue_queue_status_check;
ALTER TABLE exec_queue ADD CONSTRAINT exec_queue_queue_status_check
    CHECK (queue_status IN ('READY', 'CLAIMED', 'DISPATCHED', 'COMPLETED', 'FAILED', 'DEAD_LETTER'));
