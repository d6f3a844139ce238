-- Retention (process.DeleteEnded): a process that ended for good
-- (SUCCEEDED or COMPENSATED) goes, old enough, with its log, its inbox
-- and its attention row, in one statement.
--
-- Ended processes are found by their final log entry, oldest first: the
-- log is only ever inserted into, so a partial index on its final events
-- costs one entry per process and no update of process_instance loses
-- its HOT path (an index on the instance's status or time would). The
-- inbox is found by process. The log stays append-only for everything
-- else: a DELETE only from a transaction that says it is the retention's
-- (paydispatch.retention = 'on', set by DeleteEnded).

-- +goose Up
CREATE INDEX process_log_ended_idx ON process_log (at)
    WHERE event IN ('ProcessCompleted', 'ProcessCompensated');

CREATE INDEX process_inbox_process_idx ON process_inbox (process_id);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION process_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('paydispatch.retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'process_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION process_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'process_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
DROP INDEX process_inbox_process_idx;
DROP INDEX process_log_ended_idx;
