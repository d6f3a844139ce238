package webhook

import "context"

// Claim is one claim of a relayer with these limits, for the plan test.
func Claim(ctx context.Context, db DBTX, perEndpoint, room int) (int, error) {
	r := &Relayer{cfg: Config{PerEndpoint: perEndpoint, Timeout: DefaultTolerance}, q: dbsqlcNew(db)}
	ds, err := r.claim(ctx, room)
	return len(ds), err
}
