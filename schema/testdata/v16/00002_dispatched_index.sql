-- Reconciliation of DISPATCHED items with the workflow engine reads the
-- oldest dispatched first; partial, so completed rows leave it.

-- +goose Up
CREATE INDEX exec_queue_dispatched_idx
    ON exec_queue (item_type, dispatched_at)
    WHERE queue_status = 'DISPATCHED';

-- +goose Down
DROP INDEX exec_queue_dispatched_idx;
