package payment

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// IntakeOf is the requests waiting in an init workflow's intake row.
func IntakeOf(ctx context.Context, s *Store, initWorkflowID string) ([]Request, error) {
	st, _, err := s.intake(ctx, initWorkflowID)
	out := make([]Request, len(st.keys))
	for i := range out {
		out[i] = st.request(i)
	}
	return out, err
}

// Cancelled is the cancel counter's series for via.
func (m *Metrics) Cancelled(via string) prometheus.Counter { return m.cancelled.WithLabelValues(via) }
