package pgcopy_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/pgcopy"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestParams: arrays given in binary form reach PostgreSQL as the values
// they were given (empty texts, non-ASCII, an empty array, times to the
// microsecond on both sides of 2000), and a statement's changed rows are
// counted.
func TestParams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewEmptyPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE p (name text PRIMARY KEY, texts text[], ats timestamptz[])`); err != nil {
		t.Fatal(err)
	}
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		name  string
		texts []string
		ats   []time.Time
	}{
		{"several", []string{"a", "", "zahlung €", strings.Repeat("x", 70_000)},
			[]time.Time{time.Date(2031, 3, 5, 15, 59, 58, 123456789, cet), time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)}},
		{"empty", []string{}, []time.Time{}},
		{"", []string{"one"}, []time.Time{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				n, err := pgcopy.Exec(ctx, tx, `INSERT INTO p VALUES ($1, $2::text[], $3::timestamptz[])`,
					pgcopy.TextParam(tt.name), pgcopy.TextArray(tt.texts), pgcopy.TimestamptzArray(tt.ats))
				if err == nil && n != 1 {
					t.Errorf("inserted %d rows, want 1", n)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			var ats []time.Time
			if err := pool.QueryRow(ctx, `SELECT coalesce(texts, '{NULL}'), coalesce(ats, '{NULL}') FROM p WHERE name = $1`, tt.name).Scan(&texts, &ats); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts, tt.texts) {
				t.Errorf("texts %q, want %q", texts, tt.texts)
			}
			if len(ats) != len(tt.ats) {
				t.Fatalf("times %v, want %v", ats, tt.ats)
			}
			for i := range ats {
				if want := tt.ats[i].Truncate(time.Microsecond); !ats[i].Equal(want) {
					t.Errorf("time %d: %v, want %v", i, ats[i], want)
				}
			}
		})
	}
}
