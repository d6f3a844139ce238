package dispatch_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/queue"
)

// TestLeaseModeOneDispatcherAtATime: several replicas in lease mode on one
// database never run a cycle at the same time, and between them they
// dispatch every item exactly once.
func TestLeaseModeOneDispatcherAtATime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.q.UpdateConfig(ctx, itemType, map[string]string{"dispatch_interval_secs": "1", "batch_size": "25", "jitter_window_ms": "0"}); err != nil {
		t.Fatal(err)
	}
	f.enqueue(t, 100, time.Now().Add(-time.Second))

	var running, maxRunning, cycles atomic.Int32
	runCtx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 {
		r := mustLeaseRunner(t, dispatch.LeaseConfig{
			DB: f.pool, Acts: f.act, ItemTypes: []string{itemType},
			Holder: "replica-" + string(rune('a'+i)), AtLeast: 100 * time.Millisecond,
			OnCycle: func(_ string, begin bool) {
				if begin {
					n := running.Add(1)
					for {
						m := maxRunning.Load()
						if n <= m || maxRunning.CompareAndSwap(m, n) {
							break
						}
					}
					cycles.Add(1)
					time.Sleep(50 * time.Millisecond) // long enough for an overlap to show
					return
				}
				running.Add(-1)
			},
		})
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(runCtx) }()
	}
	wg.Wait()
	if m := maxRunning.Load(); m != 1 {
		t.Fatalf("%d cycles ran at once, want 1", m)
	}
	if cycles.Load() < 3 {
		t.Fatalf("only %d cycles ran", cycles.Load())
	}
	d, err := f.q.Depth(ctx, itemType)
	if err != nil || d.ByStatus[queue.StatusDispatched] != 100 {
		t.Fatalf("depth %v %v", d.ByStatus, err)
	}
	for id, n := range f.eng.starts {
		if n != 1 {
			t.Fatalf("%s started %d times", id, n)
		}
	}
}

// TestLeaseOfCrashedHolderExpires: a lease whose holder vanished blocks
// dispatch only until it runs out.
func TestLeaseOfCrashedHolderExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, 1, time.Now().Add(-time.Second))
	if _, err := f.pool.Exec(ctx, `INSERT INTO dispatch_lease (name, holder, locked_at, lease_until)
		VALUES ('dispatch-TASK', 'crashed', now(), now() + interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	r := mustLeaseRunner(t, dispatch.LeaseConfig{DB: f.pool, Acts: f.act, Holder: "survivor", ItemTypes: []string{itemType}})
	if _, ran, err := r.Tick(ctx, itemType, time.Second); err != nil || ran {
		t.Fatalf("ran under another's lease: %v %v", ran, err)
	}
	time.Sleep(1100 * time.Millisecond)
	res, ran, err := r.Tick(ctx, itemType, time.Second)
	if err != nil || !ran || res.Dispatch.Started != 1 {
		t.Fatalf("after expiry: ran %v, %+v, %v", ran, res, err)
	}
}

func mustLeaseRunner(t *testing.T, c dispatch.LeaseConfig) *dispatch.LeaseRunner {
	t.Helper()
	r, err := dispatch.NewLeaseRunner(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
