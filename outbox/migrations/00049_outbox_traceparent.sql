-- An instruction's W3C trace context (its traceparent): the span of the
-- caller that enqueued it, so the relayer's send span is that span's
-- child although the relayer picks the instruction up later, in another
-- process perhaps. Opaque to the outbox; NULL when there was none
-- (tracing off). It follows the instruction: the claim copies it to the
-- DISPATCHING attempt (whence the reaper's requeue takes it), a requeue
-- and a dead letter keep it.

-- +goose Up
ALTER TABLE payment_outbox_pending ADD COLUMN traceparent text;
ALTER TABLE payment_outbox_attempts ADD COLUMN traceparent text;
ALTER TABLE payment_outbox_dead_letters ADD COLUMN traceparent text;

-- +goose Down
ALTER TABLE payment_outbox_dead_letters DROP COLUMN traceparent;
ALTER TABLE payment_outbox_attempts DROP COLUMN traceparent;
ALTER TABLE payment_outbox_pending DROP COLUMN traceparent;
