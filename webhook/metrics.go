package webhook

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/webhook/internal/dbsqlc"
)

// Metrics are the relayers' counters. A nil *Metrics records nothing.
type Metrics struct {
	attempts *prometheus.CounterVec
	duration prometheus.Histogram
}

// NewMetrics registers the relayers' metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paydispatch_webhook_attempts_total",
			Help: "Webhook delivery attempts by what became of them: DELIVERED, PENDING (to be retried) or DEAD.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "paydispatch_webhook_attempt_seconds",
			Help:    "How long a webhook delivery attempt took, until the endpoint's answer or the timeout.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
	}
	reg.MustRegister(m.attempts, m.duration)
	for _, o := range []string{StateDelivered, StatePending, StateDead} {
		m.attempts.WithLabelValues(o) // at 0 from the start, for rate() and increase()
	}
	return m
}

func (m *Metrics) observe(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(outcome).Inc()
	m.duration.Observe(took.Seconds())
}

// depthCollector reads the webhook outbox's depths at scrape time.
type depthCollector struct {
	pool                                *pgxpool.Pool
	due, pending, sending, dead, oldest *prometheus.Desc
}

// NewDepthCollector reports, at each scrape, the deliveries due, waiting
// (due or backing off), in flight and dead, and the age of the oldest
// open one.
func NewDepthCollector(pool *pgxpool.Pool) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &depthCollector{pool: pool,
		due:     d("paydispatch_webhook_due", "Webhook deliveries due now."),
		pending: d("paydispatch_webhook_pending", "Webhook deliveries waiting: due, or backing off after a failure."),
		sending: d("paydispatch_webhook_sending", "Webhook deliveries in flight."),
		dead:    d("paydispatch_webhook_dead_letters", "Webhook deliveries out of attempts, waiting for a redrive."),
		oldest:  d("paydispatch_webhook_oldest_open_seconds", "Age of the oldest webhook delivery not yet made."),
	}
}

func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.due, c.pending, c.sending, c.dead, c.oldest} {
		ch <- d
	}
}

func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	q := dbsqlc.New(c.pool)
	d, err := q.Depth(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.due, err)
		return
	}
	dead, err := q.DeadLetters(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.dead, err)
		return
	}
	g := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	g(c.due, float64(d.Due))
	g(c.pending, float64(d.Pending))
	g(c.sending, float64(d.Sending))
	g(c.dead, float64(dead))
	g(c.oldest, d.OldestOpenSeconds)
}
