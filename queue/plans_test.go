package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/queue"
)

// TestQueuePlansForTheValues: the queue's claims and transitions are
// planned for the values at hand every time (unnamed statements), never
// cached on the connection where a generic plan could take over after
// five runs; an ordinary statement on the same connection is cached (so
// the check can tell them apart).
func TestQueuePlansForTheValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := pgtest.NewPool(t).Config()
	cfg.MaxConns = 1 // one connection: its prepared statements are the ones we look at
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	q := queue.New(pool)
	if _, err := q.RegisterItemType(ctx, taskConfig()); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(-time.Second)
	for i := range 8 {
		if _, err := q.SaveContextAndEnqueue(ctx, enqueueParams(string(rune('a'+i)), due)); err != nil {
			t.Fatal(err)
		}
		b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: itemType, BatchSize: 1, MaxInFlight: 100, PreStartBuffer: time.Minute, MaxRetries: maxRetries})
		if err != nil || len(b.Items) != 1 {
			t.Fatalf("claim %d: %+v, %v", i, b, err)
		}
	}
	var ordinary int
	if err := pool.QueryRow(ctx, `SELECT 1 WHERE $1::int > 0`, 1).Scan(&ordinary); err != nil {
		t.Fatal(err)
	}
	var claims, plain int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE statement LIKE '%name: ClaimBatch%' OR statement LIKE '%name: CountInFlight%'),
		count(*) FILTER (WHERE statement LIKE 'SELECT 1 WHERE%')
		FROM pg_prepared_statements WHERE statement NOT LIKE '%pg_prepared_statements%'`).Scan(&claims, &plain); err != nil {
		t.Fatal(err)
	}
	if claims != 0 || plain != 1 {
		t.Fatalf("prepared on the connection: %d of the queue's claim statements (want 0), %d ordinary (want 1)", claims, plain)
	}
}
