package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// Statement names a hot statement for Explain.
type Statement string

const (
	StmtClaim       Statement = "claim"        // the throughput claim
	StmtStrictClaim Statement = "strict-claim" // the strict claim
	StmtReap        Statement = "reap"         // the reaper's scan and requeue
	StmtKeyLookup   Statement = "key-lookup"   // the enqueue conflict lookup
	StmtEnqueue     Statement = "enqueue"      // the enqueue itself
	StmtNextDue     Statement = "next-due"     // the wake-up timer's query
	StmtRecord      Statement = "record"       // an outcome batch (two made-up claims)
)

// Explain returns PostgreSQL's plan for a hot statement, with sample
// arguments (a key that may not exist, a batch of 200). With analyze the
// statement really runs (EXPLAIN ANALYZE) in a transaction that is rolled
// back, so nothing changes.
func Explain(ctx context.Context, db Beginner, s Statement, analyze bool) (string, error) {
	var sql string
	var args []any
	switch s {
	case StmtClaim:
		sql, args = dbsqlc.ClaimDueSQL, []any{int32(200), "explain", attemptIDs(200)}
	case StmtStrictClaim:
		sql, args = dbsqlc.ClaimStrictSQL, []any{int32(200), "explain", attemptIDs(200)}
	case StmtReap:
		sql, args = dbsqlc.ReapZombiesSQL, []any{120.0, int32(500)}
	case StmtKeyLookup:
		sql, args = dbsqlc.LookupKeySQL, []any{"explain-instruction", "explain-key"}
	case StmtEnqueue:
		id, _ := newOutboxID()
		sql, args = dbsqlc.EnqueueSQL, []any{"explain-instruction", "explain-key", "explain-participant", id, "explain-rail", []byte(`{}`), nil}
	case StmtNextDue:
		sql = dbsqlc.NextDueSQL
	case StmtRecord:
		a, _ := newOutboxID()
		b, _ := newOutboxID()
		sql, args = dbsqlc.RecordSQL, []any{
			[]uuid.UUID{a, b}, attemptIDs(2), []int32{1, 1}, []string{"i1", "i2"}, []string{"k1", "k2"}, []string{"r", "r"},
			[][]byte{[]byte(`{}`), []byte(`{}`)}, []string{"DISPATCHED", "RETRYABLE"}, []string{"ref", ""},
			[]string{"", "503"}, []string{"", "RAIL_RETRYABLE"}, []string{"", "busy"}, []int32{1, 1},
			[]string{"", ""}, []int64{-1, 1000}, []bool{false, false},
		}
	default:
		return "", fmt.Errorf("outbox: explain: unknown statement %q", s)
	}
	prefix := "EXPLAIN (COSTS OFF) "
	if analyze {
		prefix = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "
	}
	var plan []string
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
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
		return "", fmt.Errorf("outbox: explain %s: %w", s, err)
	}
	return strings.Join(plan, "\n"), nil
}

var errRollback = errors.New("rollback")

// Beginner starts transactions: a pool, a pooled connection, a connection.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}
