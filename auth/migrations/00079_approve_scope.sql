-- payments:approve: a principal approves or denies payments awaiting
-- approval (never its own).

-- +goose Up
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes_known;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes_known CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['payments:write', 'payments:read', 'payments:approve', 'accounts:write', 'webhooks:write', 'admin']::text[]);

-- +goose Down
DELETE FROM api_tokens WHERE 'payments:approve' = ANY(scopes);
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes_known;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes_known CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['payments:write', 'payments:read', 'accounts:write', 'webhooks:write', 'admin']::text[]);
