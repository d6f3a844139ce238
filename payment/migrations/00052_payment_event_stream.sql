-- The payment event stream's switch: with its row, every status change
-- also enqueues its event in the outbox (outbox_enqueue_stream), for a
-- relayer to publish to a Kafka topic (package kafka). Without it, a
-- status change writes nothing more. The triggers' current source is in
-- functions.sql.

-- +goose Up
CREATE TABLE payment_event_stream (
    only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    -- rail_type is the outbox rail type the events go out under: the
    -- relayer's sender for it publishes them.
    rail_type  text        NOT NULL,
    -- lanes is how many outbox participants ('payment-events:<n>') the
    -- events are spread over, by payment: each is sent in order, one at a
    -- time. Changed only with the stream drained.
    lanes      integer     NOT NULL CHECK (lanes BETWEEN 1 AND 1024),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE payment_event_stream;
