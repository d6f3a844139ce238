package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// ErrNotWaiting: a lever named a payment that no longer waits (its
// execution began, or it ended).
var ErrNotWaiting = errors.New("payment: not waiting")

// Reprioritized is what a change of priority did.
type Reprioritized struct {
	// Changed counts the payments whose priority changed: waiting
	// (SCHEDULED or HELD), or not yet stored by Phase A.
	Changed int `json:"changed"`
	// Repaced is how the payments waiting on the rails of those changed
	// moved to their new order.
	Repaced Repaced `json:"repaced"`
}

// SetPriority changes the priority of the tenant's payment with the id,
// while it waits: SCHEDULED (its place among those waiting moves with
// it at once), HELD (it counts once released), or not yet stored by
// Phase A. ErrNotFound for an unknown id; ErrNotWaiting for one whose
// execution began or that ended. record is called in the transaction
// that changes it.
func (s *Service) SetPriority(ctx context.Context, tenantID, paymentID string, p Priority, record Record) (Reprioritized, error) {
	if !p.Valid() {
		return Reprioritized{}, invalid(field.Error{Field: "priority", Detail: "HIGH, NORMAL or LOW"})
	}
	key, err := s.cfg.Store.q.PaymentKey(ctx, dbsqlc.PaymentKeyParams{TenantID: tenantID, ExternalID: paymentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Reprioritized{}, fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	}
	if err != nil {
		return Reprioritized{}, fmt.Errorf("payment: priority of %s of %s: %w", paymentID, tenantID, err)
	}
	var rows []string
	if key.InitWorkflowID != nil {
		rows = []string{*key.InitWorkflowID}
	}
	out, err := s.setPriority(ctx, []string{key.PaymentID}, rows, tenantID, p, record)
	if err == nil && out.Changed == 0 {
		st, err := s.cfg.Store.q.PaymentStatuses(ctx, dbsqlc.PaymentStatusesParams{PaymentIds: []string{key.PaymentID}, TenantID: tenantID})
		if err == nil && len(st) == 1 && !waiting(Status(st[0].Status)) {
			return out, fmt.Errorf("payment %s is %s: %w", paymentID, st[0].Status, ErrNotWaiting)
		}
	}
	return out, err
}

// SetBatchPriority changes the priority of a file's waiting payments (as
// SetPriority; with tenantID set, only that tenant's). ErrNotFound for an
// unknown file.
func (s *Service) SetBatchPriority(ctx context.Context, batchID, tenantID string, p Priority, record Record) (Reprioritized, error) {
	if !p.Valid() {
		return Reprioritized{}, invalid(field.Error{Field: "priority", Detail: "HIGH, NORMAL or LOW"})
	}
	keys, err := s.tenantBatchKeys(ctx, batchID, tenantID)
	if err != nil {
		return Reprioritized{}, err
	}
	rows, err := s.cfg.Store.q.BatchIntakeRows(ctx, batchIntakePrefix(batchID))
	if err != nil {
		return Reprioritized{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	return s.setPriority(ctx, keys, rows, tenantID, p, record)
}

// waiting reports whether a payment in status st waits (a priority
// still counts for it).
func waiting(st Status) bool { return st == StatusScheduled || st == StatusHeld }

// setPriority changes the priority of the payments among keys that wait,
// and of those still in the intake rows, in one transaction, then moves
// the payments waiting on their rails to their new order.
func (s *Service) setPriority(ctx context.Context, keys, intakeRows []string, tenantID string, p Priority, record Record) (Reprioritized, error) {
	var out Reprioritized
	var rails []string
	err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		out, rails = Reprioritized{}, nil
		q := dbsqlc.New(tx)
		changed, err := q.SetPriority(ctx, dbsqlc.SetPriorityParams{PaymentIds: keys, Priority: string(p), TenantID: tenantID})
		if err != nil {
			return fmt.Errorf("payment: set the priority of %d payments: %w", len(keys), err)
		}
		for _, c := range changed {
			if c.Rail != "" && !slices.Contains(rails, c.Rail) {
				rails = append(rails, c.Rail)
			}
		}
		out.Changed = len(changed)
		if len(intakeRows) > 0 {
			// A file's payments not stored yet take the priority when
			// Phase A stores them.
			var only []string
			if len(keys) == 1 {
				only = keys
			}
			if _, err := q.SetIntakePriority(ctx, dbsqlc.SetIntakePriorityParams{InitWorkflowIds: intakeRows, PaymentIds: only,
				TenantID: tenantID, Priority: string(p)}); err != nil {
				return fmt.Errorf("payment: set the priority of payments waiting for Phase A: %w", err)
			}
			stored, err := q.PaymentStatuses(ctx, dbsqlc.PaymentStatusesParams{PaymentIds: keys, TenantID: tenantID})
			if err != nil {
				return fmt.Errorf("payment: set the priority: %w", err)
			}
			out.Changed += max(len(keys)-len(stored), 0)
		}
		if record == nil || out.Changed == 0 {
			return nil
		}
		return record(ctx, tx, out.Changed)
	})
	if err != nil || len(rails) == 0 || s.cfg.Rails == nil || s.cfg.Pacer == nil || s.cfg.Queue == nil {
		return out, err
	}
	slices.Sort(rails)
	out.Repaced, err = s.Repace(ctx, WaitingFilter{Rails: rails}, nil)
	if err != nil {
		return out, fmt.Errorf("payment: the priority changed; moving the waiting payments to their order: %w", err)
	}
	return out, nil
}
