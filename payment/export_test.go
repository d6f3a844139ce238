package payment

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
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

// SentBefore is a file's look-up among those accepted since.
var SentBefore = sentSince

// Cancelled is the cancel counter's series for via.
func (m *Metrics) Cancelled(via string) prometheus.Counter { return m.cancelled.WithLabelValues(via) }

// Enrich is Phase A's enrichment of r.
func Enrich(r Request) (Enrichment, error) { return enrich(r) }

// Apply is Phase A's rules on r with amount and e.
func (rs Rules) Apply(r Request, amount decimal.Decimal, e Enrichment) ([]string, error) {
	return rs.apply(r, Money{Amount: amount, Currency: r.Currency}, e)
}

// ExecTime is the execution time Phase A gives r.
func (a *InitActivities) ExecTime(ctx context.Context, r Request) (ExecSlot, error) {
	key := Key(r.TenantID, r.PaymentID)
	slots, err := a.execTimes(ctx, []string{key}, []Request{r})
	return slots[key], err
}

// LowWaitingOf is Phase A's question whether LOW payments wait on rails.
func LowWaitingOf(ctx context.Context, s *Store, rails []string) (bool, error) {
	return s.q.LowWaitingOnRails(ctx, rails)
}

// ResumedOf is RunLevers' look for payments resumed while held.
func ResumedOf(ctx context.Context, s *Store) error {
	_, err := s.q.ResumedPayments(ctx, 1000)
	return err
}

// BatchIDOf is the id StartBatch gives a file.
var BatchIDOf = batchID

// CanonicalOf is a payment's canonical form, which a file's id hashes.
var CanonicalOf = canonical

// InstructionOf is the instruction CreatePayment writes for st, with the
// amount it sends.
func InstructionOf(st SubmitState, amount decimal.Decimal) (Instruction, error) {
	return submit{}.instruction(&st, amount)
}

// DecodePlain is the one-pass decoder alone (false: it leaves b to
// strictjson).
func DecodePlain(b []byte) (Request, bool) { return decodePlain(b) }

// ApplyApprovalRules is the intake's matching of the approval rules.
func (s *Service) ApplyApprovalRules(ctx context.Context, source, principal string, reqs []Request) error {
	return s.applyApprovalRules(ctx, source, principal, reqs)
}

// ApprovalOf is the requirement the matching set on r: its rule and
// approvals ("" and 0: none).
func ApprovalOf(r Request) (string, int) {
	if r.approval == nil {
		return "", 0
	}
	return r.approval.rule, r.approval.approvals
}

// SetSweepBatch bounds what one round of the approval cut-off sweep looks
// at.
func SetSweepBatch(s *Service, n int) { s.sweep.batch = n }

// WaitingBetweenOf is the feeder's look for the payments it enqueues.
func WaitingBetweenOf(ctx context.Context, s *Store, from, to time.Time) (int, error) {
	rows, err := s.q.WaitingBetween(ctx, dbsqlc.WaitingBetweenParams{FromTime: from, ToTime: to})
	return len(rows), err
}
