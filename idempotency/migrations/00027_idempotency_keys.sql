-- Idempotency keys of the HTTP API: the first request with a key is
-- recorded in flight, then with its response; a retry with the same key
-- and body gets that response again. Kept until expires_at; a cleanup
-- deletes the expired rows.
-- +goose Up
CREATE TABLE idempotency_keys (
    principal     text NOT NULL,
    key           text NOT NULL,
    method        text NOT NULL,
    path          text NOT NULL,
    request_hash  bytea,
    status        integer,
    content_type  text,
    location      text,
    response_body bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (principal, key)
);

CREATE INDEX ix_idempotency_keys_expiry ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
