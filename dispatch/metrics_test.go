package dispatch_test

import (
	"context"
	"fmt"
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
	f := newFixture(t, func(c *dispatch.Config) { c.Metrics = dispatch.NewMetrics(reg, dispatch.MetricsConfig{}) })
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
paydispatch_queue_depth{item_type="TASK",status="PARKED"} 0
paydispatch_queue_depth{item_type="TASK",status="READY"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantDepth), "paydispatch_queue_depth"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "paydispatch_dispatch_cycle_duration_seconds"); n != 1 {
		t.Fatalf("cycle duration series = %d", n)
	}
}

// TestObserveLag: an execution's lag behind its slot lands in its item
// type's histogram (early counts as none); no slot, or no metrics, records
// nothing.
func TestObserveLag(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := dispatch.NewMetrics(reg, dispatch.MetricsConfig{})
	slot := time.Date(2026, 3, 2, 16, 0, 0, 0, time.UTC)
	m.ObserveLag("TASK", slot, slot.Add(3*time.Millisecond))
	m.ObserveLag("TASK", slot, slot.Add(7*time.Second))
	m.ObserveLag("TASK", slot, slot.Add(-time.Second))
	m.ObserveLag("TASK", time.Time{}, slot)
	(*dispatch.Metrics)(nil).ObserveLag("TASK", slot, slot.Add(time.Hour))
	want := `
# HELP paydispatch_dispatch_execution_lag_seconds How long after its slot (its scheduled time) an item's execution went, on its worker's clock.
# TYPE paydispatch_dispatch_execution_lag_seconds histogram
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.005"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.01"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.025"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.05"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.1"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.25"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="0.5"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="1"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="2.5"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="5"} 2
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="10"} 3
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="30"} 3
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="60"} 3
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="300"} 3
paydispatch_dispatch_execution_lag_seconds_bucket{item_type="TASK",le="+Inf"} 3
paydispatch_dispatch_execution_lag_seconds_sum{item_type="TASK"} 7.003
paydispatch_dispatch_execution_lag_seconds_count{item_type="TASK"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "paydispatch_dispatch_execution_lag_seconds"); err != nil {
		t.Fatal(err)
	}
}

// TestCountExecutionByTenant: with tenant labels on, each tenant's
// executions are counted under its name, up to MaxTenantLabels tenants;
// the rest, and none, as other. Off (the default), no tenant's name is
// exported at all.
func TestCountExecutionByTenant(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  dispatch.MetricsConfig
		// want: acme's and other's counts and the labels; none: no series.
		acme, other float64
		labels      int
	}{
		{"by default", dispatch.MetricsConfig{}, 0, 0, 0},
		{"with tenant labels", dispatch.MetricsConfig{TenantLabels: true}, 2, 7, dispatch.MaxTenantLabels + 1},
	} {
		reg := prometheus.NewRegistry()
		m := dispatch.NewMetrics(reg, tt.cfg)
		m.CountExecution("TASK", "acme")
		m.CountExecution("TASK", "acme")
		m.CountExecution("TASK", "")
		for i := range dispatch.MaxTenantLabels + 5 {
			m.CountExecution("TASK", fmt.Sprintf("t-%03d", i))
		}
		(*dispatch.Metrics)(nil).CountExecution("TASK", "acme")
		mf, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range mf {
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if strings.Contains(l.GetValue(), "acme") || strings.HasPrefix(l.GetValue(), "t-") {
						if f.GetName() != "paydispatch_dispatch_executions_by_tenant_total" || l.GetName() != "tenant" {
							t.Errorf("%s: %s carries a tenant in %s=%q", tt.name, f.GetName(), l.GetName(), l.GetValue())
						}
					}
					if l.GetName() == "tenant" {
						got[l.GetValue()] = s.GetCounter().GetValue()
					}
				}
			}
		}
		// acme took one label; 199 of the t-NNN tenants the others; 6 more and the empty tenant are other.
		if got["acme"] != tt.acme || got["other"] != tt.other || len(got) != tt.labels {
			t.Errorf("%s: acme %v, other %v, %d labels, want %v, %v and %d", tt.name, got["acme"], got["other"], len(got), tt.acme, tt.other, tt.labels)
		}
	}
}
