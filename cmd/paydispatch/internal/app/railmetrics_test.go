package app_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// TestRailFiguresAreTheAPIs: the rail metrics and the console's figures
// are GET /admin/rails/{name}'s, computed once (RailStatuses): each
// active rail's rate, cut-off and backlog; an inactive rail is in the
// console, not in the metrics.
func TestRailFiguresAreTheAPIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := &postgres.DB{Pool: pool}
	if err := payment.RegisterItemType(ctx, queue.New(pool)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []pacing.Limit{{Name: "ten", MaxPerWindow: 20, Window: 2 * time.Second, Headroom: 100},
		{Name: "five", MaxPerWindow: 5, Window: time.Second, Headroom: 100}} {
		if _, err := pacing.New(pacing.Config{Pool: pool}).PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []routing.Rail{
		{Name: "LATE", Type: "SEPA_JSON", PacingConfig: "ten", TimeZone: "UTC", Cutoff: 24*time.Hour - time.Second, Active: true},
		{Name: "OFF", Type: "SEPA_JSON", PacingConfig: "five", Active: false},
	} {
		if _, err := routing.PutRail(ctx, pool, r); err != nil {
			t.Fatal(err)
		}
	}
	statuses, err := app.RailStore(store, nil).RailStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	figures, err := app.ConsoleRails{Store: app.RailStore(store, nil)}.RailFigures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(figures) != len(statuses) || len(figures) != 3 {
		t.Fatalf("%d figures, %d statuses, want DEFAULT, LATE and OFF", len(figures), len(statuses))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(app.NewRailCollector(store))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	metric := map[string]map[string]float64{} // rail → metric → value
	for _, f := range families {
		for _, m := range f.GetMetric() {
			rail := m.GetLabel()[0].GetValue()
			if metric[rail] == nil {
				metric[rail] = map[string]float64{}
			}
			metric[rail][f.GetName()] = m.GetGauge().GetValue()
		}
	}
	if _, ok := metric["OFF"]; ok {
		t.Error("an inactive rail has metrics")
	}
	for i, st := range statuses {
		f := figures[i]
		if f.Name != st.Name || f.Active != st.Active || f.Waiting != st.DayWaiting || f.Held != st.Backlog.Held || f.RatePerSecond != st.RatePerSecond {
			t.Errorf("%s: console %+v, API %+v", st.Name, f, st)
		}
		if st.BusinessDay == nil || f.BusinessDay != st.BusinessDay.Date || (f.Cutoff == nil) != (st.BusinessDay.Cutoff == nil) {
			t.Errorf("%s: console's day %q cut-off %v, API's %+v", st.Name, f.BusinessDay, f.Cutoff, st.BusinessDay)
			continue
		}
		if !st.Active {
			continue
		}
		m := metric[st.Name]
		cutoff := math.Inf(1)
		if st.BusinessDay.Cutoff != nil {
			cutoff = float64(st.BusinessDay.Cutoff.Unix())
		}
		if m["paydispatch_rail_rate_per_second"] != st.RatePerSecond || m["paydispatch_rail_cutoff_timestamp_seconds"] != cutoff ||
			m["paydispatch_rail_waiting"] != float64(st.DayWaiting) || m["paydispatch_rail_held"] != float64(st.Backlog.Held) ||
			m["paydispatch_rail_projected_finish_timestamp_seconds"] != 0 {
			t.Errorf("%s: metrics %v, API %+v %+v", st.Name, m, st, st.BusinessDay)
		}
	}
	if late := figures[1]; late.Name != "LATE" || late.RatePerSecond != 10 || late.RateLimitConfig != "ten" || late.Cutoff == nil {
		t.Errorf("LATE in the console: %+v", late)
	}
}
