package process

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/process/internal/dbsqlc"
)

// collector reads, at each scrape, how many processes wait for an
// operator in COMPENSATION_FAILED.
type collector struct {
	db                 DB
	compensationFailed *prometheus.Desc
}

// NewCollector reports, at each scrape, the processes in
// COMPENSATION_FAILED: a compensation failed for good, and nothing moves
// them on but an operator's Retry or Compensate. Read from the database
// (process_attention's status index), the count survives restarts and is
// the same from every process that exports it; register it with a
// registry.
func NewCollector(db DB) prometheus.Collector {
	return &collector{db: db,
		compensationFailed: prometheus.NewDesc("paydispatch_process_compensation_failed",
			"Processes in COMPENSATION_FAILED: a compensation failed for good; an operator must retry it.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.compensationFailed }

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := dbsqlc.New(c.db).CountListed(ctx, string(StatusCompensationFailed))
	if err != nil {
		return // a gap, as the queue's and the outbox's depths leave, not a failed scrape
	}
	ch <- prometheus.MustNewConstMetric(c.compensationFailed, prometheus.GaugeValue, float64(n))
}
