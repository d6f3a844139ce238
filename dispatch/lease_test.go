package dispatch_test

import (
	"context"
	"strconv"
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

// TestCycleClaimsAgainWhileFull: batch_size bounds a claim, not a cycle.
// A cycle whose claims come back full claims again, so items due faster
// than batch_size a cycle are all dispatched in it, each exactly once,
// each claim its own batch.
func TestCycleClaimsAgainWhileFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		due, batch, claims int
	}{
		{"two and a half claims", 120, 50, 3},
		{"exactly full, then an empty claim", 100, 50, 2},
		{"one claim not full", 30, 50, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ctx := context.Background()
			if _, err := f.q.UpdateConfig(ctx, itemType, map[string]string{
				"dispatch_interval_secs": "10", "batch_size": strconv.Itoa(tc.batch), "jitter_window_ms": "0",
			}); err != nil {
				t.Fatal(err)
			}
			f.enqueue(t, tc.due, time.Now().Add(-time.Second))
			res, err := f.act.RunCycle(ctx, itemType)
			if err != nil {
				t.Fatal(err)
			}
			if res.Dispatch.Claimed != tc.due || res.Dispatch.Started != tc.due {
				t.Fatalf("claimed %d, started %d, want %d", res.Dispatch.Claimed, res.Dispatch.Started, tc.due)
			}
			d, err := f.q.Depth(ctx, itemType)
			if err != nil || d.ByStatus[queue.StatusDispatched] != int64(tc.due) {
				t.Fatalf("depth %v %v", d.ByStatus, err)
			}
			for id, n := range f.eng.starts {
				if n != 1 {
					t.Fatalf("%s started %d times", id, n)
				}
			}
			var batches int
			if err := f.pool.QueryRow(ctx, `SELECT count(DISTINCT dispatch_batch_id) FROM exec_queue WHERE item_type = $1`, itemType).Scan(&batches); err != nil {
				t.Fatal(err)
			}
			if batches != tc.claims {
				t.Fatalf("%d batches, want %d", batches, tc.claims)
			}
		})
	}
}
