package payment

import (
	"context"
	"fmt"
)

// A Control is a check Phase A runs on the payments it accepted, before
// any of them takes a slot: a rule that wants approvals, the duplicate
// check, a screening service. A payment it stops takes no slot, so the
// others keep their pace; an operator's release or an approval paces it
// later from then.
type Control interface {
	// Name says which control decided, in logs and errors.
	Name() string
	// Check decides on each candidate: its answer has one Decision per
	// candidate, in order. It is called again for the same payments when
	// Phase A is retried, and must answer as it did (a decision kept in
	// the database is read back, not made again). An error fails the
	// attempt, which Temporal retries.
	Check(ctx context.Context, cs []Candidate) ([]Decision, error)
}

// Candidate is a payment a Control decides on: valid, enriched and
// routed (Request.Rail set when there are rails).
type Candidate struct {
	Key     string
	Request Request
	Money   Money
	// IntakeID is the id of the init workflow taking it in: a file's
	// chunk's (batch id prefixed), or the payment's own.
	IntakeID string
}

// Action is what a Control does with a payment, in rising order of
// severity: when several decide, the most severe wins.
type Action uint8

const (
	// ActionPass lets the payment go on.
	ActionPass Action = iota
	// ActionWarn lets it go on, with the reason kept as its status
	// reason (shown in its view and events).
	ActionWarn
	// ActionAwaitApproval stops it AWAITING_APPROVAL: no slot until
	// its approvals are given.
	ActionAwaitApproval
	// ActionHold stops it HELD with the reason: no slot until an
	// operator releases it (or cancels it).
	ActionHold
	// ActionReject ends it REJECTED with the reason.
	ActionReject
)

// Decision is a Control's answer on one payment.
type Decision struct {
	Action Action
	// Reason is the status reason: for a hold it begins with why it is
	// held (HoldDuplicate, HoldScreening).
	Reason string
}

// The reasons a Control holds a payment, the first word of its status
// reason (the cut-off's hold is ReasonCutoff).
const (
	HoldDuplicate = "DUPLICATE"
	HoldScreening = "SCREENING"
)

// StatusAwaitingApproval: a rule of its tenant wants approvals it does
// not have yet. It holds no slot and is never debited; approved, it is
// paced from its requested time (or from then, if that has passed);
// denied, it is REJECTED.
const StatusAwaitingApproval Status = "AWAITING_APPROVAL"

// control runs the Controls on the accepted payments (indexes into
// verdicts) and answers the decisions that stop or mark a payment, by
// index; those it passes are absent.
func (a *InitActivities) control(ctx context.Context, keys []string, vs []verdict, accepted []int, intakeID string) (map[int]Decision, error) {
	if len(a.cfg.Controls) == 0 || len(accepted) == 0 {
		return nil, nil
	}
	cs := make([]Candidate, len(accepted))
	for j, i := range accepted {
		cs[j] = Candidate{Key: keys[i], Request: vs[i].r, IntakeID: intakeID}
		if vs[i].money != nil {
			cs[j].Money = *vs[i].money
		}
	}
	out := map[int]Decision{}
	for _, c := range a.cfg.Controls {
		ds, err := c.Check(ctx, cs)
		if err != nil {
			return nil, fmt.Errorf("payment: control %s: %w", c.Name(), err)
		}
		if len(ds) != len(cs) {
			return nil, fmt.Errorf("payment: control %s answered %d decisions for %d payments", c.Name(), len(ds), len(cs))
		}
		for j, d := range ds {
			if d.Action == ActionPass {
				continue
			}
			i := accepted[j]
			if prev, ok := out[i]; !ok || d.Action > prev.Action {
				out[i] = d
			}
		}
	}
	return out, nil
}
