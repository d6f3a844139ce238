package pacing

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limitCollector reads the active configs' limits at each scrape.
type limitCollector struct {
	l     *Limiter
	limit *prometheus.Desc
}

// NewCollector reports, at each scrape, each active config's limit in
// executions a second, by config (MaxPerWindow over the window): the
// line an execution rate is drawn against. Read from the database, so a
// change shows at the next scrape; register it with a registry.
func NewCollector(l *Limiter) prometheus.Collector {
	return &limitCollector{l: l,
		limit: prometheus.NewDesc("paydispatch_pacing_limit_per_second",
			"An active rate-limit config's limit, in executions a second (max per window over the window).", []string{"config"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.limit }

// Collect implements prometheus.Collector.
func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	configs, err := c.l.ListConfigs(ctx)
	if err != nil {
		return
	}
	for _, cfg := range configs {
		if !cfg.Active || cfg.Window <= 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(cfg.MaxPerWindow)/cfg.Window.Seconds(), cfg.Name)
	}
}
