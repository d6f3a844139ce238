package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// HeldFilter selects HELD payments an operator releases: by the
// tenant's ids (TenantID and PaymentIDs), a file's (BatchID), or a filter
// (Rail and TenantID; at least one). At most MaxRelease a call.
type HeldFilter struct {
	TenantID   string
	PaymentIDs []string
	BatchID    string
	Rail       string
	// Reasons are the holds released, the first word of a HELD
	// payment's reason (HeldReasons); none: ReleasedByDefault. A
	// screening hit (HoldScreening) is released only named, and only by
	// the payments' ids: clearing a sanctions hit is one decision a
	// payment, never a side effect of a rail's or a file's release.
	Reasons []string
}

// HeldReasons are why a payment is HELD: its rail's cut-off, a suspected
// duplicate, a screening hit.
var HeldReasons = []string{ReasonCutoff, HoldDuplicate, HoldScreening}

// ReleasedByDefault are the holds a release without Reasons lets go.
var ReleasedByDefault = []string{ReasonCutoff, HoldDuplicate}

// ErrScreeningByID: a release of screening hits that does not name the
// payments by id.
var ErrScreeningByID = errors.New("payment: a screening hit is released only by its payment's id (tenant and paymentIds)")

// ErrUnknownHold: a release naming a reason no payment is held for.
var ErrUnknownHold = errors.New("payment: no such hold reason: want CUTOFF, DUPLICATE or SCREENING")

// MaxRelease bounds the payments one release moves.
const MaxRelease = 10_000

// Released is a release's answer.
type Released struct {
	// Released counts the payments scheduled again; Held those that
	// stay HELD (their rail gone or inactive, or no business day with
	// room within the roll limit).
	Released int `json:"released"`
	Held     int `json:"held"`
	// Paused counts the released payments a pause holds (their tenant's,
	// rail's or file's): SCHEDULED without a slot until its resume.
	Paused int `json:"paused,omitempty"`
	// AwaitingApproval counts those whose approvals are still missing:
	// AWAITING_APPROVAL now, not scheduled.
	AwaitingApproval int `json:"awaitingApproval"`
	// FirstSlot and LastSlot bound the slots they were given.
	FirstSlot *time.Time `json:"firstSlot,omitempty"`
	LastSlot  *time.Time `json:"lastSlot,omitempty"`
}

// ErrNoRails: releasing held payments needs the rails (Service.Rails)
// and a limiter (Service.Pacer).
var ErrNoRails = errors.New("payment: no rails to release held payments onto")

// ReleaseReason is the status reason of a payment an operator released
// from its hold (the audit log says which).
const ReleaseReason = "RELEASED by an operator from its hold"

