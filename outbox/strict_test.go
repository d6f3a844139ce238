package outbox_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/outbox/outboxtest"
)

// TestStrictOrderWithSeveralRelayers: three relayers, strict participants
// beside a throughput one, a rail that fails some sends (retryable, or
// cut off before or after arriving): every instruction reaches the rail
// once, and each strict participant's in sequence, one at a time.
func TestStrictOrderWithSeveralRelayers(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	strict := []string{"bank-s1", "bank-s2", "bank-s3", "bank-s4"}
	const perParticipant = 40
	for _, p := range strict {
		if err := outbox.SetOrdering(ctx, pool, p, outbox.Strict); err != nil {
			t.Fatal(err)
		}
	}
	var ins []outbox.Instruction
	for i := range perParticipant {
		for _, p := range append(strict, "bank-t") {
			ins = append(ins, instruction(p, i))
		}
	}
	f := newFakeRail()
	f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		if n > 1 {
			return outbox.Result{Outcome: outbox.Delivered}, true
		}
		switch hash(m.IdempotencyKey) % 8 {
		case 0, 1:
			return res(outbox.Retryable, "503"), false
		case 2:
			return res(outbox.Unknown, "CONN_RESET"), false // cut before it arrived
		case 3:
			return res(outbox.Unknown, "TIMEOUT"), true // cut after it arrived
		}
		return outbox.Result{Outcome: outbox.Delivered}, true
	}
	for r := range 3 {
		cfg := fastConfig(pool, f)
		cfg.ID = fmt.Sprintf("relayer-%d", r)
		cfg.PollInterval = 20 * time.Millisecond
		startRelayer(t, cfg)
	}
	outboxtest.Enqueue(t, pool, ins)
	eventually(t, 60*time.Second, "every instruction delivered", func() bool {
		d := depth(t, pool)
		return d.Pending == 0 && d.InFlight == 0
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.received) != len(ins) {
		t.Fatalf("%d received, want %d", len(f.received), len(ins))
	}
	for k, n := range f.received {
		if n != 1 {
			t.Fatalf("%s arrived %d times", k, n)
		}
	}
	want := make([]int64, perParticipant)
	for i := range want {
		want[i] = int64(i + 1)
	}
	for _, p := range strict {
		if !slices.Equal(f.order[p], want) {
			t.Fatalf("%s arrived in order %v", p, f.order[p])
		}
		if f.partMax[p] != 1 {
			t.Fatalf("%s had %d sends at once", p, f.partMax[p])
		}
	}
	if n := countRows(t, pool, `SELECT count(DISTINCT relayer_id) FROM payment_outbox_attempts WHERE participant_id LIKE 'bank-s%'`); n < 2 {
		t.Errorf("strict participants served by %d relayers; the test wants several", n)
	}
	// Chained claims: a head claimed in the transaction that settled its
	// predecessor (same now()).
	chained := countRows(t, pool, `
		SELECT count(*) FROM payment_outbox_attempts c
		WHERE c.state = 'DISPATCHING' AND c.participant_id LIKE 'bank-s%'
		  AND EXISTS (SELECT 1 FROM payment_outbox_attempts p
		              WHERE p.participant_id = c.participant_id AND p.sequence_id = c.sequence_id - 1
		                AND p.state IN ('DISPATCHED', 'FAILED') AND p.completed_at = c.claimed_at)`)
	if chained == 0 {
		t.Error("no strict head was claimed in its predecessor's outcome transaction")
	}
	t.Logf("%d of %d strict heads claimed by chaining", chained, len(strict)*perParticipant)
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
