-- name: ClaimFingerprints :many
-- The duplicate control's one statement a chunk: each fingerprint is
-- inserted, owned by its payment, or, where another payment's row has
-- it, that row is answered, taken over when its window ended before
-- @received_at or its payment will never move money (CANCELLED,
-- REJECTED: a payment sent again after its cancel is no duplicate of
-- it). Each (tenant, fingerprint) at most once in the arrays;
-- in key order, so that two chunks lock shared rows in one order. A row
-- the payment owns already (a retry) is left as it is and not answered.
INSERT INTO payment_fingerprint AS f (tenant_id, fingerprint, payment_id, external_id, received_at, expires_at)
SELECT t.tenant_id, t.fingerprint, t.payment_id, t.external_id, @received_at::timestamptz, t.expires_at
FROM (SELECT unnest(@tenant_ids::text[]) AS tenant_id, unnest(@fingerprints::bytea[]) AS fingerprint,
             unnest(@payment_ids::text[]) AS payment_id, unnest(@external_ids::text[]) AS external_id,
             unnest(@expires_at::timestamptz[]) AS expires_at) t
ORDER BY t.tenant_id, t.fingerprint
ON CONFLICT (tenant_id, fingerprint) DO UPDATE SET (payment_id, external_id, received_at, expires_at) = (
    SELECT CASE WHEN o.taken THEN excluded.payment_id ELSE f.payment_id END, CASE WHEN o.taken THEN excluded.external_id ELSE f.external_id END,
           CASE WHEN o.taken THEN excluded.received_at ELSE f.received_at END, CASE WHEN o.taken THEN excluded.expires_at ELSE f.expires_at END
    FROM (SELECT f.expires_at <= excluded.received_at OR payment_fingerprint_void(f.payment_id) AS taken) o)
WHERE f.payment_id <> excluded.payment_id
RETURNING f.tenant_id, f.fingerprint, f.payment_id, f.external_id, f.received_at;

-- name: DeleteFingerprints :execrows
-- Retention: up to @max_rows fingerprints whose windows ended before
-- @before, oldest first (payment_fingerprint_expires_idx). An expired
-- row matches no payment, so deleting it changes no answer.
DELETE FROM payment_fingerprint d
WHERE d.ctid = ANY(ARRAY(
    SELECT f.ctid FROM payment_fingerprint f
    WHERE f.expires_at < @before::timestamptz
    ORDER BY f.expires_at
    LIMIT @max_rows::integer));

-- name: SetControlSettings :one
-- A tenant's control settings: the ones given (non-null) set, the others
-- kept, or, for a tenant without a row, the defaults given.
INSERT INTO tenant_control_settings AS s (tenant_id, duplicate_action, duplicate_window_days, screening_on_error)
VALUES (@tenant_id,
        coalesce(sqlc.narg(duplicate_action)::text, @default_duplicate_action::text),
        coalesce(sqlc.narg(duplicate_window_days)::integer, @default_duplicate_window_days::integer),
        coalesce(sqlc.narg(screening_on_error)::text, @default_screening_on_error::text))
ON CONFLICT (tenant_id) DO UPDATE SET
    duplicate_action      = coalesce(sqlc.narg(duplicate_action)::text, s.duplicate_action),
    duplicate_window_days = coalesce(sqlc.narg(duplicate_window_days)::integer, s.duplicate_window_days),
    screening_on_error    = coalesce(sqlc.narg(screening_on_error)::text, s.screening_on_error),
    updated_at            = now()
RETURNING tenant_id, duplicate_action, duplicate_window_days, screening_on_error, updated_at;

-- name: ControlSettingsOf :many
SELECT tenant_id, duplicate_action, duplicate_window_days, screening_on_error, updated_at
FROM tenant_control_settings WHERE tenant_id = ANY(@tenant_ids::text[]);

-- name: ListControlSettings :many
SELECT tenant_id, duplicate_action, duplicate_window_days, screening_on_error, updated_at
FROM tenant_control_settings ORDER BY tenant_id COLLATE "C";

-- name: DuplicateLookup :many
-- The intake's look for suspected duplicates, read only: for each
-- (tenant, fingerprint) its tenant's duplicate action and the payment
-- owning it, if its window is open at @now and it is not void (a
-- cancelled or rejected payment: the claim takes it over). A lookup by the primary key
-- each (LIMIT keeps the planner from hashing the whole table instead).
SELECT t.tenant_id::text AS tenant_id, t.fingerprint::bytea AS fingerprint,
       coalesce((SELECT s.duplicate_action FROM tenant_control_settings s WHERE s.tenant_id = t.tenant_id), @default_action::text)::text AS action,
       coalesce(f.payment_id, '')::text AS payment_id, coalesce(f.external_id, '')::text AS external_id
FROM (SELECT unnest(@tenant_ids::text[]) AS tenant_id, unnest(@fingerprints::bytea[]) AS fingerprint) t
LEFT JOIN LATERAL (
    SELECT f.payment_id, f.external_id FROM payment_fingerprint f
    WHERE f.tenant_id = t.tenant_id AND f.fingerprint = t.fingerprint AND f.expires_at > @now::timestamptz
      AND NOT payment_fingerprint_void(f.payment_id)
    LIMIT 1) f ON true;
