package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/explain"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
)

// TestHotQueriesUseIndexes checks the plans of the hot statements, as the
// outbox sends them (pgtest.Plans explains each statement the operation
// runs, on a transaction rolled back at the end), on an outbox big enough
// that a scan would show: 20,000 pending rows (a fifth strict), 2,000 in
// flight, a 40,000-row archive.
func TestHotQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	for p := range 20 {
		if p%5 == 0 {
			if err := outbox.SetOrdering(ctx, pool, fmt.Sprintf("bank-%02d", p), outbox.Strict); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ins []outbox.Instruction
	for i := range 22_000 {
		ins = append(ins, instruction(fmt.Sprintf("bank-%02d", i%20), i))
	}
	outboxtest.Enqueue(t, pool, ins)
	if _, err := outbox.ClaimOnly(ctx, pool, "busy", 2000); err != nil {
		t.Fatal(err)
	}
	// An archive with history: settled attempts of other instructions.
	if _, err := pool.Exec(ctx, `
		INSERT INTO payment_outbox_attempts (outbox_id, instruction_id, participant_id, sequence_id, idempotency_key,
		                                     rail_type, payload, attempt_no, state, claimed_at, completed_at)
		SELECT gen_random_uuid(), 'old-' || g, 'bank-old', g, 'k-' || g, 'R', '{}', 1,
		       CASE WHEN g % 2 = 0 THEN 'DISPATCHING' ELSE 'DISPATCHED' END, now() - interval '1 day', now()
		FROM generate_series(1, 40000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE payment_outbox_pending; ANALYZE payment_outbox_inflight;
		ANALYZE payment_outbox_attempts; ANALYZE payment_outbox_keys`); err != nil {
		t.Fatal(err)
	}

	// The strict participants all have a head in flight (the 2,000
	// claimed above): their strict claim finds them and claims nothing.
	claim := func(mode outbox.Ordering) func(ctx context.Context, tx pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			msgs, err := outbox.ClaimModeInTx(ctx, tx, mode, "explain", 200)
			if err == nil && mode == outbox.Throughput && len(msgs) != 200 {
				err = fmt.Errorf("the throughput claim claimed %d of 200", len(msgs))
			}
			return err
		}
	}
	tests := []struct {
		name             string
		analyze, generic bool
		op               func(ctx context.Context, tx pgx.Tx) error
		indexes          []string // each must appear in the plan
	}{
		{"claim", true, false, claim(outbox.Throughput), []string{"ix_pending_due", "payment_outbox_pending_pkey"}},
		// The relayer runs the claims with generic plans (plan_cache_mode
		// auto, once they are prepared): those are checked too.
		{"claim", true, true, claim(outbox.Throughput), []string{"ix_pending_due", "payment_outbox_pending_pkey"}},
		{"strict-claim", true, false, claim(outbox.Strict), []string{"ix_pending_strict", "payment_outbox_pending_participant_id_sequence_id_key", "ix_inflight_strict"}},
		{"strict-claim", true, true, claim(outbox.Strict), []string{"ix_pending_strict", "payment_outbox_pending_participant_id_sequence_id_key", "ix_inflight_strict"}},
		{"reap", false, false, func(ctx context.Context, tx pgx.Tx) error {
			_, err := outbox.Reap(ctx, tx, 2*time.Minute, 500)
			return err
		}, []string{"ix_inflight_claimed", "payment_outbox_inflight_pkey", "ix_attempts_by_outbox"}},
		{"key-lookup", false, false, func(ctx context.Context, tx pgx.Tx) error {
			if _, _, err := outbox.Lookup(ctx, tx, "explain-instruction", "explain-key"); !errors.Is(err, outbox.ErrNotFound) {
				return fmt.Errorf("lookup of a key never enqueued: %v", err)
			}
			return nil
		}, []string{"payment_outbox_keys_pkey"}},
		// Its statements (the key lookup's, and by key) run inside the
		// function: the plan shows the call.
		{"enqueue", true, false, func(ctx context.Context, tx pgx.Tx) error {
			_, _, _, err := outbox.Enqueue(ctx, tx, instruction("bank-explain", 1))
			return err
		}, []string{"outbox_enqueue"}},
		{"next-due", false, false, func(ctx context.Context, tx pgx.Tx) error {
			_, err := outbox.NextDue(ctx, tx)
			return err
		}, []string{"ix_pending_due", "ix_pending_strict_due"}},
		// An outcome batch for two claims made in the same transaction
		// (the claim's plan is in the text too; the record's index is the
		// in-flight table's key, which no claim uses).
		{"record", false, false, func(ctx context.Context, tx pgx.Tx) error {
			msgs, err := outbox.ClaimModeInTx(ctx, tx, outbox.Throughput, "explain", 2)
			if err != nil {
				return err
			}
			n, err := outbox.RecordInTx(ctx, tx, msgs)
			if err == nil && n != 2 {
				err = fmt.Errorf("recorded %d of 2 outcomes", n)
			}
			return err
		}, []string{"payment_outbox_inflight_pkey"}},
	}
	for _, tt := range tests {
		name := tt.name
		if tt.generic {
			name += "/generic-plan"
		}
		t.Run(name, func(t *testing.T) {
			plan := pgtest.PlansWith(t, pool, explain.Options{Analyze: tt.analyze, Generic: tt.generic}, tt.op)
			for _, idx := range tt.indexes {
				if !strings.Contains(plan, idx) {
					t.Errorf("plan does not use %s:\n%s", idx, plan)
				}
			}
			for _, table := range []string{"payment_outbox_pending", "payment_outbox_inflight", "payment_outbox_attempts", "payment_outbox_keys"} {
				if strings.Contains(plan, "Seq Scan on "+table) {
					t.Errorf("plan scans %s:\n%s", table, plan)
				}
			}
			if testing.Verbose() {
				t.Logf("%s:\n%s", name, plan)
			}
		})
	}
	// Everything explained, and run, was rolled back.
	if d := depth(t, pool); d.Pending != 20_000 || d.InFlight != 2000 {
		t.Fatalf("explain changed the outbox: %+v", d)
	}
}
