-- name: InsertEndpoint :one
INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, event_types, description, secret)
VALUES (@endpoint_id, @tenant_id, @url, @event_types::text[], @description, @secret)
RETURNING *;

-- name: GetEndpoint :one
SELECT * FROM webhook_endpoints WHERE endpoint_id = @endpoint_id;

-- name: ListEndpoints :many
-- A tenant's endpoints (an empty tenant: everyone's), oldest first, after
-- the cursor's (created_at, endpoint_id).
SELECT * FROM webhook_endpoints
WHERE (@tenant_id::text = '' OR tenant_id = @tenant_id)
  AND (NOT @started::boolean OR (created_at, endpoint_id) > (@after_created::timestamptz, @after_id::uuid))
ORDER BY created_at, endpoint_id
LIMIT @max_rows;

-- name: DeleteEndpoint :execrows
DELETE FROM webhook_endpoints WHERE endpoint_id = @endpoint_id;

-- name: DropOpenDeliveries :execrows
-- A deleted endpoint's deliveries that were still to be sent.
UPDATE webhook_deliveries
SET state = 'DEAD', last_error = 'endpoint deleted', settled_at = now()
WHERE endpoint_id = @endpoint_id AND state IN ('PENDING', 'SENDING');

-- name: RotateSecret :one
-- The new secret signs from now on; the old one signs beside it until
-- previous_expires_at.
UPDATE webhook_endpoints
SET previous_secret = secret, previous_expires_at = @previous_expires_at, secret = @secret, updated_at = now()
WHERE endpoint_id = @endpoint_id
RETURNING *;

-- name: ClaimDeliveries :many
-- Up to per_endpoint deliveries in flight for each endpoint, due ones
-- that are the first open delivery of their subject to the same endpoint,
-- at most max_claim in all; the endpoints in a random order so that none
-- is always last. A claim lapses after the lease: its relayer died, and
-- the delivery is due again. The first-open-of-its-subject test is a
-- scalar subquery in the subject index's own order (only that index has
-- it, so it is one descent; ordered by delivery_id alone, the primary key
-- would walk every delivery before the subject's first), and the claimed
-- rows are updated by their keys: as joins, the planner may scan every
-- open delivery of the endpoint for each candidate, or the whole table
-- for the update, and a backlog of thousands then costs a claim tens of
-- milliseconds.
WITH picked AS (
    SELECT c.delivery_id
    FROM (SELECT e.endpoint_id,
                 (SELECT count(*) FROM webhook_deliveries s
                  WHERE s.endpoint_id = e.endpoint_id AND s.state = 'SENDING' AND s.next_attempt_at > now()) AS busy
          FROM webhook_endpoints e
          ORDER BY random()) ep
    CROSS JOIN LATERAL (
        SELECT x.delivery_id, row_number() OVER () AS n
        FROM (SELECT d.delivery_id
              FROM webhook_deliveries d
              WHERE d.endpoint_id = ep.endpoint_id
                AND d.state IN ('PENDING', 'SENDING') AND d.next_attempt_at <= now()
                AND d.delivery_id = (
                    SELECT o.delivery_id FROM webhook_deliveries o
                    WHERE o.endpoint_id = d.endpoint_id AND o.subject = d.subject
                      AND o.state IN ('PENDING', 'SENDING')
                    ORDER BY o.endpoint_id, o.subject, o.delivery_id
                    LIMIT 1)
              ORDER BY d.next_attempt_at
              LIMIT @per_endpoint::bigint
              FOR UPDATE OF d SKIP LOCKED) x) c
    WHERE c.n + ep.busy <= @per_endpoint::bigint
    LIMIT @max_claim::bigint
)
UPDATE webhook_deliveries w
SET state = 'SENDING', attempts = w.attempts + 1, next_attempt_at = now() + make_interval(secs => @lease_seconds::float8)
FROM webhook_endpoints ep
WHERE w.delivery_id = ANY(ARRAY(SELECT picked.delivery_id FROM picked)) AND ep.endpoint_id = w.endpoint_id
RETURNING w.delivery_id, w.endpoint_id, w.tenant_id, w.subject, w.event_id, w.event_type, w.payload, w.attempts, w.created_at,
          ep.url, ep.secret,
          coalesce(CASE WHEN ep.previous_expires_at > now() THEN ep.previous_secret END, '')::text AS previous_secret;

