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

-- ClaimDeliveries is in claim.go, written by hand: sqlc cannot read a
-- LIMIT taken from a lateral subquery's column.

-- name: SettleDeliveries :exec
-- Each claim's outcome: DELIVERED or DEAD (settled), or PENDING again
-- after its delay. Only the claim's holder settles it: the guard is the
-- state and the attempt it claimed. A delivery put back to wait for its
-- retry takes its subject's later open deliveries with it (none is
-- earlier than it is due again): they could not be claimed before it
-- anyway, and a claim reads the due ones in order of next_attempt_at, so
-- left where they were, every claim would step over them, one subject
-- index descent each, for as long as the retry waits. One published
-- meanwhile, which this statement does not see, is only stepped over.
WITH settled AS (
    UPDATE webhook_deliveries w
    SET state = o.state,
        next_attempt_at = CASE WHEN o.state = 'PENDING' THEN now() + make_interval(secs => o.delay_seconds) ELSE w.next_attempt_at END,
        settled_at = CASE WHEN o.state = 'PENDING' THEN NULL ELSE now() END,
        last_status = nullif(o.http_status, 0),
        last_error = nullif(o.error, '')
    FROM (SELECT unnest(@delivery_ids::bigint[]) AS delivery_id, unnest(@attempts::int[]) AS attempt,
                 unnest(@states::text[]) AS state, unnest(@delay_seconds::float8[]) AS delay_seconds,
                 unnest(@http_statuses::int[]) AS http_status, unnest(@errors::text[]) AS error) o
    WHERE w.delivery_id = o.delivery_id AND w.state = 'SENDING' AND w.attempts = o.attempt
    RETURNING w.delivery_id, w.endpoint_id, w.subject, w.state, w.next_attempt_at
)
UPDATE webhook_deliveries f
SET next_attempt_at = s.next_attempt_at
FROM settled s
WHERE s.state = 'PENDING'
  AND f.endpoint_id = s.endpoint_id AND f.subject = s.subject AND f.state = 'PENDING'
  AND f.delivery_id > s.delivery_id AND f.next_attempt_at < s.next_attempt_at;

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
