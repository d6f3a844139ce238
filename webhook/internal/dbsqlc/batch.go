package dbsqlc

// Written by hand, beside sqlc's code: the relayer sends a settle and a
// claim in one batch (one round trip), so it needs their statements and
// arguments apart from the Queries that run them (the claim's are in
// claim.go).

// SettleDeliveriesBatch is SettleDeliveries' statement and arguments.
func SettleDeliveriesBatch(arg SettleDeliveriesParams) (string, []any) {
	return settleDeliveries, []any{arg.DeliveryIds, arg.Attempts, arg.States, arg.DelaySeconds, arg.HttpStatuses, arg.Errors}
}
