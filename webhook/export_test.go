package webhook

import (
	"context"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// Claim is one claim of a relayer with these limits, for the plan test.
func Claim(ctx context.Context, db DBTX, perEndpoint, room int) (int, error) {
	r := &Relayer{cfg: Config{PerEndpoint: perEndpoint, Timeout: DefaultTolerance}, q: dbsqlc.New(db)}
	ds, err := r.claim(ctx, room)
	return len(ds), err
}

// DialControl is the check a delivery's connection passes, on the
// address dialled.
func (p Policy) DialControl(address string) error { return p.dialControl("tcp", address) }
