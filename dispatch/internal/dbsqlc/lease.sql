-- name: AcquireLease :one
-- Takes the lease when nobody holds it or the holder's lease ran out
-- (lock-at-most: a crashed holder loses it when lease_until passes). No row
-- back: someone else holds it.
INSERT INTO dispatch_lease (name, holder, locked_at, lease_until)
VALUES (@name, @holder, now(), now() + make_interval(secs => @at_most_secs::float8))
ON CONFLICT (name) DO UPDATE
SET holder = EXCLUDED.holder, locked_at = EXCLUDED.locked_at, lease_until = EXCLUDED.lease_until
WHERE dispatch_lease.lease_until <= now()
RETURNING holder, locked_at, lease_until;

-- name: ReleaseLease :execrows
-- Gives the lease up, but not before locked_at + at_least (lock-at-least:
-- a fast cycle on one replica does not let another run right after it).
UPDATE dispatch_lease
SET lease_until = GREATEST(now(), locked_at + make_interval(secs => @at_least_secs::float8))
WHERE name = @name AND holder = @holder;

-- name: GetLease :one
SELECT name, holder, locked_at, lease_until FROM dispatch_lease WHERE name = @name;
