package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/outbox"
)

// TestHotQueriesUseIndexes checks the plans of the hot statements on an
// outbox big enough that a scan would show: 20,000 pending rows (a fifth
// strict), 2,000 in flight, a 40,000-row archive.
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
	enqueueMany(t, pool, ins)
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
	// The relayer runs the claims with generic plans (plan_cache_mode
	// auto, once they are prepared): those are checked too.
	generic, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer generic.Release()
	if _, err := generic.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer generic.Exec(ctx, `RESET plan_cache_mode`) //nolint:errcheck
	tests := []struct {
		stmt             outbox.Statement
		analyze, generic bool
		indexes          []string // each must appear in the plan
	}{
		{outbox.StmtClaim, true, false, []string{"ix_pending_due", "payment_outbox_pending_pkey"}},
		{outbox.StmtClaim, true, true, []string{"ix_pending_due", "payment_outbox_pending_pkey"}},
		{outbox.StmtStrictClaim, true, false, []string{"ix_pending_strict", "payment_outbox_pending_participant_id_sequence_id_key", "ix_inflight_strict"}},
		{outbox.StmtStrictClaim, true, true, []string{"ix_pending_strict", "payment_outbox_pending_participant_id_sequence_id_key", "ix_inflight_strict"}},
		{outbox.StmtReap, false, false, []string{"ix_inflight_claimed", "payment_outbox_inflight_pkey", "ix_attempts_by_outbox"}},
		{outbox.StmtKeyLookup, false, false, []string{"payment_outbox_keys_pkey"}},
		{outbox.StmtEnqueue, true, false, []string{"outbox_enqueue"}}, // its statements: the key lookup's, and by key
		{outbox.StmtNextDue, false, false, []string{"ix_pending_due", "ix_pending_strict_due"}},
		{outbox.StmtRecord, false, false, []string{"payment_outbox_inflight_pkey"}},
	}
	for _, tt := range tests {
		name, db := string(tt.stmt), outbox.Beginner(pool)
		if tt.generic {
			name, db = name+"/generic-plan", generic
		}
		t.Run(name, func(t *testing.T) {
			plan, err := outbox.Explain(ctx, db, tt.stmt, tt.analyze)
			if err != nil {
				t.Fatal(err)
			}
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
				t.Logf("%s:\n%s", tt.stmt, plan)
			}
		})
	}
	// EXPLAIN ANALYZE ran the claims and an enqueue, rolled back.
	if d := depth(t, pool); d.Pending != 20_000 || d.InFlight != 2000 {
		t.Fatalf("explain changed the outbox: %+v", d)
	}
}