// Release lets HELD payments go again, an operator's override of their
// tenant's HOLD: each is paced again from now on its rail, before the
// cut-off of its rail's current business day, or, with no room left that
// day, from the next business day's opening (never sent late). They are
// SCHEDULED at their new slots, and their queue items READY there, in
// one transaction, with record's entry.
func (s *Service) Release(ctx context.Context, f HeldFilter, record Record) (Released, error) {
	if s.cfg.Rails == nil || s.cfg.Pacer == nil {
		return Released{}, ErrNoRails
	}
	if f.BatchID == "" && f.Rail == "" && f.TenantID == "" {
		return Released{}, ErrNoSelection
	}
	reasons := f.Reasons
	if len(reasons) == 0 {
		reasons = ReleasedByDefault
	}
	for _, r := range reasons {
		switch {
		case !slices.Contains(HeldReasons, r):
			return Released{}, fmt.Errorf("%w: %q", ErrUnknownHold, r)
		case r == HoldScreening && (len(f.PaymentIDs) == 0 || f.BatchID != "" || f.Rail != ""):
			return Released{}, ErrScreeningByID
		}
	}
	var keys []string
	for _, id := range f.PaymentIDs {
		keys = append(keys, Key(f.TenantID, id))
	}
	if f.BatchID != "" {
		inFile, err := s.batchKeys(ctx, f.BatchID)
		if err != nil {
			return Released{}, err
		}
		// The file narrows the ids named; a file none of whose payments
		// was taken in selects nothing, never every held payment.
		if len(keys) > 0 {
			keys = intersect(keys, inFile)
		} else {
			keys = inFile
		}
		if len(keys) == 0 {
			return Released{}, nil
		}
	}
	rows, err := s.cfg.Store.q.MatchHeld(ctx, dbsqlc.MatchHeldParams{Rail: f.Rail, TenantID: f.TenantID, PaymentIds: keys,
		Reasons: reasons, MaxRows: MaxRelease})
	if err != nil {
		return Released{}, fmt.Errorf("payment: select held payments: %w", err)
	}
	rows, awaiting, err := s.awaitApprovals(ctx, rows)
	if err != nil {
		return Released{}, err
	}
	ps := make([]Payment, len(rows))
	for i, r := range rows {
		ps[i] = Payment{Key: r.PaymentID, Request: Request{TenantID: r.TenantID, PaymentID: r.ExternalID, Rail: derefRail(r.Rail),
			RequestedExecutionTime: r.RequestedExecutionTime}}
	}
	init := NewInitActivities(InitConfig{Store: s.cfg.Store, Queue: s.cfg.Queue, Pacer: s.cfg.Pacer, Rails: s.cfg.Rails, CutoffGuard: s.cfg.CutoffGuard})
	places, err := init.reschedule(ctx, ps, s.now(), []Status{StatusHeld}, ReleaseReason, record)
	if err != nil {
		return Released{}, err
	}
	out := Released{AwaitingApproval: awaiting}
	for _, pl := range places {
		if pl.status != StatusScheduled {
			out.Held++
			continue
		}
		if pl.pausedBy != "" {
			out.Paused++
			continue
		}
		out.Released++
		at := pl.slot.At.UTC()
		if out.FirstSlot == nil || at.Before(*out.FirstSlot) {
			out.FirstSlot = &at
		}
		if out.LastSlot == nil || at.After(*out.LastSlot) {
			at2 := at
			out.LastSlot = &at2
		}
	}
	return out, nil
}

func derefRail(r *string) string {
	if r == nil {
		return ""
	}
	return *r
}

// Backlog is what waits for a rail.
type Backlog struct {
	// Waiting counts its SCHEDULED payments; FirstSlot and LastSlot bound
	// their slots (nil: none waits). The last slot is when the rail will
	// have been sent everything waiting for it: the projected finish.
	Waiting   int64      `json:"waiting"`
	FirstSlot *time.Time `json:"firstSlot,omitempty"`
	LastSlot  *time.Time `json:"lastSlot,omitempty"`
	// Held counts its HELD payments.
	Held int64 `json:"held"`
}

