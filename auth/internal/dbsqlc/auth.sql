-- name: InsertToken :one
INSERT INTO api_tokens (token_id, name, secret_hash, scopes, tenant_id, expires_at)
VALUES (@token_id, @name, @secret_hash, @scopes::text[], sqlc.narg('tenant_id'), sqlc.narg('expires_at'))
RETURNING *;

-- name: TokenByHash :one
SELECT * FROM api_tokens WHERE secret_hash = @secret_hash;

-- name: ListTokens :many
SELECT * FROM api_tokens ORDER BY created_at, token_id;

-- name: RevokeToken :execrows
UPDATE api_tokens SET revoked_at = now() WHERE token_id = @token_id AND revoked_at IS NULL;

-- name: TokenExists :one
SELECT EXISTS (SELECT 1 FROM api_tokens WHERE token_id = @token_id);

-- name: AnyToken :one
SELECT EXISTS (SELECT 1 FROM api_tokens);

-- name: LockBootstrap :exec
SELECT pg_advisory_xact_lock(hashtext('paydispatch-auth-bootstrap'));
