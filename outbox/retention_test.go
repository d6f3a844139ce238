package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
)

// seedInstruction writes an instruction's key, two archived attempts and,
// by where it stands, its pending, in-flight or dead-letter row, as if
// enqueued ago.
func seedInstruction(t *testing.T, pool *pgxpool.Pool, id, where string, ago time.Duration) {
	t.Helper()
	ctx := context.Background()
	stmts := []string{
		`INSERT INTO payment_outbox_keys (instruction_id, idempotency_key, outbox_id, participant_id, sequence_id, rail_type, created_at)
		 VALUES ($1, 'k', md5($1)::uuid, 'bank', abs(hashtext($1)), 'R', now() - $2::interval)`,
		`INSERT INTO payment_outbox_attempts (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key, rail_type, payload, attempt_no, state, claimed_at)
		 SELECT md5($1)::uuid, $1, 'bank', abs(hashtext($1)), 'k', 'R', '{}', 1, s, now() - $2::interval
		 FROM unnest(ARRAY['DISPATCHING', 'DISPATCHED']) s`,
	}
	switch where {
	case "pending", "inquiry":
		stmts = append(stmts, `INSERT INTO payment_outbox_pending (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key, rail_type, payload, created_at, inquire)
			VALUES (md5($1)::uuid, $1, 'bank', abs(hashtext($1)), 'k', 'R', '{}', now() - $2::interval, `+fmt.Sprint(where == "inquiry")+`)`)
	case "inflight":
		stmts = append(stmts, `INSERT INTO payment_outbox_inflight (outbox_id, attempt_no, participant_id, sequence_id, strict, relayer_id, claimed_at, enqueued_at)
			VALUES (md5($1)::uuid, 1, 'bank', abs(hashtext($1)), false, 'r', now(), now() - $2::interval)`)
	case "dead":
		stmts = append(stmts, `INSERT INTO payment_outbox_dead_letters (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key, rail_type, payload, attempt_count, enqueued_at, strict, error_code)
			VALUES (md5($1)::uuid, $1, 'bank', abs(hashtext($1)), 'k', 'R', '{}', 1, now() - $2::interval, false, 'X')`)
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s, id, ago.String()); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}

// TestDeleteDone: a done instruction enqueued before the cutoff goes with
// its key and its attempts, oldest first, at most a batch; a young one
// stays, and so does an old one still pending (a retry or an inquiry), in
// flight or dead (waiting for its requeue).
func TestDeleteDone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit int
		gone  []string
	}{
		{"a full batch takes every old done instruction", 100, []string{"done-old-0", "done-old-1", "done-old-2"}},
		{"a short limit takes the oldest first", 2, []string{"done-old-1", "done-old-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			ctx := context.Background()
			var all []string
			for _, where := range []string{"done", "pending", "inquiry", "inflight", "dead"} {
				for i := range 3 {
					id := fmt.Sprintf("%s-old-%d", where, i)
					seedInstruction(t, pool, id, where, 40*24*time.Hour+time.Duration(i)*time.Hour)
					all = append(all, id)
				}
				seedInstruction(t, pool, where+"-new", where, time.Hour)
				all = append(all, where+"-new")
			}
			n, err := outbox.DeleteDone(ctx, pool, time.Now().Add(-30*24*time.Hour), tt.limit)
			if err != nil || n != int64(len(tt.gone)) {
				t.Fatalf("deleted %d (%v), want %d", n, err, len(tt.gone))
			}
			for _, id := range all {
				var keys, attempts int
				if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payment_outbox_keys WHERE instruction_id = $1),
					(SELECT count(*) FROM payment_outbox_attempts WHERE instruction_id = $1)`, id).Scan(&keys, &attempts); err != nil {
					t.Fatal(err)
				}
				want := 1
				if slices.Contains(tt.gone, id) {
					want = 0
				}
				if keys != want || attempts != 2*want {
					t.Errorf("%s: %d keys and %d attempts left, want %d and %d", id, keys, attempts, want, 2*want)
				}
			}
		})
	}
}

// TestAttemptsStayAppendOnly: outside the retention's transaction the
// archive still refuses a delete and an update.
func TestAttemptsStayAppendOnly(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	seedInstruction(t, pool, "a", "done", time.Hour)
	for _, stmt := range []string{`DELETE FROM payment_outbox_attempts`, `UPDATE payment_outbox_attempts SET state = 'FAILED'`} {
		if _, err := pool.Exec(context.Background(), stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused", stmt, err)
		}
	}
}

// TestDeleteDoneUsesIndexes: the batch is found by the keys' time index
// and the attempts by their outbox id, on an outbox where most keys are
// young.
func TestDeleteDoneUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	for _, stmt := range []string{
		`INSERT INTO payment_outbox_keys (instruction_id, idempotency_key, outbox_id, participant_id, sequence_id, rail_type, created_at)
		 SELECT 'i-' || g, 'k', gen_random_uuid(), 'bank', g, 'R', now() - g * interval '1 minute' FROM generate_series(1, 40000) g`,
		`INSERT INTO payment_outbox_attempts (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key, rail_type, payload, attempt_no, state)
		 SELECT k.outbox_id, k.instruction_id, 'bank', k.sequence_id, 'k', 'R', '{}', 1, 'DISPATCHED' FROM payment_outbox_keys k`,
		`ANALYZE payment_outbox_keys`, `ANALYZE payment_outbox_attempts`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	plan := pgtest.Plans(t, pool, true, func(ctx context.Context, tx pgx.Tx) error {
		_, err := outbox.DeleteDone(ctx, tx, time.Now().Add(-30*24*time.Hour), 1000)
		return err
	})
	for _, index := range []string{"payment_outbox_keys_created_idx", "ix_attempts_by_outbox"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the delete does not use %s:\n%s", index, plan)
		}
	}
	for _, table := range []string{"payment_outbox_keys", "payment_outbox_attempts"} {
		if strings.Contains(plan, "Seq Scan on "+table) {
			t.Errorf("the delete scans %s:\n%s", table, plan)
		}
	}
}
