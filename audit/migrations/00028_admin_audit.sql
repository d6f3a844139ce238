-- The admin audit log: every change an operator made (dispatch and
-- rate-limit settings, FX rates, tenant caps, process actions, tokens),
-- who made it and when. Append-only: a trigger refuses UPDATE, DELETE and
-- TRUNCATE.
-- +goose Up
CREATE TABLE admin_audit (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    actor    text NOT NULL,
    action   text NOT NULL,
    target   text NOT NULL DEFAULT '',
    detail   jsonb NOT NULL DEFAULT '{}'
);

-- +goose StatementBegin
CREATE FUNCTION admin_audit_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'admin_audit is append-only';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER admin_audit_no_update BEFORE UPDATE OR DELETE ON admin_audit
    FOR EACH ROW EXECUTE FUNCTION admin_audit_immutable();
CREATE TRIGGER admin_audit_no_truncate BEFORE TRUNCATE ON admin_audit
    FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_immutable();

-- +goose Down
DROP TABLE admin_audit;
DROP FUNCTION admin_audit_immutable();
