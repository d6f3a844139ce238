-- The queue package's functions: their current source, applied after the
-- migrations and again whenever this file changes (see
-- pacing/migrations/functions.sql for the rule).

-- dispatch_audit_log_immutable refuses every UPDATE of the queue's audit
-- log: its history is rewritten by nobody (retention may still DELETE
-- old rows).
CREATE OR REPLACE FUNCTION dispatch_audit_log_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'dispatch_audit_log is insert-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
