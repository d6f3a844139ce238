-- Dead letters are listed and requeued by an operator (package deadletter):
-- oldest first, from when they died.

-- +goose Up
CREATE INDEX payment_outbox_dead_letters_dead_at_idx
    ON payment_outbox_dead_letters (dead_at, outbox_id);

-- +goose Down
DROP INDEX payment_outbox_dead_letters_dead_at_idx;
