package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
)

// reaperConfig: claims are taken back 1 s after they were made; the
// interval is long, so only the reaper's early wake-up can be that quick.
func reaperConfig(cfg outbox.Config) outbox.Config {
	cfg.ReaperTimeout, cfg.RailTimeout, cfg.ReaperInterval = time.Second, 300*time.Millisecond, time.Minute
	return cfg
}

// TestReaperRequeuesZombie: a relayer claims and dies. A live relayer's
// reaper requeues the claim for inquiry within the timeout; the inquiry
// decides: what the dead relayer had sent is never sent again, what it
// had not is sent once.
func TestReaperRequeuesZombie(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		hadSent   bool
		wantSends int
		inquiry   outbox.Outcome
	}{
		{"it had sent", true, 0, outbox.Delivered},
		{"it had not sent", false, 1, outbox.NotReceived},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			ctx := context.Background()
			in := instruction("bank-a", 1)
			enqueue(t, pool, in)
			msgs, err := outbox.ClaimOnly(ctx, pool, "dead-relayer", 10)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("claim: %v %v", msgs, err)
			}
			claimedAt := time.Now()
			f := newFakeRail()
			if tt.hadSent {
				f.received[in.IdempotencyKey] = 1
			}
			startRelayer(t, reaperConfig(fastConfig(pool, f)))
			eventually(t, 10*time.Second, "delivery", func() bool { return lastState(t, pool, in.InstructionID) == OK })
			as, _ := outbox.Attempts(ctx, pool, in.InstructionID)
			got := make([]outbox.State, len(as))
			for i, a := range as {
				got[i] = a.State
			}
			if !slices.Equal(got, []outbox.State{D, Z, D, OK}) {
				t.Fatalf("attempts %v", got)
			}
			if as[0].RelayerID != "dead-relayer" || as[1].ErrorCode != outbox.CodeZombieRequeue || as[3].InquiryOutcome != tt.inquiry {
				t.Fatalf("attempts %+v", as)
			}
			if as[2].AttemptNo != 2 || as[3].SequenceID != 1 || as[3].OutboxID != msgs[0].OutboxID {
				t.Fatalf("requeue changed identity: %+v", as[3])
			}
			if took := as[1].CompletedAt.Sub(as[0].ClaimedAt); took < time.Second || took > 1800*time.Millisecond {
				t.Errorf("zombie requeued %v after its claim, want about the 1 s timeout", took)
			}
			_ = claimedAt
			if n := f.count(f.sends, in.IdempotencyKey); n != tt.wantSends {
				t.Errorf("%d sends, want %d", n, tt.wantSends)
			}
			if n := f.count(f.inquiries, in.IdempotencyKey); n != 1 {
				t.Errorf("%d inquiries, want 1", n)
			}
		})
	}
}

