-- The process package's functions: their current source, applied after the
-- migrations and again whenever this file changes (see
-- pacing/migrations/functions.sql for the rule).

-- process_log_append_only keeps a process's log append-only: no UPDATE,
-- no TRUNCATE, and a DELETE only from the retention's transaction
-- (paydispatch.retention = 'on', set by process.DeleteEnded).
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
