-- name: AppendEntry :one
INSERT INTO admin_audit (actor, action, target, detail)
VALUES (@actor, @action, @target, @detail)
RETURNING *;

-- name: List :many
-- Newest first; a page ends before the cursor (0: from the newest).
SELECT * FROM admin_audit
WHERE (@before::bigint = 0 OR seq < @before::bigint)
ORDER BY seq DESC
LIMIT @max_rows;
