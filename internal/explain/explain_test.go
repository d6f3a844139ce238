package explain_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m, postgres.Schema{}) }

// TestGeneric: on a table where one value is nearly every row, a plan made
// for the values scans for the common one and uses the index for a rare
// one; the generic plan is one plan for both, on the parameter.
func TestGeneric(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		CREATE TABLE skewed (id int PRIMARY KEY, k int NOT NULL);
		INSERT INTO skewed SELECT g, CASE WHEN g <= 99000 THEN 1 ELSE g END FROM generate_series(1, 100000) g;
		CREATE INDEX skewed_k ON skewed (k);
		ANALYZE skewed`); err != nil {
		t.Fatal(err)
	}
	plan := func(o explain.Options, k int) string {
		plans, err := explain.Run(ctx, pool, o, func(ctx context.Context, tx pgx.Tx) error {
			var n int
			return tx.QueryRow(ctx, "SELECT count(*) FROM skewed WHERE k = $1", k).Scan(&n)
		})
		if err != nil || len(plans) != 1 {
			t.Fatalf("explain: %v, %d plans", err, len(plans))
		}
		return plans[0].Plan
	}
	tests := []struct {
		name      string
		o         explain.Options
		k         int
		want, not string
	}{
		{"custom, the common value", explain.Options{}, 1, "Seq Scan on skewed", "$1"},
		{"custom, a rare value", explain.Options{}, 99500, "skewed_k", "$1"},
		{"generic, the common value", explain.Options{Generic: true}, 1, "k = $1", "k = 1)"},
		{"generic, a rare value", explain.Options{Generic: true}, 99500, "k = $1", "99500"},
		{"generic, analyzed", explain.Options{Generic: true, Analyze: true}, 99500, "actual rows=1", "99500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(tt.o, tt.k)
			if !strings.Contains(got, tt.want) || strings.Contains(got, tt.not) {
				t.Errorf("want %q and no %q in\n%s", tt.want, tt.not, got)
			}
		})
	}
}
