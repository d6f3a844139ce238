package screening

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the screening hook's counters. A nil *Metrics records
// nothing.
type Metrics struct {
	calls    *prometheus.CounterVec
	latency  prometheus.Histogram
	verdicts *prometheus.CounterVec
	noAnswer *prometheus.CounterVec
	kept     prometheus.Counter
}

// NewMetrics registers the screening hook's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paydispatch_screening_calls_total",
			Help: "Calls to the screening service by outcome: ok, timeout, transport (no answer), status (not 200) or refused (an answer not decoded).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "paydispatch_screening_call_seconds",
			Help:    "How long a call to the screening service took, until its answer or its timeout.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paydispatch_screening_verdicts_total",
			Help: "Payments screened, by the verdict of the call: CLEAR, HIT or ERROR (the service's, or no usable answer).",
		}, []string{"verdict"}),
		noAnswer: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "paydispatch_screening_errors_total",
			Help: "Payments without a screening answer, by the tenant's rule applied: HOLD, REJECT or ALLOW (passed unscreened).",
		}, []string{"rule"}),
		kept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "paydispatch_screening_hits_read_back_total",
			Help: "Hits read back from the database instead of asking again (a retried Phase A).",
		}),
	}
	reg.MustRegister(m.calls, m.latency, m.verdicts, m.noAnswer, m.kept)
	// At 0 from the start, for rate() and increase().
	for _, o := range []string{outcomeOK, outcomeTimeout, outcomeTransport, outcomeStatus, outcomeRefused} {
		m.calls.WithLabelValues(o)
	}
	for _, v := range []Verdict{Clear, Hit, Error} {
		m.verdicts.WithLabelValues(string(v))
	}
	for _, r := range []string{RuleHold, RuleReject, RuleAllow} {
		m.noAnswer.WithLabelValues(r)
	}
	return m
}

func (m *Metrics) call(outcome string, took time.Duration, res []Result) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(outcome).Inc()
	m.latency.Observe(took.Seconds())
	for _, r := range res {
		m.verdicts.WithLabelValues(string(r.Verdict)).Inc()
	}
}

func (m *Metrics) unscreened(rule string) {
	if m == nil {
		return
	}
	m.noAnswer.WithLabelValues(rule).Inc()
}

func (m *Metrics) readBack(n int) {
	if m == nil || n == 0 {
		return
	}
	m.kept.Add(float64(n))
}
