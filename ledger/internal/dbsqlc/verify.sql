-- name: Placeholder :one
SELECT 1::int AS one;
