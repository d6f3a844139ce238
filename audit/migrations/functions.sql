-- The audit package's functions: their current source, applied after the
-- migrations and again whenever this file changes (see
-- pacing/migrations/functions.sql for the rule).

-- admin_audit_immutable refuses every UPDATE, DELETE and TRUNCATE of the
-- admin audit log: an operator's changes are kept for good.
CREATE OR REPLACE FUNCTION admin_audit_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'admin_audit is append-only';
END;
$$;
