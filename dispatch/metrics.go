package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/queue"
)

// Metrics are the dispatcher's Prometheus metrics (docs/design.md, "Metrics"), by
// item type. A nil *Metrics records nothing.
type Metrics struct {
	claimed, started, alreadyStarted, startFailures *prometheus.CounterVec
	staleRecovered, deadLetters                     *prometheus.CounterVec
	completed, execFailed, fed                      *prometheus.CounterVec
	cycleDuration                                   *prometheus.HistogramVec
	executionLag                                    *prometheus.HistogramVec
	byTenant                                        *prometheus.CounterVec
	tenants                                         tenantLabels
}

// MetricsConfig configures the metrics.
type MetricsConfig struct {
	// TenantLabels counts the executions by tenant, each tenant under its
	// name (executions_by_tenant_total). Off, that metric is not
	// exported: /metrics answers without a token, and a tenant's name and
	// volume are the tenant's business.
	TenantLabels bool
}

// MaxTenantLabels bounds the tenants executions_by_tenant_total names in
// one process: past it, a new tenant's executions count as "other", so a
// platform with many tenants does not grow the scrape without bound.
const MaxTenantLabels = 200

// tenantLabels remembers the tenants given a label of their own.
type tenantLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (t *tenantLabels) label(tenant string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[tenant] {
		return tenant
	}
	if len(t.seen) >= MaxTenantLabels || tenant == "" {
		return "other"
	}
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	t.seen[tenant] = true
	return tenant
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer, cfg MetricsConfig) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "paydispatch", Subsystem: "dispatch", Name: name, Help: help}, []string{"item_type"})
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{
		claimed:        counter("batch_claimed_total", "Items claimed across all batches."),
		started:        counter("workflow_started_total", "Execution workflows started."),
		alreadyStarted: counter("workflow_already_started_total", "Starts refused as duplicates (counted as dispatched)."),
		startFailures:  counter("workflow_start_failures_total", "Execution workflow starts that failed."),
		staleRecovered: counter("stale_recovered_total", "Stale claims recovered to READY."),
		deadLetters:    counter("dead_letter_total", "Items moved to DEAD_LETTER."),
		completed:      counter("completed_total", "Items whose execution completed."),
		execFailed:     counter("execution_failed_total", "Items whose execution failed and were queued again."),
		fed:            counter("fed_total", "Items their domain's feeder enqueued as their times came near (payments past the queue's mark)."),
		cycleDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "paydispatch", Subsystem: "dispatch", Name: "cycle_duration_seconds",
			Help: "Duration of dispatch cycles that did work.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"item_type"}),
		executionLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "paydispatch", Subsystem: "dispatch", Name: "execution_lag_seconds",
			Help:    "How long after its slot (its scheduled time) an item's execution went, on its worker's clock.",
			Buckets: lagBuckets,
		}, []string{"item_type"}),
	}
	reg.MustRegister(m.cycleDuration, m.executionLag)
	if cfg.TenantLabels {
		m.byTenant = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "paydispatch", Subsystem: "dispatch",
			Name: "executions_by_tenant_total",
			Help: "Items let go at their times, by tenant (at most MaxTenantLabels tenants a process; the rest as other): each tenant's share."},
			[]string{"item_type", "tenant"})
		reg.MustRegister(m.byTenant)
	}
	return m
}

// lagBuckets are the execution lag histogram's buckets, in seconds: on
// time is a few milliseconds; a worker or a rate limiter behind, seconds
// to minutes.
var lagBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// ObserveLag records that an item of itemType whose slot (or scheduled
// time) was slot went at went, as its executor saw it: the executor calls
// it once the item is held to its time and let go. A zero slot records
// nothing; an execution before its slot counts as no lag. A nil *Metrics
// records nothing.
func (m *Metrics) ObserveLag(itemType string, slot, went time.Time) {
	if m == nil || slot.IsZero() {
		return
	}
	m.executionLag.WithLabelValues(itemType).Observe(max(went.Sub(slot), 0).Seconds())
}

// CountExecution counts an item of tenant's let go (for each tenant's
// share of the executions). A nil *Metrics, or one without tenant
// labels, records nothing.
func (m *Metrics) CountExecution(itemType, tenant string) {
	if m == nil || m.byTenant == nil {
		return
	}
	m.byTenant.WithLabelValues(itemType, m.tenants.label(tenant)).Inc()
}

func (m *Metrics) recordCycle(c CycleResult, took time.Duration) {
	if m == nil {
		return
	}
	t := c.ItemType
	m.claimed.WithLabelValues(t).Add(float64(c.Dispatch.Claimed))
	m.started.WithLabelValues(t).Add(float64(c.Dispatch.Started))
	m.alreadyStarted.WithLabelValues(t).Add(float64(c.Dispatch.AlreadyStarted))
	m.startFailures.WithLabelValues(t).Add(float64(c.Dispatch.StartFailed + c.Dispatch.DeadLettered))
	m.staleRecovered.WithLabelValues(t).Add(float64(c.Recovery.Released))
	m.deadLetters.WithLabelValues(t).Add(float64(c.Dispatch.DeadLettered + c.Recovery.DeadLettered + c.Reconciliation.DeadLettered))
	m.completed.WithLabelValues(t).Add(float64(c.Reconciliation.Completed))
	m.execFailed.WithLabelValues(t).Add(float64(c.Reconciliation.Failed))
	m.fed.WithLabelValues(t).Add(float64(c.Dispatch.Fed))
	if took > 0 {
		m.cycleDuration.WithLabelValues(t).Observe(took.Seconds())
	}
}

// DepthCollector reports each item type's queue depth per status and the
// age of its oldest due READY item, read from the database at scrape time.
type DepthCollector struct {
	Queue *queue.Queue
	depth *prometheus.Desc
	age   *prometheus.Desc
}

// NewDepthCollector returns the collector; register it with a registry.
func NewDepthCollector(q *queue.Queue) *DepthCollector {
	return &DepthCollector{
		Queue: q,
		depth: prometheus.NewDesc("paydispatch_queue_depth", "Items in the dispatch queue, by item type and status.", []string{"item_type", "status"}, nil),
		age:   prometheus.NewDesc("paydispatch_queue_oldest_ready_seconds", "How long the oldest READY item is overdue (0 when none is due).", []string{"item_type"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *DepthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.age }

// Collect implements prometheus.Collector.
func (c *DepthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	configs, err := c.Queue.ListConfigs(ctx)
	if err != nil {
		return
	}
	for _, cfg := range configs {
		d, err := c.Queue.Depth(ctx, cfg.ItemType)
		if err != nil {
			continue
		}
		for status, n := range d.ByStatus {
			ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), cfg.ItemType, string(status))
		}
		overdue := 0.0
		if d.OldestReady != nil && time.Since(*d.OldestReady) > 0 {
			overdue = time.Since(*d.OldestReady).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, overdue, cfg.ItemType)
	}
}
