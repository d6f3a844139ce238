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

// batchRail is a fakeRail that takes a lane's messages in one call, as
// the Kafka event sender does: it sends them in order through the fake
// and, as the BatchSender contract asks, lets nothing after a message
// that failed arrive (Retryable, unsent), unless afterFailure says what
// the rest get.
type batchRail struct {
	*fakeRail
	mu    sync.Mutex
	calls [][]outbox.Message
	// block, when set, is called at the start of each call (numbered from
	// 1); the call waits for it to return.
	block func(call int)
	// afterFailure answers the messages after a failed one (default:
	// Retryable, not arrived).
	afterFailure func(m outbox.Message) (outbox.Result, bool)
}

func (b *batchRail) Batches(railType string) bool { return railType == rail }

func (b *batchRail) SendBatch(ctx context.Context, ms []outbox.Message) []outbox.Result {
	b.mu.Lock()
	b.calls = append(b.calls, slices.Clone(ms))
	call := len(b.calls)
	block := b.block
	b.mu.Unlock()
	res := make([]outbox.Result, len(ms))
	failed := false
	for i, m := range ms {
		if !failed {
			res[i] = b.fakeRail.Send(ctx, m)
			failed = res[i].Outcome != outbox.Delivered
			continue
		}
		r, arrived := outbox.Result{Outcome: outbox.Retryable, Code: "BEHIND"}, false
		if b.afterFailure != nil {
			r, arrived = b.afterFailure(m)
		}
		b.fakeRail.mu.Lock()
		b.fakeRail.sends[m.IdempotencyKey]++
		if arrived {
			if b.fakeRail.received[m.IdempotencyKey] == 0 {
				b.fakeRail.order[m.ParticipantID] = append(b.fakeRail.order[m.ParticipantID], m.SequenceID)
			}
			b.fakeRail.received[m.IdempotencyKey]++
		}
		b.fakeRail.mu.Unlock()
		res[i] = r
	}
	if block != nil {
		block(call)
	}
	return res
}

// snapshotCalls returns the calls made so far.
func (b *batchRail) snapshotCalls() [][]outbox.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// checkCalls fails unless every call held one participant's messages in
// increasing sequence, and says how many calls and the largest.
func checkCalls(t *testing.T, calls [][]outbox.Message) (largest int) {
	t.Helper()
	for _, ms := range calls {
		for i := 1; i < len(ms); i++ {
			if ms[i].ParticipantID != ms[0].ParticipantID || ms[i].SequenceID <= ms[i-1].SequenceID {
				t.Fatalf("a call mixes lanes or goes back: %v", seqs(ms))
			}
		}
		largest = max(largest, len(ms))
	}
	return largest
}

func seqs(ms []outbox.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s/%d", m.ParticipantID, m.SequenceID)
	}
	return out
}

func strictLanes(t *testing.T, ctx context.Context, pool outbox.DBTX, lanes []string) {
	t.Helper()
	for _, p := range lanes {
		if err := outbox.SetOrdering(ctx, pool, p, outbox.Strict); err != nil {
			t.Fatal(err)
		}
	}
}

