package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// ExplainClaim returns PostgreSQL's plan for the claim statement with p.
// With analyze, the claim really runs (EXPLAIN ANALYZE) inside a
// transaction that is rolled back, so nothing is claimed.
func (q *Queue) ExplainClaim(ctx context.Context, p ClaimParams, analyze bool) (string, error) {
	if p.Fair {
		return q.explain(ctx, dbsqlc.ClaimBatchFairSQL, analyze,
			p.ItemType, int32(p.BatchSize), int32(p.PreStartBuffer/time.Second), int32(p.MaxRetries), "EXPLAIN")
	}
	a := claimArgs(p, "EXPLAIN")
	return q.explain(ctx, dbsqlc.ClaimBatchSQL, analyze,
		a.ItemType, a.PreStartBufferSecs, a.ScheduledFrom, a.MaxRetries, a.BatchSize, a.BatchID)
}

// ExplainFindStaleClaims returns the plan of the stale-claim query.
func (q *Queue) ExplainFindStaleClaims(ctx context.Context, itemType string, olderThan time.Duration, limit int) (string, error) {
	return q.explain(ctx, dbsqlc.FindStaleClaimsSQL, false, itemType, olderThan.Seconds(), int32(limit))
}

// ExplainDeadLetterExhausted returns the plan of the sweep of READY items
// whose retries are used up (run and rolled back with analyze).
func (q *Queue) ExplainDeadLetterExhausted(ctx context.Context, itemType string, maxRetries, limit int, analyze bool) (string, error) {
	return q.explain(ctx, dbsqlc.DeadLetterExhaustedSQL, analyze, itemType, int32(maxRetries), int32(limit))
}

// ExplainMarkDispatched returns the plan of the dispatch transition for ids
// (run and rolled back with analyze).
func (q *Queue) ExplainMarkDispatched(ctx context.Context, itemType, batchID string, ids []string, analyze bool) (string, error) {
	return q.explain(ctx, dbsqlc.MarkDispatchedSQL, analyze, ids, ids, itemType, batchID)
}

var errRollback = errors.New("rollback")

func (q *Queue) explain(ctx context.Context, sql string, analyze bool, args ...any) (string, error) {
	prefix := "EXPLAIN (COSTS OFF) "
	if analyze {
		prefix = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "
	}
	var plan []string
	err := pgx.BeginFunc(ctx, q.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, prefix+sql, args...)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		return errRollback
	})
	if err != nil && !errors.Is(err, errRollback) {
		return "", fmt.Errorf("queue: explain: %w", err)
	}
	return strings.Join(plan, "\n"), nil
}
