-- Retention (outbox.DeleteDone): an instruction's key and its archived
-- attempts go together once the instruction is done (nothing pending, in
-- flight or dead) and old. The keys are found oldest first by when they
-- were enqueued; the attempts by ix_attempts_by_outbox.
--
-- The archive stays append-only for everything else: no UPDATE, no
-- TRUNCATE, and a DELETE only from a transaction that says it is the
-- retention's (paydispatch.retention = 'on', set by DeleteDone).

-- +goose Up
CREATE INDEX payment_outbox_keys_created_idx ON payment_outbox_keys (created_at);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payment_outbox_attempts_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('paydispatch.retention', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'payment_outbox_attempts is append-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payment_outbox_attempts_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'payment_outbox_attempts is append-only'
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
DROP INDEX payment_outbox_keys_created_idx;
