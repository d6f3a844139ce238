package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
)

// TestClaimIsAtomic: the claim deletes the pending rows and inserts their
// DISPATCHING attempts (and in-flight rows) in one statement: a crash
// before the commit leaves neither, a commit both.
func TestClaimIsAtomic(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	for i := range 3 {
		enqueue(t, pool, instruction("bank-a", i))
	}
	counts := func() [3]int {
		return [3]int{
			countRows(t, pool, `SELECT count(*) FROM payment_outbox_pending`),
			countRows(t, pool, `SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHING'`),
			countRows(t, pool, `SELECT count(*) FROM payment_outbox_inflight`),
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := outbox.ClaimInTx(ctx, tx, "crashing-relayer", 10)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("claim: %d, %v", len(msgs), err)
	}
	var inside [3]int
	for i, sql := range []string{
		`SELECT count(*) FROM payment_outbox_pending`,
		`SELECT count(*) FROM payment_outbox_attempts WHERE state = 'DISPATCHING' AND attempt_no = 1`,
		`SELECT count(*) FROM payment_outbox_inflight`,
	} {
		if err := tx.QueryRow(ctx, sql).Scan(&inside[i]); err != nil {
			t.Fatal(err)
		}
	}
	if inside != [3]int{0, 3, 3} {
		t.Fatalf("inside the claim: pending, dispatching, in flight = %v", inside)
	}
	if got := counts(); got != [3]int{3, 0, 0} {
		t.Fatalf("others see %v before the commit", got)
	}
	// The relayer dies before its commit.
	pid := conn.Conn().PgConn().PID()
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	// Its rows are unlocked only once its backend has gone: a claim before
	// that skips them (SKIP LOCKED), though its rows already read as before.
	eventually(t, 5*time.Second, "the crashed claim to be gone", func() bool {
		var alive int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&alive)
		return alive == 0 && counts() == [3]int{3, 0, 0}
	})

	msgs, err = outbox.ClaimOnly(ctx, pool, "r1", 10)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("claim: %d, %v", len(msgs), err)
	}
	if got := counts(); got != [3]int{0, 3, 3} {
		t.Fatalf("after a committed claim: %v", got)
	}
	for _, m := range msgs {
		if m.Attempt != 1 {
			t.Fatalf("attempt %d", m.Attempt)
		}
	}
}

// TestConcurrentClaimsAreDisjoint: claimers side by side never take the
// same row, and together take all.
func TestConcurrentClaimsAreDisjoint(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	var ins []outbox.Instruction
	for i := range 1000 {
		ins = append(ins, instruction(fmt.Sprintf("bank-%d", i%7), i))
	}
	outboxtest.Enqueue(t, pool, ins)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for {
				msgs, err := outbox.ClaimOnly(context.Background(), pool, fmt.Sprintf("r%d", w), 37)
				if err != nil {
					t.Error(err)
					return
				}
				if len(msgs) == 0 {
					return
				}
				mu.Lock()
				for _, m := range msgs {
					seen[m.InstructionID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 1000 {
		t.Fatalf("%d claimed, want 1000", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s claimed %d times", id, n)
		}
	}
}

// TestStrictClaim: a strict participant has at most one instruction in
// flight, always its lowest pending sequence, whoever claims.
func TestStrictClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type step struct {
		do   string  // "claim", "reap" (take every claim back), "delay" (push seq 1 into the future)
		want []int64 // sequences claimed, over all participants, sorted
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, e *strictEnv)
		steps []step
	}{
		{
			name:  "one at a time, the head first",
			setup: func(t *testing.T, e *strictEnv) { e.strict(t, "bank-a", 3) },
			steps: []step{{"claim", []int64{1}}, {"claim", nil}, {"claim", nil}},
		},
		{
			name:  "a head taken back is the head again",
			setup: func(t *testing.T, e *strictEnv) { e.strict(t, "bank-a", 3) },
			steps: []step{{"claim", []int64{1}}, {"reap", nil}, {"claim", []int64{1}}},
		},
		{
			name:  "a head backing off blocks the rest",
			setup: func(t *testing.T, e *strictEnv) { e.strict(t, "bank-a", 3) },
			steps: []step{{"delay", nil}, {"claim", nil}},
		},
		{
			name: "one head per participant in one claim",
			setup: func(t *testing.T, e *strictEnv) {
				e.strict(t, "bank-a", 2)
				e.strict(t, "bank-b", 2)
				e.strict(t, "bank-c", 2)
			},
			steps: []step{{"claim", []int64{1, 1, 1}}, {"claim", nil}},
		},
		{
			name: "throughput rows beside it go in parallel",
			setup: func(t *testing.T, e *strictEnv) {
				e.strict(t, "bank-a", 2)
				for i := range 3 {
					enqueue(t, e.pool, instruction("bank-t", i))
				}
			},
			steps: []step{{"claim", []int64{1, 1, 2, 3}}, {"claim", nil}},
		},
		{
			name: "strict rows wait for the participant's older throughput rows",
			setup: func(t *testing.T, e *strictEnv) {
				enqueue(t, e.pool, instruction("bank-a", 0)) // throughput, sequence 1
				e.strict(t, "bank-a", 2)                     // sequences 2, 3
			},
			steps: []step{{"delay", nil}, {"claim", nil}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &strictEnv{pool: newPool(t)}
			tt.setup(t, e)
			for i, s := range tt.steps {
				var got []int64
				switch s.do {
				case "claim":
					msgs, err := outbox.ClaimOnly(ctx, e.pool, "r1", 10)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range msgs {
						got = append(got, m.SequenceID)
					}
				case "reap":
					if _, err := outbox.Reap(ctx, e.pool, 0, 100); err != nil {
						t.Fatal(err)
					}
				case "delay":
					if _, err := e.pool.Exec(ctx, `UPDATE payment_outbox_pending SET next_attempt_at = now() + interval '1 hour' WHERE sequence_id = 1`); err != nil {
						t.Fatal(err)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d (%s): claimed %v, want %v", i, s.do, got, s.want)
				}
			}
		})
	}
}

type strictEnv struct{ pool *pgxpool.Pool }

func (e *strictEnv) strict(t *testing.T, participant string, n int) {
	t.Helper()
	if err := outbox.SetOrdering(context.Background(), e.pool, participant, outbox.Strict); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		enqueue(t, e.pool, instruction(participant, 100+i))
	}
}

// TestStrictClaimsSideBySide: many claimers at once take exactly one head
// per strict participant.
func TestStrictClaimsSideBySide(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	e := &strictEnv{pool: pool}
	for p := range 5 {
		e.strict(t, fmt.Sprintf("bank-%d", p), 4)
	}
	var mu sync.Mutex
	got := map[string][]int64{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 3 {
				msgs, err := outbox.ClaimOnly(ctx, pool, fmt.Sprintf("r%d", w), 10)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range msgs {
					got[m.ParticipantID] = append(got[m.ParticipantID], m.SequenceID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != 5 {
		t.Fatalf("claimed for %d participants, want 5: %v", len(got), got)
	}
	for p, seqs := range got {
		if !slices.Equal(seqs, []int64{1}) {
			t.Fatalf("%s: claimed %v, want [1]", p, seqs)
		}
	}
}
