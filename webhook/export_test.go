package webhook

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// Claim is one claim of a relayer with these limits, in tx, for the plan
// tests.
func Claim(ctx context.Context, tx pgx.Tx, perEndpoint, room int) (int, error) {
	r := &Relayer{cfg: Config{PerEndpoint: perEndpoint, Timeout: DefaultTolerance}, db: tx, q: dbsqlc.New(tx)}
	ds, err := r.claim(ctx, room)
	return len(ds), err
}

// DialControl is the check a delivery's connection passes, on the
// address dialled.
func (p Policy) DialControl(address string) error { return p.dialControl("tcp", address) }

// Retry records a claimed delivery's failure, to be retried after delay,
// in tx, for the plan tests.
func Retry(ctx context.Context, tx pgx.Tx, id int64, attempt int32, delay float64) error {
	return dbsqlc.New(tx).SettleDeliveries(ctx, dbsqlc.SettleDeliveriesParams{DeliveryIds: []int64{id}, Attempts: []int32{attempt},
		States: []string{StatePending}, DelaySeconds: []float64{delay}, HttpStatuses: []int32{503}, Errors: []string{"HTTP 503"}})
}
