-- name: Claim :one
-- Claims (principal, key) for a new request: inserts it in flight, or
-- takes over a row that expired or whose request was abandoned in flight
-- (its server died). Returns no row when the key is held or answered.
INSERT INTO idempotency_keys (principal, key, method, path, expires_at)
VALUES (@principal, @key, @method, @path, @expires_at)
ON CONFLICT (principal, key) DO UPDATE
    SET method = EXCLUDED.method, path = EXCLUDED.path, request_hash = NULL, status = NULL,
        content_type = NULL, location = NULL, response_body = NULL,
        created_at = now(), expires_at = EXCLUDED.expires_at
    WHERE idempotency_keys.expires_at <= now()
       OR (idempotency_keys.status IS NULL AND idempotency_keys.created_at < @abandoned_before)
RETURNING created_at;

-- name: Get :one
SELECT * FROM idempotency_keys WHERE principal = @principal AND key = @key;

-- name: Complete :execrows
UPDATE idempotency_keys
SET request_hash = @request_hash, status = @status, content_type = @content_type,
    location = @location, response_body = @response_body
WHERE principal = @principal AND key = @key AND created_at = @created_at AND status IS NULL;

-- name: Release :exec
DELETE FROM idempotency_keys
WHERE principal = @principal AND key = @key AND created_at = @created_at AND status IS NULL;

-- name: DeleteExpired :execrows
DELETE FROM idempotency_keys WHERE expires_at <= now();
