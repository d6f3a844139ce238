package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestAuthenticateUsesTheIndex: every API request looks its token up by
// hash; on 100,000 tokens the plan must be the unique index, not a scan.
func TestAuthenticateUsesTheIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		INSERT INTO api_tokens (token_id, name, secret_hash, scopes)
		SELECT 'tok_' || g, '', sha256(g::text::bytea), ARRAY['payments:read']
		FROM generate_series(1, 100000) g;
		ANALYZE api_tokens`); err != nil {
		t.Fatal(err)
	}
	plan := pgtest.Plans(t, pool, false, func(ctx context.Context, tx pgx.Tx) error {
		_, _ = auth.NewStore(tx).Authenticate(ctx, "pd_not-a-token")
		return nil
	})
	if !strings.Contains(plan, "api_tokens_secret_hash_key") || strings.Contains(plan, "Seq Scan") {
		t.Fatalf("authenticate's plan does not use api_tokens_secret_hash_key:\n%s", plan)
	}
}
