package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/paydispatch/paydispatch/dispatch"
)

// TestMetrics: a recorded cycle shows in the counters, and the depth
// collector reports the queue as it is.
func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, func(c *dispatch.Config) { c.Metrics = dispatch.NewMetrics(reg) })
	ctx := context.Background()
	reg.MustRegister(dispatch.NewDepthCollector(f.q))

	f.enqueue(t, 3, time.Now().Add(-time.Minute))
	start := time.Now()
	d, err := f.act.ClaimAndDispatch(ctx, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.act.RecordResults(ctx, dispatch.CycleResult{ItemType: itemType, StartedAt: start, Dispatch: d}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP paydispatch_dispatch_workflow_started_total Execution workflows started.
# TYPE paydispatch_dispatch_workflow_started_total counter
paydispatch_dispatch_workflow_started_total{item_type="TASK"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "paydispatch_dispatch_workflow_started_total"); err != nil {
		t.Fatal(err)
	}
	wantDepth := `
# HELP paydispatch_queue_depth Items in the dispatch queue, by item type and status.
# TYPE paydispatch_queue_depth gauge
paydispatch_queue_depth{item_type="TASK",status="CLAIMED"} 0
paydispatch_queue_depth{item_type="TASK",status="COMPLETED"} 0
paydispatch_queue_depth{item_type="TASK",status="DEAD_LETTER"} 0
paydispatch_queue_depth{item_type="TASK",status="DISPATCHED"} 3
paydispatch_queue_depth{item_type="TASK",status="FAILED"} 0
paydispatch_queue_depth{item_type="TASK",status="READY"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantDepth), "paydispatch_queue_depth"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "paydispatch_dispatch_cycle_duration_seconds"); n != 1 {
		t.Fatalf("cycle duration series = %d", n)
	}
}