-- name: SettleDeliveries :execrows
-- Each claim's outcome: DELIVERED or DEAD (settled), or PENDING again
-- after its delay. Only the claim's holder settles it: the guard is the
-- state and the attempt it claimed.
UPDATE webhook_deliveries w
SET state = o.state,
    next_attempt_at = CASE WHEN o.state = 'PENDING' THEN now() + make_interval(secs => o.delay_seconds) ELSE w.next_attempt_at END,
    settled_at = CASE WHEN o.state = 'PENDING' THEN NULL ELSE now() END,
    last_status = nullif(o.http_status, 0),
    last_error = nullif(o.error, '')
FROM (SELECT unnest(@delivery_ids::bigint[]) AS delivery_id, unnest(@attempts::int[]) AS attempt,
             unnest(@states::text[]) AS state, unnest(@delay_seconds::float8[]) AS delay_seconds,
             unnest(@http_statuses::int[]) AS http_status, unnest(@errors::text[]) AS error) o
WHERE w.delivery_id = o.delivery_id AND w.state = 'SENDING' AND w.attempts = o.attempt;

-- name: NextDue :one
-- When the next open delivery falls due (a backoff ending, a claim
-- lapsing), for the relayer's timer.
-- An hour from now when none is open.
SELECT coalesce(min(next_attempt_at), now() + interval '1 hour')::timestamptz FROM webhook_deliveries WHERE state IN ('PENDING', 'SENDING');

-- name: ListDeliveries :many
-- An endpoint's deliveries, newest first, before the cursor; state ''
-- lists every state.
SELECT delivery_id, endpoint_id, subject, event_id, event_type, state, attempts, next_attempt_at, last_status, last_error,
       created_at, settled_at
FROM webhook_deliveries
WHERE endpoint_id = @endpoint_id
  AND (@state::text = '' OR state = @state)
  AND (NOT @started::boolean OR delivery_id < @before_id::bigint)
ORDER BY delivery_id DESC
LIMIT @max_rows;

-- name: RedriveDead :execrows
-- An endpoint's dead letters (all, or those listed) sent again, with
-- their attempts anew.
UPDATE webhook_deliveries
SET state = 'PENDING', attempts = 0, next_attempt_at = now(), settled_at = NULL
WHERE endpoint_id = @endpoint_id AND state = 'DEAD'
  AND (coalesce(cardinality(@delivery_ids::bigint[]), 0) = 0 OR delivery_id = ANY(@delivery_ids::bigint[]));

-- name: Depth :one
SELECT count(*) FILTER (WHERE state = 'PENDING' AND next_attempt_at <= now())::bigint AS due,
       count(*) FILTER (WHERE state = 'PENDING')::bigint AS pending,
       count(*) FILTER (WHERE state = 'SENDING')::bigint AS sending,
       coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_open_seconds
FROM webhook_deliveries WHERE state IN ('PENDING', 'SENDING');

-- name: DeadLetters :one
SELECT count(*)::bigint FROM webhook_deliveries WHERE state = 'DEAD';

-- name: Publish :one
SELECT webhook_publish(@tenant_ids::text[], @subjects::text[], @event_types::text[], @payloads::jsonb[])::integer AS written;

-- name: LockTenantEndpoints :exec
-- Serializes a tenant's registrations, so that its count holds.
SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || @tenant_id::text, 0));

-- name: CountEndpoints :one
SELECT count(*) FROM webhook_endpoints WHERE tenant_id = @tenant_id;

-- name: DeleteDelivered :execrows
-- Retention: up to @max_rows delivered deliveries settled before
-- @before, oldest first (the primary key's order is the order they were
-- written), found by the primary key and deleted by their rows'
-- addresses (a TID scan), so neither step reads the whole table.
DELETE FROM webhook_deliveries w
WHERE w.ctid = ANY(ARRAY(
    SELECT d.ctid FROM webhook_deliveries d
    WHERE d.state = 'DELIVERED' AND d.settled_at < @before::timestamptz
    ORDER BY d.delivery_id
    LIMIT @max_rows::int));
