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
