-- Every step of every process updated process_instance twice or more, and
-- each update changed updated_at and mostly status, both in the operator
-- listing's index (status, updated_at, process_id). So no update was HOT:
-- each wrote a new entry in all three of the table's indexes, and the
-- cost of an update grew with the number of processes (0.20 ms at 10,000
-- payments, 0.31 at 100,000). Nothing but that listing read the index.
--
-- The listing now reads process_attention: a row for each process in a
-- status an operator looks for (FAILED, COMPENSATING, COMPENSATED,
-- PAUSED, COMPENSATION_FAILED), written by the statement that moves the
-- process in or out of it. A process that goes NEW → RUNNING → SUCCEEDED,
-- nearly all of them, never touches it, and its updates change no
-- indexed column: they can be HOT, given room on the page.

-- +goose Up
DROP INDEX process_instance_status_idx;
ALTER TABLE process_instance SET (fillfactor = 70);

CREATE TABLE process_attention (
    process_id  uuid        PRIMARY KEY,
    status      text        NOT NULL
        CHECK (status IN ('FAILED', 'COMPENSATING', 'COMPENSATED', 'PAUSED', 'COMPENSATION_FAILED')),
    updated_at  timestamptz NOT NULL
);

CREATE INDEX process_attention_status_idx ON process_attention (status, updated_at, process_id);

INSERT INTO process_attention (process_id, status, updated_at)
SELECT process_id, status, updated_at FROM process_instance
WHERE status NOT IN ('NEW', 'RUNNING', 'SUCCEEDED');

-- +goose Down
DROP TABLE process_attention;
ALTER TABLE process_instance RESET (fillfactor);
CREATE INDEX process_instance_status_idx ON process_instance (status, updated_at, process_id);