// TestReapersSideBySide: reapers running at once requeue each zombie
// exactly once.
func TestReapersSideBySide(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	var ins []outbox.Instruction
	for i := range 300 {
		ins = append(ins, instruction(fmt.Sprintf("bank-%d", i%5), i))
	}
	outboxtest.Enqueue(t, pool, ins)
	if msgs, err := outbox.ClaimOnly(ctx, pool, "dead", 300); err != nil || len(msgs) != 300 {
		t.Fatalf("claim %d %v", len(msgs), err)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			n, err := outbox.Reap(ctx, pool, 0, 40)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != 300 {
		t.Fatalf("reaped %d, want 300", total)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM (SELECT outbox_id FROM payment_outbox_attempts WHERE state = 'ZOMBIE_REQUEUE' GROUP BY outbox_id HAVING count(*) = 1) x`); n != 300 {
		t.Fatalf("%d outbox ids with exactly one ZOMBIE_REQUEUE", n)
	}
	if n := countRows(t, pool, `SELECT count(*) FROM payment_outbox_pending WHERE inquire AND attempt_count = 1`); n != 300 {
		t.Fatalf("%d requeued for inquiry", n)
	}
	if n, err := outbox.Reap(ctx, pool, 0, 40); err != nil || n != 0 {
		t.Fatalf("reaping again: %d %v", n, err)
	}
}

// TestReaperFreesStrictParticipant: a strict participant whose head was
// in flight with a dead relayer goes on, in order, once the reaper took
// the head back.
func TestReaperFreesStrictParticipant(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	if err := outbox.SetOrdering(ctx, pool, "bank-a", outbox.Strict); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		enqueue(t, pool, instruction("bank-a", i))
	}
	if msgs, err := outbox.ClaimOnly(ctx, pool, "dead", 10); err != nil || len(msgs) != 1 {
		t.Fatalf("claim %v %v", msgs, err)
	}
	f := newFakeRail()
	f.received["key-bank-a-ins-00000"] = 1 // the dead relayer had sent it
	startRelayer(t, reaperConfig(fastConfig(pool, f)))
	eventually(t, 10*time.Second, "4 deliveries", func() bool {
		d := depth(t, pool)
		return d.Pending == 0 && d.InFlight == 0
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.order["bank-a"]; !slices.Equal(got, []int64{2, 3, 4}) { // 1 arrived before the test's rail saw it
		t.Fatalf("order at the rail %v, want [2 3 4]", got)
	}
	if f.sends["key-bank-a-ins-00000"] != 0 {
		t.Fatal("the head was sent again")
	}
}

// TestHookFailureLeavesItForTheReaper: a hook that refuses one message
// rolls back only that one (the batch is split); it stays in flight, the
// reaper requeues it for inquiry, the inquiry finds it delivered, and the
// hook then takes it. Nothing is sent twice; the hook commits each once.
func TestHookFailureLeavesItForTheReaper(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	f := newFakeRail()
	h := &hookLog{fail: func(d outbox.Delivery) error {
		if d.Message.InstructionID == "bank-a-ins-00003" && d.Message.Attempt == 1 {
			return errHook
		}
		return nil
	}}
	var ins []outbox.Instruction
	for i := range 10 {
		ins = append(ins, instruction("bank-a", i))
	}
	outboxtest.Enqueue(t, pool, ins)
	cfg := reaperConfig(fastConfig(pool, f))
	cfg.ReaperTimeout, cfg.RailTimeout = 3*time.Second, time.Second
	cfg.Hooks = h.hooks()
	cfg.RecordLinger = 50 * time.Millisecond // all ten in one batch
	startRelayer(t, cfg)
	eventually(t, 15*time.Second, "10 deliveries recorded", func() bool {
		d, _ := h.snapshot()
		return len(d) == 10
	})
	delivered, _ := h.snapshot()
	seen := map[string]int{}
	for _, d := range delivered {
		seen[d.Message.InstructionID]++
	}
	for _, in := range ins {
		if seen[in.InstructionID] != 1 || f.count(f.sends, in.IdempotencyKey) != 1 {
			t.Fatalf("%s: hook %d times, sent %d times", in.InstructionID, seen[in.InstructionID], f.count(f.sends, in.IdempotencyKey))
		}
	}
	// The hook runs in the recording transaction: the last delivery can
	// be seen before its archive row commits.
	eventually(t, 15*time.Second, "the deliveries archived", func() bool {
		for _, id := range []string{"bank-a-ins-00003", "bank-a-ins-00004"} {
			if got := states(t, pool, id); len(got) == 0 || got[len(got)-1] != OK {
				return false
			}
		}
		return true
	})
	if got := states(t, pool, "bank-a-ins-00003"); !slices.Equal(got, []outbox.State{D, Z, D, OK}) {
		t.Fatalf("the refused one: %v", got)
	}
	if got := states(t, pool, "bank-a-ins-00004"); !slices.Equal(got, []outbox.State{D, OK}) {
		t.Fatalf("a neighbour: %v", got)
	}
}
