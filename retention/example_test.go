package retention_test

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/retention"
)

// A table of finished jobs keeps them a day: a round deletes the old
// finished ones, in batches of two, and leaves the recent and the open.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	if _, err := pool.Exec(ctx, `CREATE TABLE job (id int PRIMARY KEY, finished_at timestamptz);
		INSERT INTO job SELECT i, CASE WHEN i <= 5 THEN now() - interval '2 days' WHEN i <= 7 THEN now() END
		FROM generate_series(1, 9) i`); err != nil {
		panic(err)
	}
	c, err := retention.New(retention.Config{Pool: pool, BatchSize: 2, Policies: []retention.Policy{{
		Table: "job", Keep: 24 * time.Hour,
		Delete: func(ctx context.Context, before time.Time, limit int) (int64, error) {
			tag, err := pool.Exec(ctx, `DELETE FROM job WHERE id IN (
				SELECT id FROM job WHERE finished_at < $1 ORDER BY finished_at LIMIT $2)`, before, limit)
			return tag.RowsAffected(), err
		},
	}}})
	if err != nil {
		panic(err)
	}
	r, err := c.RunOnce(ctx)
	if err != nil {
		panic(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job`).Scan(&left); err != nil {
		panic(err)
	}
	fmt.Println("deleted", r.Deleted["job"], "left", left)
	// Output: deleted 5 left 4
}
