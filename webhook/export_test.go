package webhook

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// RetryDelay is the delay a relayer with cfg (its defaults filled in)
// sets after the attempt-th failure, given the answer's Retry-After and
// the jitter (in [0, 1)).
func RetryDelay(cfg Config, attempt int, retryAfter time.Duration, jitter float64) time.Duration {
	cfg.Pool = new(pgxpool.Pool) // not used: defaults only checks it is set
	if err := cfg.defaults(); err != nil {
		panic(err)
	}
	return cfg.delay(attempt, retryAfter, jitter)
}

// RetryAfter is how long a Retry-After header asks to wait at now.
func RetryAfter(h string, now time.Time) time.Duration { return retryAfter(h, now) }
