package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/outbox/internal/dbsqlc"
)

// Metrics are the relayers' Prometheus metrics (docs/design.md, "Metrics"). Create
// them once per process with NewMetrics and give them to every Relayer; a
// nil *Metrics records nothing. The depths read from the database are in
// DepthCollector.
type Metrics struct {
	notifications, notifyWakeups, reaperRequeues prometheus.Counter
	recordBatches, hookFailures, recordFailures  prometheus.Counter
	claimBatches, claimed, attempts              *prometheus.CounterVec
	inquiries, unknown                           *prometheus.CounterVec
	dispatchLatency, deliveryLatency             *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "paydispatch", Subsystem: "outbox", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "paydispatch", Subsystem: "outbox", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "paydispatch", Subsystem: "outbox", Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(h)
		return h
	}
	m := &Metrics{
		notifications:   counter("notifications_total", "outbox_pending notifications received."),
		notifyWakeups:   counter("notify_wakeups_total", "Relayer wake-ups caused by notifications (after debouncing)."),
		claimBatches:    counterVec("claim_batches_total", "Claims that took at least one message, by mode.", "mode"),
		claimed:         counterVec("claimed_total", "Messages claimed, by mode.", "mode"),
		attempts:        counterVec("attempts_total", "Attempt rows written by relayers and reapers, by state.", "state"),
		inquiries:       counterVec("inquiries_total", "Status inquiries, by result.", "result"),
		unknown:         counterVec("unknown_outcomes_total", "Rail calls whose outcome was unknown (requeued for inquiry), by call.", "call"),
		reaperRequeues:  counter("reaper_requeues_total", "Claims taken back by the reaper (ZOMBIE_REQUEUE)."),
		recordBatches:   counter("record_batches_total", "Outcome batches committed."),
		hookFailures:    counter("hook_failures_total", "Outcome batches rolled back by a hook error."),
		recordFailures:  counter("record_failures_total", "Outcomes left in flight for the reaper after the record failed."),
		dispatchLatency: histogram("dispatch_latency_seconds", "Duration of one rail call, by rail type and call (send, inquire).", prometheus.ExponentialBuckets(0.0005, 2, 16), "rail_type", "call"),
		deliveryLatency: histogram("delivery_latency_seconds", "From enqueue to the commit of DISPATCHED, by rail type.", prometheus.ExponentialBuckets(0.001, 2, 20), "rail_type"),
	}
	// Every series an alert reads exists from the start, at 0: a rule on
	// a counter that has never moved sees it (rate, increase) instead of
	// nothing.
	for _, s := range []State{StateDispatching, StateDispatched, StateRetryable, StateFailed, StateUnknown, StateZombieRequeue} {
		m.attempts.WithLabelValues(string(s))
	}
	for _, call := range []string{"send", "inquire"} {
		m.unknown.WithLabelValues(call)
	}
	return m
}

func (m *Metrics) notification() {
	if m != nil {
		m.notifications.Inc()
	}
}

func (m *Metrics) notifyWakeup() {
	if m != nil {
		m.notifyWakeups.Inc()
	}
}

func (m *Metrics) claim(mode Ordering, n int) {
	if m != nil && n > 0 {
		m.claimBatches.WithLabelValues(string(mode)).Inc()
		m.claimed.WithLabelValues(string(mode)).Add(float64(n))
		m.attempts.WithLabelValues(string(StateDispatching)).Add(float64(n))
	}
}

func (m *Metrics) railCall(rail, call string, took time.Duration) {
	if m != nil {
		m.dispatchLatency.WithLabelValues(rail, call).Observe(took.Seconds())
	}
}

func (m *Metrics) inquiry(result Outcome) {
	if m != nil {
		m.inquiries.WithLabelValues(string(result)).Inc()
	}
}

func (m *Metrics) unknownOutcome(call string) {
	if m != nil {
		m.unknown.WithLabelValues(call).Inc()
	}
}

func (m *Metrics) recorded(states map[State]int, delivered []Delivery, enqueuedAt map[uuid.UUID]time.Time) {
	if m == nil {
		return
	}
	m.recordBatches.Inc()
	for s, n := range states {
		m.attempts.WithLabelValues(string(s)).Add(float64(n))
	}
	now := time.Now()
	for _, d := range delivered {
		if at, ok := enqueuedAt[d.Message.OutboxID]; ok {
			m.deliveryLatency.WithLabelValues(d.Message.RailType).Observe(now.Sub(at).Seconds())
		}
	}
}

func (m *Metrics) hookFailure() {
	if m != nil {
		m.hookFailures.Inc()
	}
}

func (m *Metrics) recordFailure(n int) {
	if m != nil {
		m.recordFailures.Add(float64(n))
	}
}

func (m *Metrics) reaped(n int) {
	if m != nil && n > 0 {
		m.reaperRequeues.Add(float64(n))
		m.attempts.WithLabelValues(string(StateZombieRequeue)).Add(float64(n))
	}
}

// DepthCollector reports the outbox's depths, read from the database at
// scrape time: pending rows (and how many are due), the age of the oldest
// pending instruction, claims in flight and those stuck longer than
// StuckAfter (the reaper's timeout is the natural value), and dead letters.
type DepthCollector struct {
	DB         DBTX
	StuckAfter time.Duration

	pending, due, oldest, inFlight, stuck, dead *prometheus.Desc
}

// NewDepthCollector returns the collector; register it with a registry.
func NewDepthCollector(db DBTX, stuckAfter time.Duration) *DepthCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("paydispatch_outbox_"+name, help, nil, nil)
	}
	return &DepthCollector{
		DB: db, StuckAfter: stuckAfter,
		pending:  desc("pending_depth", "Instructions waiting in the pending table (due or backing off)."),
		due:      desc("pending_due_depth", "Pending instructions already due."),
		oldest:   desc("oldest_pending_age_seconds", "Age since enqueue of the oldest pending instruction (0 when none)."),
		inFlight: desc("in_flight", "Instructions claimed and not yet settled."),
		stuck:    desc("stuck_dispatching", "Claims in flight for longer than the stuck threshold (DISPATCHING with no outcome)."),
		dead:     desc("dead_letter_depth", "Current dead letters (FAILED, not requeued)."),
	}
}

// Describe implements prometheus.Collector.
func (c *DepthCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.due, c.oldest, c.inFlight, c.stuck, c.dead} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *DepthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := dbsqlc.New(c.DB).Depth(ctx, c.StuckAfter.Seconds())
	if err != nil {
		return
	}
	age := 0.0
	if d.OldestPending.After(time.Unix(0, 0)) {
		age = max(d.Now.Sub(d.OldestPending).Seconds(), 0)
	}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	gauge(c.pending, float64(d.Pending))
	gauge(c.due, float64(d.PendingDue))
	gauge(c.oldest, age)
	gauge(c.inFlight, float64(d.InFlight))
	gauge(c.stuck, float64(d.Stuck))
	gauge(c.dead, float64(d.DeadLetters))
}
