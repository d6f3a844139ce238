-- Retention finds the items COMPLETED before its cutoff, oldest first.
-- Partial on COMPLETED: the claim's and the dispatch's transitions never
-- maintain it; each settlement adds one entry, which the deletion takes
-- away.

-- +goose Up
CREATE INDEX exec_queue_completed_idx
    ON exec_queue (completed_at)
    WHERE queue_status = 'COMPLETED';

-- +goose Down
DROP INDEX exec_queue_completed_idx;