func oneToN(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestLaneBatchManyLanes: 12 strict lanes enqueued while two relayers run
// with a batching rail that fails a tenth of first sends (everything
// behind the failure in the call stays unsent): every message arrives
// once, each lane's in sequence, a lane one call at a time, and calls
// carry more than one message of a lane.
func TestLaneBatchManyLanes(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	var lanes []string
	for i := range 12 {
		lanes = append(lanes, fmt.Sprintf("lane-%02d", i))
	}
	strictLanes(t, ctx, pool, lanes)
	f := newFakeRail()
	f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
		if n == 1 && hash(m.IdempotencyKey)%10 == 0 {
			return res(outbox.Retryable, "503"), false
		}
		return outbox.Result{Outcome: outbox.Delivered}, true
	}
	b := &batchRail{fakeRail: f}
	for r := range 2 {
		cfg := fastConfig(pool, b)
		cfg.ID = fmt.Sprintf("relayer-%d", r)
		cfg.LaneBatchSize = 20
		startRelayer(t, cfg)
	}
	const perLane = 80
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Go(func() {
			// In chunks, so that claims find lanes part-way filled.
			for c := range 4 {
				var ins []outbox.Instruction
				for i := range perLane / 4 {
					ins = append(ins, instruction(l, c*perLane/4+i))
				}
				outboxtest.Enqueue(t, pool, ins)
			}
		})
	}
	wg.Wait()
	eventually(t, 60*time.Second, "every message delivered", func() bool {
		d := depth(t, pool)
		return d.Pending == 0 && d.InFlight == 0
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.received) != len(lanes)*perLane {
		t.Fatalf("%d received, want %d", len(f.received), len(lanes)*perLane)
	}
	for k, n := range f.received {
		if n != 1 {
			t.Fatalf("%s arrived %d times", k, n)
		}
	}
	for _, l := range lanes {
		if !slices.Equal(f.order[l], oneToN(perLane)) {
			t.Fatalf("%s arrived in order %v", l, f.order[l])
		}
		if f.partMax[l] != 1 {
			t.Fatalf("%s had %d sends at once, want 1", l, f.partMax[l])
		}
	}
	calls := b.snapshotCalls()
	largest := checkCalls(t, calls)
	if largest < 2 || len(calls) >= len(lanes)*perLane {
		t.Fatalf("%d calls for %d messages, the largest of %d: lanes not batched", len(calls), len(lanes)*perLane, largest)
	}
	if largest > 20 {
		t.Fatalf("a call of %d messages, above LaneBatchSize 20", largest)
	}
}

// TestLaneBatchPartialFailure: the 4th message of a lane's first call
// fails. It and every message after it stay pending, in order, and go
// again; the lane arrives in order. When the rail did take the messages
// after the failure (it answered them Delivered), they are requeued
// behind it marked for inquiry, which finds them: not sent twice.
func TestLaneBatchPartialFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		restArrive bool
		wantSends  int // sends of the messages after the failed one
	}{
		{"rest unsent", false, 2},
		{"rest taken", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := newPool(t)
			ctx := context.Background()
			strictLanes(t, ctx, pool, []string{"lane-a"})
			const n = 10
			var ins []outbox.Instruction
			for i := range n {
				ins = append(ins, instruction("lane-a", i))
			}
			outboxtest.Enqueue(t, pool, ins)
			failKey := ins[3].IdempotencyKey
			f := newFakeRail()
			f.send = func(m outbox.Message, n int) (outbox.Result, bool) {
				if m.IdempotencyKey == failKey && n == 1 {
					return res(outbox.Retryable, "503"), false
				}
				return outbox.Result{Outcome: outbox.Delivered}, true
			}
			b := &batchRail{fakeRail: f}
			if tc.restArrive {
				b.afterFailure = func(outbox.Message) (outbox.Result, bool) {
					return outbox.Result{Outcome: outbox.Delivered}, true
				}
			}
			cfg := fastConfig(pool, b)
			cfg.LaneBatchSize = 50
			startRelayer(t, cfg)
			eventually(t, 30*time.Second, "every message delivered", func() bool {
				d := depth(t, pool)
				return d.Pending == 0 && d.InFlight == 0
			})
			calls := b.snapshotCalls()
			checkCalls(t, calls)
			if len(calls) == 0 || len(calls[0]) != n {
				t.Fatalf("first call %v, want the lane's %d together", calls, n)
			}
			f.mu.Lock()
			order := slices.Clone(f.order["lane-a"])
			sends := cloneCounts(f.sends)
			f.mu.Unlock()
			if !tc.restArrive && !slices.Equal(order, oneToN(n)) {
				t.Fatalf("arrived in order %v", order)
			}
			for i, in := range ins {
				want := 1
				if i == 3 {
					want = 2
				} else if i > 3 {
					want = tc.wantSends
				}
				if sends[in.IdempotencyKey] != want {
					t.Fatalf("message %d sent %d times, want %d", i+1, sends[in.IdempotencyKey], want)
				}
				if got := lastState(t, pool, in.InstructionID); got != outbox.StateDispatched {
					t.Fatalf("message %d ends %s", i+1, got)
				}
			}
			// The outbox's record of the lane: the messages after the
			// failed one were put behind it, none settled ahead of it.
			for _, in := range ins[4:] {
				as, err := outbox.Attempts(ctx, pool, in.InstructionID)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(as, func(a outbox.Attempt) bool { return a.ErrorCode == outbox.CodeBehindFailure }) {
					t.Fatalf("%s: no %s attempt in %v", in.InstructionID, outbox.CodeBehindFailure, states(t, pool, in.InstructionID))
				}
			}
			var ahead int
			if err := pool.QueryRow(ctx, `
				SELECT count(*) FROM payment_outbox_attempts a
				JOIN payment_outbox_attempts f ON f.instruction_id = $1 AND f.state = 'DISPATCHED'
				WHERE a.participant_id = 'lane-a' AND a.state = 'DISPATCHED' AND a.sequence_id > f.sequence_id
				  AND a.completed_at < f.completed_at`, ins[3].InstructionID).Scan(&ahead); err != nil {
				t.Fatal(err)
			}
			if ahead != 0 {
				t.Fatalf("%d messages after the failed one settled before it", ahead)
			}
		})
	}
}

func cloneCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestLaneBatchCrashBetweenSendAndRecord: a relayer's second call of a
// lane reaches the rail and the relayer dies before recording it. The
// reaper requeues that call's messages for inquiry; a rail that cannot be
// asked (Kafka: NotReceived) gets them again, and only them: the first
// call's, recorded, are not sent again. The rail sees each message in
// order at its first arrival, the second call's twice (a consumer drops
// them by event id).
func TestLaneBatchCrashBetweenSendAndRecord(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	ctx := context.Background()
	strictLanes(t, ctx, pool, []string{"lane-c"})
	const n = 10
	var ins []outbox.Instruction
	for i := range n {
		ins = append(ins, instruction("lane-c", i))
	}
	outboxtest.Enqueue(t, pool, ins)
	f := newFakeRail()
	f.inquire = func(outbox.Message) (outbox.Result, bool) { return outbox.Result{Outcome: outbox.NotReceived}, true }
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hung := make(chan struct{}, 1)
	a := &batchRail{fakeRail: f, block: func(call int) {
		if call == 2 {
			hung <- struct{}{}
			<-release
		}
	}}
	cfg := fastConfig(pool, a)
	cfg.ID = "dies"
	cfg.LaneBatchSize = 4
	cfg.DisableReaper = true
	cfg.RailTimeout = 200 * time.Millisecond
	cfg.ShutdownTimeout = 10 * time.Millisecond
	stop := startRelayer(t, cfg)
	select {
	case <-hung:
	case <-time.After(30 * time.Second):
		t.Fatal("the second call never came")
	}
	stop() // its outcomes cannot be recorded: the work context is gone
	if d := depth(t, pool); d.InFlight != 4 {
		t.Fatalf("%d in flight after the crash, want the second call's 4", d.InFlight)
	}
	if got, err := outbox.Reap(ctx, pool, 0, 100); err != nil || got != 4 {
		t.Fatalf("reaped %d (%v), want 4", got, err)
	}
	b := &batchRail{fakeRail: f}
	cfg = fastConfig(pool, b)
	cfg.ID = "survivor"
	cfg.LaneBatchSize = 4
	startRelayer(t, cfg)
	eventually(t, 30*time.Second, "every message delivered", func() bool {
		d := depth(t, pool)
		return d.Pending == 0 && d.InFlight == 0
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.order["lane-c"], oneToN(n)) {
		t.Fatalf("first arrivals in order %v", f.order["lane-c"])
	}
	for i, in := range ins {
		want := 1
		if i >= 4 && i < 8 {
			want = 2
		}
		if got := f.received[in.IdempotencyKey]; got != want {
			t.Fatalf("message %d arrived %d times, want %d", i+1, got, want)
		}
	}
	checkCalls(t, b.snapshotCalls())
}
