package dbsqlc

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Written by hand, beside sqlc's code: each endpoint's candidates are
// limited by its own room (a LIMIT from a lateral subquery's column),
// which sqlc v1.31.1 does not parse. TestClaimUsesIndexes and the
// relayer's tests run it.

// claimDeliveries claims up to per_endpoint deliveries in flight for
// each endpoint, due ones that are the first open delivery of their
// subject to the same endpoint, at most max_claim in all; the endpoints
// in a random order so that none is always last. A claim lapses after
// the lease: its relayer died, and the delivery is due again.
//
// Each endpoint's candidates are read only up to its room (per_endpoint
// less those in flight): an endpoint at its cap costs one count, and one
// with room for three stops at three, instead of walking its backlog for
// per_endpoint candidates and locking rows it then drops. The
// first-open-of-its-subject test is a scalar subquery in the subject
// index's own order (only that index has it, so it is one descent;
// ordered by delivery_id alone, the primary key would walk every
// delivery before the subject's first), and the claimed rows are updated
// by their keys: as joins, the planner may scan every open delivery of
// the endpoint for each candidate, or the whole table for the update,
// and a backlog of thousands then costs a claim tens of milliseconds.
const claimDeliveries = `-- name: ClaimDeliveries :many
WITH picked AS (
    SELECT c.delivery_id
    FROM (SELECT e.endpoint_id FROM webhook_endpoints e ORDER BY random()) ep
    CROSS JOIN LATERAL (
        SELECT greatest($2::bigint - count(*), 0) AS room
        FROM webhook_deliveries s
        WHERE s.endpoint_id = ep.endpoint_id AND s.state = 'SENDING' AND s.next_attempt_at > now()) r
    CROSS JOIN LATERAL (
        SELECT d.delivery_id
        FROM webhook_deliveries d
        WHERE r.room > 0 AND d.endpoint_id = ep.endpoint_id
          AND d.state IN ('PENDING', 'SENDING') AND d.next_attempt_at <= now()
          AND d.delivery_id = (
              SELECT o.delivery_id FROM webhook_deliveries o
              WHERE o.endpoint_id = d.endpoint_id AND o.subject = d.subject
                AND o.state IN ('PENDING', 'SENDING')
              ORDER BY o.endpoint_id, o.subject, o.delivery_id
              LIMIT 1)
        ORDER BY d.next_attempt_at
        LIMIT r.room
        FOR UPDATE OF d SKIP LOCKED) c
    LIMIT $3::bigint
)
UPDATE webhook_deliveries w
SET state = 'SENDING', attempts = w.attempts + 1, next_attempt_at = now() + make_interval(secs => $1::float8)
FROM webhook_endpoints ep
WHERE w.delivery_id = ANY(ARRAY(SELECT picked.delivery_id FROM picked)) AND ep.endpoint_id = w.endpoint_id
RETURNING w.delivery_id, w.endpoint_id, w.tenant_id, w.subject, w.event_id, w.event_type, w.payload, w.attempts, w.created_at,
          ep.url, ep.secret,
          coalesce(CASE WHEN ep.previous_expires_at > now() THEN ep.previous_secret END, '')::text AS previous_secret
`

// ClaimDeliveriesParams are a claim's lease and limits.
type ClaimDeliveriesParams struct {
	LeaseSeconds float64
	PerEndpoint  int64
	MaxClaim     int64
}

// ClaimDeliveriesRow is one claimed delivery, with its endpoint's URL
// and secrets.
type ClaimDeliveriesRow struct {
	DeliveryID     int64
	EndpointID     uuid.UUID
	TenantID       string
	Subject        string
	EventID        uuid.UUID
	EventType      string
	Payload        []byte
	Attempts       int32
	CreatedAt      time.Time
	Url            string
	Secret         string
	PreviousSecret string
}

// ClaimDeliveries runs the claim.
func (q *Queries) ClaimDeliveries(ctx context.Context, arg ClaimDeliveriesParams) ([]ClaimDeliveriesRow, error) {
	rows, err := q.db.Query(ctx, claimDeliveries, arg.LeaseSeconds, arg.PerEndpoint, arg.MaxClaim)
	if err != nil {
		return nil, err
	}
	return ScanClaimDeliveries(rows)
}

// ClaimDeliveriesBatch is ClaimDeliveries' statement and arguments.
func ClaimDeliveriesBatch(arg ClaimDeliveriesParams) (string, []any) {
	return claimDeliveries, []any{arg.LeaseSeconds, arg.PerEndpoint, arg.MaxClaim}
}

// ScanClaimDeliveries reads ClaimDeliveries' rows and closes them.
func ScanClaimDeliveries(rows pgx.Rows) ([]ClaimDeliveriesRow, error) {
	defer rows.Close()
	var items []ClaimDeliveriesRow
	for rows.Next() {
		var i ClaimDeliveriesRow
		if err := rows.Scan(&i.DeliveryID, &i.EndpointID, &i.TenantID, &i.Subject, &i.EventID, &i.EventType, &i.Payload,
			&i.Attempts, &i.CreatedAt, &i.Url, &i.Secret, &i.PreviousSecret); err != nil {
			return nil, err
		}
		items = append(items, i)
	}
	return items, rows.Err()
}
