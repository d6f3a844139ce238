-- Dead letters are listed and requeued by an operator (package deadletter):
-- oldest first, from when they died. A dead-lettered row's updated_at is
-- its death (nothing updates a DEAD_LETTER row but its requeue). Partial:
-- only dead rows are in it, so the hot transitions never touch it.

-- +goose Up
CREATE INDEX exec_queue_dead_idx
    ON exec_queue (updated_at, item_type, item_id)
    WHERE queue_status = 'DEAD_LETTER';

-- +goose Down
DROP INDEX exec_queue_dead_idx;
