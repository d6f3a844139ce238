-- +goose Up
-- A cap on an item type's items in flight (CLAIMED or DISPATCHED: exec
-- workflows started and not yet reconciled). The dispatcher claims only
-- the room left under it, so a workflow engine slower than the dispatch
-- rate is not flooded with started-but-waiting workflows; the claim rate
-- follows the completion rate instead. 0: no cap.
ALTER TABLE exec_rate_config
    ADD COLUMN max_in_flight integer NOT NULL DEFAULT 0
        CHECK (max_in_flight BETWEEN 0 AND 1000000);

UPDATE exec_rate_config SET max_in_flight = 2000 WHERE item_type = 'PAYMENT';

-- +goose Down
ALTER TABLE exec_rate_config DROP COLUMN max_in_flight;