// RailBacklog is what waits for the rail with a slot before until (zero:
// whenever), and what it holds: read from the payments' rail indexes
// (those waiting and those held), not from the whole table.
func (s *Store) RailBacklog(ctx context.Context, rail string, until time.Time) (Backlog, error) {
	if until.IsZero() {
		until = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	r, err := s.q.RailBacklog(ctx, dbsqlc.RailBacklogParams{Rail: rail, Until: until})
	if err != nil {
		return Backlog{}, fmt.Errorf("payment: rail %s's backlog: %w", rail, err)
	}
	b := Backlog{Waiting: r.Waiting, Held: r.Held}
	if r.Waiting > 0 {
		first, last := r.FirstSlot.UTC(), r.LastSlot.UTC()
		b.FirstSlot, b.LastSlot = &first, &last
	}
	return b, nil
}

// ProjectedFinish is when what waits is projected to have left its rail:
// the later of its last slot and now plus what waits at the rail's rate
// (a rate of 0: its last slot). Slots are always before the cut-off, but
// executions held behind them (a backlog, a lowered limit, a paused
// queue) finish later. Nil when nothing waits.
func (b Backlog) ProjectedFinish(ratePerSecond float64, now time.Time) *time.Time {
	if b.LastSlot == nil {
		return nil
	}
	finish := *b.LastSlot
	if ratePerSecond > 0 {
		if drained := now.Add(time.Duration(float64(b.Waiting) / ratePerSecond * float64(time.Second))); drained.After(finish) {
			finish = drained.UTC()
		}
	}
	return &finish
}

// awaitApprovals moves the HELD payments among rows whose approvals are
// missing to AWAITING_APPROVAL (a release overrides a hold, never an
// approval rule), and answers the others, and how many it moved. It
// locks them before it counts their approvals, so an approval in flight
// is counted (it locks them too): a payment whose last approval lands
// during a release is released, never left AWAITING_APPROVAL approved.
func (s *Service) awaitApprovals(ctx context.Context, rows []dbsqlc.MatchHeldRow) ([]dbsqlc.MatchHeldRow, int, error) {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.PaymentID
	}
	missing := map[string]string{}
	moved := 0
	err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		clear(missing)
		moved = 0
		locked, err := q.LockHeldWithRequirement(ctx, keys)
		if err != nil || len(locked) == 0 {
			return err
		}
		states, err := q.ApprovalStates(ctx, locked)
		if err != nil {
			return fmt.Errorf("payment: approval states: %w", err)
		}
		for _, st := range states {
			if st.Approved < st.Needed {
				missing[st.PaymentID] = approvalReason(int(st.Approved), int(st.Needed), st.Rule)
			}
		}
		for key, reason := range missing {
			n, err := q.AwaitApproval(ctx, dbsqlc.AwaitApprovalParams{PaymentIds: []string{key}, StatusReason: reason})
			if err != nil {
				return fmt.Errorf("payment %s: await its approvals: %w", key, err)
			}
			moved += len(n)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("payment: a release's approvals: %w", err)
	}
	if len(missing) == 0 {
		return rows, 0, nil
	}
	kept := rows[:0]
	for _, r := range rows {
		if _, ok := missing[r.PaymentID]; !ok {
			kept = append(kept, r)
		}
	}
	return kept, moved, nil
}

// MaxReject bounds the held payments one rejection names, and
// MaxRejectReason its reason's length.
const (
	MaxReject       = 1000
	MaxRejectReason = 500
)

// ReasonRejectedBy begins the status reason of a held payment an
// operator rejected: "REJECTED by <actor>: <reason>".
const ReasonRejectedBy = "REJECTED by "

// RejectHeld ends the tenant's HELD payments named by id REJECTED, with
// the operator's reason ("REJECTED by <actor>: <reason>"), their parked
// queue items done, in one transaction with record's entry: the
// decision on a screening hit, a suspected duplicate or a cut-off's hold
// that is not to go. A payment not HELD (released, cancelled meanwhile)
// is left; the answer counts those rejected.
func (s *Service) RejectHeld(ctx context.Context, tenantID string, paymentIDs []string, actor, reason string, record Record) (int, error) {
	if tenantID == "" || len(paymentIDs) == 0 {
		return 0, ErrNoSelection
	}
	keys := make([]string, len(paymentIDs))
	for i, id := range paymentIDs {
		keys[i] = Key(tenantID, id)
	}
	text := ReasonRejectedBy + actor + ": " + reason
	n := 0
	err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		var err error
		if n, err = s.rejectTx(ctx, tx, keys, text, StatusHeld); err != nil || record == nil || n == 0 {
			return err
		}
		return record(ctx, tx, n)
	})
	return n, err
}

// rejectTx ends the payments among keys still in one of the statuses
// from REJECTED with the reason text, their parked queue items (a
// cut-off's hold) done, in tx: a denial's and an operator's rejection.
// It answers how many it rejected.
func (s *Service) rejectTx(ctx context.Context, tx pgx.Tx, keys []string, text string, from ...Status) (int, error) {
	statuses := make([]string, len(from))
	for i, st := range from {
		statuses[i] = string(st)
	}
	rejected, err := dbsqlc.New(tx).RejectWaiting(ctx, dbsqlc.RejectWaitingParams{PaymentIds: keys, FromStatuses: statuses, StatusReason: text})
	if err != nil {
		return 0, fmt.Errorf("payment: reject %d payments: %w", len(keys), err)
	}
	if s.cfg.Queue != nil {
		if _, err := s.cfg.Queue.CompleteParkedTx(ctx, tx, ItemType, rejected); err != nil {
			return 0, err
		}
	}
	return len(rejected), nil
}
