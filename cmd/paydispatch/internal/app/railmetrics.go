package app

import (
	"context"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/console"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
)

// RailStore is the rails on store as serve's API, its rail metrics and
// its console read them (httpapi.RailStore): one computation of each
// rail's backlog, rate and business day for all three. flush drops the
// intake's routing snapshot after a change through the API (nil: none).
func RailStore(store *postgres.DB, flush interface{ Flush() }) httpapi.RailStore {
	return httpapi.RailStore{DB: store.Pool, Payments: payment.NewStore(store.Pool), Pacing: pacing.New(pacing.Config{Pool: store.Pool}),
		Queue: queue.New(store.Pool), Resolver: flush}
}

// RailCollector reports, at each scrape, what waits for each active rail
// and when it will be done against the cut-off of its current business
// day (the day a payment requested now would execute on), read from the
// database: the same in every serve, and the same figures as GET
// /admin/rails/{name} and the console (httpapi.RailStore.RailStatuses).
//
// The projected finish is the later of the last slot of the day's
// waiting payments and now plus what waits at the rail's rate: the
// slots are always before the cut-off, but executions held behind them
// (a backlog, a lowered limit, a paused queue) finish later, and a
// cut-off missed that way is a ROLL, a HOLD or a REJECT for each payment
// past it.
type RailCollector struct {
	rails httpapi.RailStore

	waiting, held, cutoff, finish, rate *prometheus.Desc
}

// NewRailCollector reads the rails and their payments from store.
func NewRailCollector(store *postgres.DB) *RailCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"rail"}, nil)
	}
	return &RailCollector{
		rails:   RailStore(store, nil),
		waiting: desc("paydispatch_rail_waiting", "Payments SCHEDULED on the rail for its current business day, not yet begun."),
		held:    desc("paydispatch_rail_held", "Payments HELD at the rail's cut-off, waiting for an operator."),
		cutoff:  desc("paydispatch_rail_cutoff_timestamp_seconds", "The cut-off of the rail's current business day (Unix time); +Inf for a rail with none."),
		finish: desc("paydispatch_rail_projected_finish_timestamp_seconds",
			"When the rail's current business day's waiting payments are projected to have left (Unix time): the later of their last slot and now plus what waits at the rail's rate; 0 when none waits."),
		rate: desc("paydispatch_rail_rate_per_second", "The rail's rate: its rate-limit config's limit a second (0: not paced)."),
	}
}

// Describe implements prometheus.Collector.
func (c *RailCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.waiting, c.held, c.cutoff, c.finish, c.rate} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: every active rail with a
// business day (a read that fails reports none).
func (c *RailCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	statuses, err := c.rails.RailStatuses(ctx)
	if err != nil {
		return
	}
	for _, st := range statuses {
		if !st.Active || st.BusinessDay == nil {
			continue
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.Name)
		}
		gauge(c.waiting, float64(st.DayWaiting))
		gauge(c.held, float64(st.Backlog.Held))
		gauge(c.rate, st.RatePerSecond)
		cutoff := math.Inf(1)
		if bd := st.BusinessDay; bd.Cutoff != nil {
			cutoff = float64(bd.Cutoff.Unix())
		}
		gauge(c.cutoff, cutoff)
		finish := 0.0
		if f := st.BusinessDay.ProjectedFinish; f != nil {
			finish = float64(f.Unix())
		}
		gauge(c.finish, finish)
	}
}

// ConsoleRails are the console's rail figures (console.Rails), computed
// as the rail metrics and GET /admin/rails/{name} compute them.
type ConsoleRails struct{ Store httpapi.RailStore }

// RailFigures implements console.Rails: every rail, inactive ones too.
func (c ConsoleRails) RailFigures(ctx context.Context) ([]console.RailFigure, error) {
	statuses, err := c.Store.RailStatuses(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]console.RailFigure, len(statuses))
	for i, st := range statuses {
		f := console.RailFigure{Name: st.Name, Type: st.Type, Active: st.Active, Waiting: st.DayWaiting,
			WaitingLater: st.Backlog.Waiting - st.DayWaiting, Held: st.Backlog.Held, RatePerSecond: st.RatePerSecond}
		if st.Rate != nil {
			f.RateLimitConfig = st.Rate.RateLimitConfig
		}
		if bd := st.BusinessDay; bd != nil {
			f.BusinessDay, f.Cutoff, f.ProjectedFinish, f.PastCutoff, f.MarginSeconds = bd.Date, bd.Cutoff, bd.ProjectedFinish, bd.PastCutoff, bd.MarginSeconds
		}
		out[i] = f
	}
	return out, nil
}
