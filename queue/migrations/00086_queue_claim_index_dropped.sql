-- The claim has read exec_queue_tenant_ready_idx since it became fair
-- (one descent per tenant, then each tenant's oldest first); its first
-- index, on (item_type, scheduled_exec_time) over READY rows, was left
-- serving only the oldest READY row for the queue's depth, and cost every
-- enqueued item an entry: a seventh of a bulk file's queue items' COPY.
-- The oldest READY row is now each tenant's first in the fair claim's
-- index (OldestReady).

-- +goose Up
DROP INDEX exec_queue_claim_idx;

-- +goose Down
CREATE INDEX exec_queue_claim_idx
    ON exec_queue (item_type, scheduled_exec_time)
    WHERE queue_status = 'READY';
