package dbsqlc

import "github.com/jackc/pgx/v5"

// Written by hand, beside sqlc's code: the relayer sends a settle and a
// claim in one batch (one round trip), so it needs their statements and
// arguments, and the claim's scan, apart from the Queries that run them.

// SettleDeliveriesBatch is SettleDeliveries' statement and arguments.
func SettleDeliveriesBatch(arg SettleDeliveriesParams) (string, []any) {
	return settleDeliveries, []any{arg.DeliveryIds, arg.Attempts, arg.States, arg.DelaySeconds, arg.HttpStatuses, arg.Errors}
}

// ClaimDeliveriesBatch is ClaimDeliveries' statement and arguments.
func ClaimDeliveriesBatch(arg ClaimDeliveriesParams) (string, []any) {
	return claimDeliveries, []any{arg.LeaseSeconds, arg.PerEndpoint, arg.MaxClaim}
}

// ScanClaimDeliveries reads ClaimDeliveries' rows, as ClaimDeliveries
// does, and closes them.
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
