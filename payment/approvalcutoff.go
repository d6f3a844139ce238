package payment

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/routing"
)

// ApprovalCutoffs is what one sweep of the payments still awaiting
// approval at their rail's cut-off did, by their tenants' cut-off rules.
type ApprovalCutoffs struct {
	Rejected int `json:"rejected"`
	Held     int `json:"held"`
	Rolled   int `json:"rolled"`
}

// approvalSweepBatch bounds the payments one sweep looks at.
const approvalSweepBatch = 1000

// SweepApprovalCutoffs applies their tenants' cut-off rule to the payments
// whose approvals are still missing at their business day's cut-off
// (less the guard): REJECT ends them REJECTED (CUTOFF_MISSED), HOLD makes
// them HELD (CUTOFF), ROLL keeps them waiting for the next business day,
// which their approval then paces them on. One process sweeps at a time
// (another finds the lock taken and does nothing).
func (s *Service) SweepApprovalCutoffs(ctx context.Context) (ApprovalCutoffs, error) {
	var out ApprovalCutoffs
	if s.cfg.Rails == nil {
		return out, nil
	}
	now := s.now()
	guard := s.cutoffGuard()
	err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		out = ApprovalCutoffs{}
		q := dbsqlc.New(tx)
		mine, err := q.TryApprovalSweepLock(ctx)
		if err != nil || !mine {
			return err
		}
		// A payment requested more than a day ahead cannot be past the
		// cut-off of its day.
		s.sweep.Lock()
		defer s.sweep.Unlock()
		batch := cmp.Or(s.sweep.batch, approvalSweepBatch)
		rows, err := q.AwaitingApprovalOnRails(ctx, dbsqlc.AwaitingApprovalOnRailsParams{Before: now.Add(24 * time.Hour),
			AfterTime: s.sweep.at, AfterID: s.sweep.id, MaxRows: int32(batch)})
		if err != nil {
			return fmt.Errorf("payment: payments awaiting approval: %w", err)
		}
		for _, r := range rows {
			if err := s.sweepOne(ctx, q, r, now, guard, &out); err != nil {
				return err
			}
		}
		// The next round goes on after these, or from the start once
		// every one was looked at.
		s.sweep.at, s.sweep.id = time.Time{}, ""
		if len(rows) == batch {
			last := rows[len(rows)-1]
			s.sweep.at, s.sweep.id = last.RequestedExecutionTime, last.PaymentID
		}
		return nil
	})
	return out, err
}

func (s *Service) sweepOne(ctx context.Context, q *dbsqlc.Queries, r dbsqlc.AwaitingApprovalOnRailsRow, now time.Time, guard time.Duration, out *ApprovalCutoffs) error {
	rail, err := s.cfg.Rails.Rail(ctx, r.Rail)
	if err != nil {
		return nil // its rail is gone: an approval finds it so, an operator cancels it
	}
	day, err := s.cfg.Rails.DayFor(ctx, rail, r.RequestedExecutionTime)
	if err != nil {
		return err
	}
	if r.ExecutionDate != nil {
		// Rolled before: the day it waits for.
		if own, err := rail.DayOn(calendar.DateOf(*r.ExecutionDate, time.UTC)); err == nil && own.Date.After(day.Date) {
			day = own
		}
	}
	if !day.Late(now.Add(guard)) {
		return nil
	}
	rule, err := s.cfg.Rails.CutoffRule(ctx, r.TenantID)
	if err != nil {
		return err
	}
	at := fmt.Sprintf("rail %s's cut-off at %s on %s", rail.Name, day.Cutoff.Format(time.RFC3339), day.Date)
	p := dbsqlc.MissApprovalCutoffParams{PaymentID: r.PaymentID}
	switch rule {
	case routing.Reject:
		p.ToStatus, p.StatusReason = string(StatusRejected), fmt.Sprintf("%s: approvals missing at %s", CodeCutoffMissed, at)
		out.Rejected++
	case routing.Hold:
		p.ToStatus, p.StatusReason = string(StatusHeld), fmt.Sprintf("%s: approvals missing at %s", ReasonCutoff, at)
		out.Held++
	default:
		next, err := s.cfg.Rails.NextDay(ctx, rail, day)
		if err != nil {
			return err
		}
		date := next.Date.In(time.UTC)
		p.ToStatus, p.StatusReason, p.ExecutionDate = string(StatusAwaitingApproval), ptr.Deref(r.StatusReason), &date
		out.Rolled++
	}
	if _, err := q.MissApprovalCutoff(ctx, p); err != nil {
		return fmt.Errorf("payment %s: approvals missing at its cut-off: %w", r.PaymentID, err)
	}
	return nil
}

// RunApprovalCutoffs sweeps every interval until ctx is done.
func (s *Service) RunApprovalCutoffs(ctx context.Context, interval time.Duration) {
	s.every(ctx, interval, func() {
		if _, err := s.SweepApprovalCutoffs(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("the cut-off sweep of payments awaiting approval failed; trying again", "error", err, "in", interval)
		}
	})
}
