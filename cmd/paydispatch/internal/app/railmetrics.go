package app

import (
	"context"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// RailCollector reports, at each scrape, what waits for each active rail
// and when it will be done against the cut-off of its current business
// day (the day a payment requested now would execute on), read from the
// database: the same in every serve.
//
// The projected finish is the later of the last slot of the day's
// waiting payments and now plus what waits at the rail's rate: the
// slots are always before the cut-off, but executions held behind them
// (a backlog, a lowered limit, a paused queue) finish later, and a
// cut-off missed that way is a ROLL, a HOLD or a REJECT for each payment
// past it.
type RailCollector struct {
	rails   *routing.Resolver
	store   *payment.Store
	limiter *pacing.Limiter
	queue   *queue.Queue

	waiting, held, cutoff, finish, rate *prometheus.Desc
}

// NewRailCollector reads the rails and their payments from store.
func NewRailCollector(store *postgres.DB) *RailCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"rail"}, nil)
	}
	return &RailCollector{
		rails: Rails(store), store: payment.NewStore(store.Pool), limiter: pacing.New(store.Pool), queue: queue.New(store.Pool),
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

// Collect implements prometheus.Collector.
func (c *RailCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rails, err := c.rails.Rails(ctx)
	if err != nil {
		return
	}
	def := ""
	if cfg, err := c.queue.GetConfig(ctx, payment.ItemType); err == nil {
		def = cfg.PacingConfig
	}
	now := time.Now()
	for _, r := range rails {
		if !r.Active {
			continue
		}
		day, err := c.rails.DayFor(ctx, r, now)
		if err != nil {
			continue
		}
		b, err := c.store.RailBacklog(ctx, r.Name, day.Cutoff)
		if err != nil {
			continue
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, r.Name)
		}
		gauge(c.waiting, float64(b.Waiting))
		gauge(c.held, float64(b.Held))
		rate := 0.0
		cfgName := r.PacingConfig
		if cfgName == "" {
			cfgName = def
		}
		if cfg, err := c.limiter.GetConfig(ctx, cfgName); err == nil && cfg.Active && cfg.Window > 0 {
			rate = float64(cfg.MaxPerWindow) / cfg.Window.Seconds()
		}
		gauge(c.rate, rate)
		cutoff := math.Inf(1)
		if !day.Cutoff.IsZero() {
			cutoff = float64(day.Cutoff.Unix())
		}
		gauge(c.cutoff, cutoff)
		finish := 0.0
		if f := b.ProjectedFinish(rate, now); f != nil {
			finish = float64(f.Unix())
		}
		gauge(c.finish, finish)
	}
}
