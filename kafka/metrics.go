package kafka

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the intake's counters and gauges. A nil *Metrics records
// nothing.
type Metrics struct {
	consumedTotal, acceptedTotal, deadTotal prometheus.Counter
	trimmedTotal, splitTotal                prometheus.Counter
	lagByPartition                          *prometheus.GaugeVec
	pausedGauge                             prometheus.Gauge
}

// NewMetrics registers the intake's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		consumedTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "paydispatch_kafka_intake_records_consumed_total",
			Help: "Records the Kafka intake polled (read again after a crash or a failed chunk counts again)."}),
		acceptedTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "paydispatch_kafka_intake_records_accepted_total",
			Help: "Records taken in as payments (stored, Phase A started)."}),
		deadTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "paydispatch_kafka_intake_records_dead_lettered_total",
			Help: "Records sent to the dead-letter topic."}),
		trimmedTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "paydispatch_kafka_intake_records_trimmed_total",
			Help: "Records sent to the dead-letter topic by reference (origin, size, SHA-256), without their value: over the size limit, or failing alone."}),
		splitTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "paydispatch_kafka_intake_chunks_split_total",
			Help: "Chunks split in halves because they kept failing (not for an outage): some record in them is at fault."}),
		lagByPartition: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "paydispatch_kafka_intake_lag",
			Help: "Records behind the partition's high watermark at the last poll."}, []string{"partition"}),
		pausedGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paydispatch_kafka_intake_paused",
			Help: "1 while the intake holds back: the queue's READY depth is over its ceiling."}),
	}
	reg.MustRegister(m.consumedTotal, m.acceptedTotal, m.deadTotal, m.trimmedTotal, m.splitTotal, m.lagByPartition, m.pausedGauge)
	return m
}

func (m *Metrics) consumed(n int) {
	if m != nil && n > 0 {
		m.consumedTotal.Add(float64(n))
	}
}

func (m *Metrics) accepted(n int) {
	if m != nil && n > 0 {
		m.acceptedTotal.Add(float64(n))
	}
}

func (m *Metrics) deadLettered(n int, trimmed bool) {
	if m != nil && n > 0 {
		m.deadTotal.Add(float64(n))
		if trimmed {
			m.trimmedTotal.Add(float64(n))
		}
	}
}

func (m *Metrics) split() {
	if m != nil {
		m.splitTotal.Inc()
	}
}

func (m *Metrics) lag(partition int32, n int64) {
	if m != nil {
		m.lagByPartition.WithLabelValues(strconv.Itoa(int(partition))).Set(float64(max(n, 0)))
	}
}

func (m *Metrics) setPaused(on bool) {
	if m != nil {
		v := 0.0
		if on {
			v = 1
		}
		m.pausedGauge.Set(v)
	}
}
