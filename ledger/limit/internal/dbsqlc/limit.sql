-- name: DeleteLimitsExcept :exec
-- Set replaces an account's limits: periods not given are removed.
DELETE FROM account_limit
WHERE account_id = @account_id AND NOT (period = ANY(@periods::text[]));

-- name: UpsertLimits :exec
INSERT INTO account_limit (account_id, period, currency, amount)
SELECT @account_id, l.period, @currency, l.amount
FROM (SELECT unnest(@periods::text[]) AS period, unnest(@amounts::numeric[]) AS amount) AS l
ON CONFLICT (account_id, period) DO UPDATE
SET amount = excluded.amount, currency = excluded.currency, updated_at = now()
WHERE account_limit.amount <> excluded.amount OR account_limit.currency <> excluded.currency;

-- name: ApplyToOpenWindows :exec
-- A changed limit applies to the windows still open at once, but never
-- below what they have booked already (a lowered limit leaves them full).
UPDATE limit_window w
SET limit_amount = greatest(l.amount, w.utilized), updated_at = now()
FROM account_limit l
WHERE w.account_id = @account_id AND w.window_end > @now::timestamptz
  AND l.account_id = w.account_id AND l.period = w.period
  AND w.limit_amount <> greatest(l.amount, w.utilized);

-- name: GetLimits :many
SELECT * FROM account_limit WHERE account_id = @account_id ORDER BY period;

-- name: EnsureWindows :exec
-- Creates the windows a booking at one instant needs (one per configured
-- period); a window that exists, or that a concurrent booking is creating,
-- is left alone.
INSERT INTO limit_window (account_id, period, window_start, window_end, currency, limit_amount)
SELECT l.account_id, l.period, w.window_start, w.window_end, l.currency, l.amount
FROM account_limit l
JOIN (SELECT unnest(@periods::text[]) AS period, unnest(@starts::timestamptz[]) AS window_start,
             unnest(@ends::timestamptz[]) AS window_end) AS w
  ON w.period = l.period
WHERE l.account_id = @account_id
ON CONFLICT DO NOTHING;

-- name: LockWindows :many
-- The windows a booking goes into, locked in a fixed order (period, start)
-- so that bookings and reversals on one account never deadlock.
SELECT w.* FROM limit_window w
JOIN account_limit l ON l.account_id = w.account_id AND l.period = w.period
JOIN (SELECT unnest(@periods::text[]) AS period, unnest(@starts::timestamptz[]) AS window_start) AS c
  ON c.period = w.period AND c.window_start = w.window_start
WHERE w.account_id = @account_id
ORDER BY w.period, w.window_start
FOR UPDATE OF w;

-- name: BookingsByReference :many
SELECT * FROM limit_booking WHERE reference = @reference ORDER BY period;

-- name: BookWindows :many
-- Adds the amount to the locked windows and records what went where.
WITH upd AS (
    UPDATE limit_window w
    SET utilized = w.utilized + @amount::numeric, updated_at = now()
    FROM (SELECT unnest(@periods::text[]) AS period, unnest(@starts::timestamptz[]) AS window_start) AS b
    WHERE w.account_id = @account_id AND w.period = b.period AND w.window_start = b.window_start
    RETURNING w.period, w.window_start
)
INSERT INTO limit_booking (reference, period, account_id, window_start, amount)
SELECT @reference, upd.period, @account_id, upd.window_start, @amount::numeric FROM upd
RETURNING *;

-- name: LockBookedWindows :many
-- A reversal locks the windows of its booking in the same order as Book.
SELECT w.* FROM limit_window w
JOIN limit_booking b ON b.account_id = w.account_id AND b.period = w.period AND b.window_start = w.window_start
WHERE b.reference = @reference AND b.reversed_at IS NULL
ORDER BY w.period, w.window_start
FOR UPDATE OF w;

-- name: ReverseBookings :many
-- Takes a booking out of exactly the windows it went into, once: a second
-- reversal finds every row reversed and changes nothing.
WITH rev AS (
    UPDATE limit_booking b SET reversed_at = now()
    WHERE b.reference = @reference AND b.reversed_at IS NULL
    RETURNING b.account_id, b.period, b.window_start, b.amount
)
UPDATE limit_window w
SET utilized = w.utilized - rev.amount, updated_at = now()
FROM rev
WHERE w.account_id = rev.account_id AND w.period = rev.period AND w.window_start = rev.window_start
RETURNING w.*;

-- name: CurrentUsage :many
-- Each configured limit with its window at one instant (none yet: no row).
SELECT l.period, l.currency, l.amount,
       w.window_start AS window_start, w.window_end AS window_end,
       w.limit_amount AS window_limit, w.utilized AS utilized
FROM account_limit l
LEFT JOIN (SELECT unnest(@periods::text[]) AS period, unnest(@starts::timestamptz[]) AS window_start) AS c ON c.period = l.period
LEFT JOIN limit_window w
  ON w.account_id = l.account_id AND w.period = l.period AND w.window_start = c.window_start
WHERE l.account_id = @account_id
ORDER BY l.period;
