-- A stream's numbers (outbox_enqueue_stream): one sequence for every
-- stream participant, so enqueuers never wait on a participant's row.

-- +goose Up
CREATE SEQUENCE outbox_stream_seq;

-- +goose Down
DROP SEQUENCE outbox_stream_seq;
