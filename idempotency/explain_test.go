package idempotency_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/idempotency"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestHotQueriesUseIndexes: on 100,000 keys, a retry's lookup uses the
// primary key and the cleanup the expiry index.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO idempotency_keys (principal, key, method, path, status, expires_at)
		SELECT 'tok_' || (g % 100), 'k-' || g, 'POST', '/v1/payments', 202, now() + interval '1 day'
		FROM generate_series(1, 100000) g;
		ANALYZE idempotency_keys`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, index string
		f           func(ctx context.Context, tx pgx.Tx)
	}{
		{"claim and read a held key", "idempotency_keys_pkey", func(ctx context.Context, tx pgx.Tx) {
			_, _, _ = idempotency.NewStore(tx, idempotency.Config{}).Claim(ctx, "tok_1", "k-1", "POST", "/v1/payments")
		}},
		{"cleanup", "ix_idempotency_keys_expiry", func(ctx context.Context, tx pgx.Tx) {
			_, _ = idempotency.NewStore(tx, idempotency.Config{}).DeleteExpired(ctx)
		}},
	} {
		plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error { tt.f(ctx, tx); return nil })
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: no %s in\n%s", tt.name, tt.index, plan)
		}
	}
}
