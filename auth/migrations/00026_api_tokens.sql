-- API tokens: who may call the HTTP API, with which scopes, for which
-- tenant. Only the SHA-256 of a token is kept: a token is 256 random bits
-- (or an operator's bootstrap secret), so a fast hash is enough, and the
-- lookup by hash is the authentication.
-- +goose Up
CREATE TABLE api_tokens (
    token_id    text PRIMARY KEY,
    name        text NOT NULL,
    secret_hash bytea NOT NULL,
    scopes      text[] NOT NULL,
    tenant_id   text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    revoked_at  timestamptz,
    CONSTRAINT api_tokens_secret_hash_key UNIQUE (secret_hash),
    CONSTRAINT api_tokens_scopes_known CHECK (
        cardinality(scopes) > 0
        AND scopes <@ ARRAY['payments:write', 'payments:read', 'accounts:write', 'admin']::text[]),
    -- admin endpoints are global: a tenant's token cannot have them.
    CONSTRAINT api_tokens_admin_unbound CHECK (tenant_id IS NULL OR NOT ('admin' = ANY (scopes)))
);

-- +goose Down
DROP TABLE api_tokens;
