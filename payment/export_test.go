package payment

import "context"

// IntakeOf is the requests waiting in an init workflow's intake row.
func IntakeOf(ctx context.Context, s *Store, initWorkflowID string) ([]Request, error) {
	st, _, err := s.intake(ctx, initWorkflowID)
	out := make([]Request, len(st.keys))
	for i := range out {
		out[i] = st.request(i)
	}
	return out, err
}
