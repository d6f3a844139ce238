package payment

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the payment service's counters. A nil *Metrics records
// nothing.
type Metrics struct {
	cancelled *prometheus.CounterVec
}

// NewMetrics registers the payment service's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{cancelled: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "paydispatch_payments_cancelled_total",
		Help: "Payments cancelled before their execution began, by how: one payment, a file, or an operator's filter.",
	}, []string{"via"})}
	reg.MustRegister(m.cancelled)
	return m
}

func (m *Metrics) countCancelled(via string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.cancelled.WithLabelValues(via).Add(float64(n))
}
