package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// PauseScope is what a pause holds: a tenant's payments, a file's, or a
// rail's.
type PauseScope struct {
	Kind string `json:"scope"` // TENANT, BATCH or RAIL
	ID   string `json:"id"`
}

// The kinds of pause.
const (
	PauseTenant = "TENANT"
	PauseBatch  = "BATCH"
	PauseRail   = "RAIL"
)

// Validate names what is wrong with a scope.
func (p PauseScope) Validate() error {
	switch p.Kind {
	case PauseTenant, PauseBatch:
		if !field.ValidID(p.ID) && !(p.Kind == PauseBatch && len(p.ID) <= 100 && p.ID != "") {
			return invalid(field.Error{Field: "id", Detail: "want a tenant's or a file's id"})
		}
	case PauseRail:
		if !routing.ValidName(p.ID) {
			return invalid(field.Error{Field: "id", Detail: "want a rail's name"})
		}
	default:
		return invalid(field.Error{Field: "scope", Detail: "want TENANT, BATCH or RAIL"})
	}
	return nil
}

// tag is what marks a paused payment (payments.paused_by).
func (p PauseScope) tag() string { return p.Kind + ":" + p.ID }

// resumedMark marks a payment resumed while an execution held its item
// (payments.paused_by): not paused, to be settled (SettleResumed).
const resumedMark = "RESUMED"

// pauseTag is the tag of the pause that holds a payment of the tenant on
// the rail, stored by the intake row batchTag names ("" for none), among
// the pauses paused (tags by tag; PauseBatch: its file's).
func pauseTag(paused map[string]string, tenant, rail string) string {
	if t := paused[PauseTenant+":"+tenant]; t != "" {
		return t
	}
	if rail != "" {
		if t := paused[PauseRail+":"+rail]; t != "" {
			return t
		}
	}
	return paused[PauseBatch]
}

// Pause is a scope paused, and since when.
type Pause struct {
	PauseScope
	PausedAt time.Time `json:"pausedAt"`
}

// Paused is a pause's or a resume's answer.
type Paused struct {
	// Payments counts the waiting payments the pause holds (a second
	// pause of the scope holds those that came since).
	Payments int `json:"payments"`
	// Parked counts the payments held now: their queue items parked, or
	// they had none yet (slots past the queue's mark). The others were
	// claimed already, and park themselves before their executions begin.
	Parked int `json:"parked"`
	// Repaced is how the payments still waiting on the paused payments'
	// rails moved up into the slots they gave back.
	Repaced Repaced `json:"repaced"`
}

// Pause pauses a scope: its waiting payments (SCHEDULED, their executions
// not begun) are marked paused, stay SCHEDULED in their order, their
// queue items PARKED, and their slots are given back to the others;
// those Phase A stores meanwhile are marked too; an execution not yet
// begun parks its item. An execution that has begun finishes. In one
// transaction, with record's entry; then the payments still waiting on
// their rails move up into the slots given back (Repace). Pausing a
// paused scope again pauses what came since.
func (s *Service) Pause(ctx context.Context, scope PauseScope, record Record) (Paused, error) {
	if err := scope.Validate(); err != nil {
		return Paused{}, err
	}
	var keys []string
	if scope.Kind == PauseBatch {
		var err error
		if keys, err = s.batchKeys(ctx, scope.ID); err != nil {
			return Paused{}, err
		}
	}
	var out Paused
	var rails []string
	err := pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		out, rails = Paused{}, nil
		q := dbsqlc.New(tx)
		if err := q.LockPauses(ctx); err != nil {
			return fmt.Errorf("payment: pause %s: %w", scope.tag(), err)
		}
		if _, err := q.InsertPause(ctx, dbsqlc.InsertPauseParams{Scope: scope.Kind, ScopeID: scope.ID}); err != nil {
			return fmt.Errorf("payment: pause %s: %w", scope.tag(), err)
		}
		marked, err := q.MarkPaused(ctx, dbsqlc.MarkPausedParams{Tag: scope.tag(), Scope: scope.Kind, ScopeID: scope.ID, PaymentIds: keys})
		if err != nil {
			return fmt.Errorf("payment: pause %s: %w", scope.tag(), err)
		}
		out.Payments = len(marked)
		ids := make([]string, len(marked))
		for i, m := range marked {
			ids[i] = m.PaymentID
			if m.Rail != "" && !slices.Contains(rails, m.Rail) {
				rails = append(rails, m.Rail)
			}
		}
		// Payments without queue items (their slots past the queue's
		// mark, the feeder held off meanwhile) are held by the mark alone.
		if _, err := queueMarkShared(ctx, q); err != nil {
			return err
		}
		locked, absent, err := s.cfg.Queue.LockMovableTx(ctx, tx, ItemType, ids)
		if err != nil {
			return err
		}
		park := make([]queue.Deferral, len(locked))
		for i, id := range locked {
			park[i] = queue.Deferral{ItemID: id}
		}
		parked, err := s.cfg.Queue.MoveReadyTx(ctx, tx, ItemType, park)
		if err != nil {
			return err
		}
		parked = append(parked, absent...)
		out.Parked = len(parked)
		if err := releaseSlots(ctx, s.cfg.Pacer, tx, parked); err != nil {
			return err
		}
		if record == nil {
			return nil
		}
		return record(ctx, tx, out.Payments)
	})
	if err != nil || out.Parked == 0 || len(rails) == 0 || s.cfg.Rails == nil {
		return out, err
	}
	slices.Sort(rails)
	if out.Repaced, err = s.Repace(ctx, WaitingFilter{Rails: rails}, nil); err != nil {
		return out, fmt.Errorf("payment: %s paused; moving the others up: %w", scope.tag(), err)
	}
	return out, nil
}

// releaseSlots gives back the slots of payments that will not run at
// them (their rails' and their tenants').
func releaseSlots(ctx context.Context, pacer Pacer, tx pgx.Tx, keys []string) error {
	if pacer == nil || len(keys) == 0 {
		return nil
	}
	events := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		events = append(events, k, k+tenantEventSuffix)
	}
	_, err := pacer.ReleaseEvents(ctx, tx, events)
	return err
}

// Resume lets a paused scope's payments go again: each is paced from now
// at its config's rate, in its order (never a burst), on its business
// day before its cut-off, or its tenant's rule; its queue item READY at
// its new slot. A payment whose execution held its item at the resume
// (claimed before the pause parked it) is left to that execution: it
// runs at its slot, still counted, or parks, and SettleResumed paces it
// then. In one transaction, with record's entry. ErrNotFound: the scope
// is not paused.
func (s *Service) Resume(ctx context.Context, scope PauseScope, record Record) (Repaced, error) {
	if err := scope.Validate(); err != nil {
		return Repaced{}, err
	}
	if s.cfg.Rails == nil || s.cfg.Pacer == nil || s.cfg.Queue == nil {
		return Repaced{}, ErrNoRails
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return Repaced{}, err
	}
	var out Repaced
	err = pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		out = Repaced{}
		q := dbsqlc.New(tx)
		if err := q.LockPauses(ctx); err != nil {
			return fmt.Errorf("payment: resume %s: %w", scope.tag(), err)
		}
		n, err := q.DeletePause(ctx, dbsqlc.DeletePauseParams{Scope: scope.Kind, ScopeID: scope.ID})
		if err != nil {
			return fmt.Errorf("payment: resume %s: %w", scope.tag(), err)
		}
		if n == 0 {
			return fmt.Errorf("payment: %s is not paused: %w", scope.tag(), ErrNotFound)
		}
		rows, err := q.PausedPayments(ctx, scope.tag())
		if err != nil {
			return fmt.Errorf("payment: resume %s: %w", scope.tag(), err)
		}
		waiting := make([]dbsqlc.WaitingOnRailsRow, len(rows))
		for i, r := range rows {
			waiting[i] = dbsqlc.WaitingOnRailsRow(r)
		}
		movable, inFlight, err := s.movable(ctx, tx, waiting)
		if err != nil {
			return err
		}
		out.Claimed = len(inFlight)
		if err := q.ClearPaused(ctx, dbsqlc.ClearPausedParams{Tag: scope.tag(), InFlight: inFlight}); err != nil {
			return fmt.Errorf("payment: resume %s: %w", scope.tag(), err)
		}
		moved, err := s.moveParked(ctx, tx, def, movable, &out)
		if err != nil || record == nil {
			return err
		}
		return record(ctx, tx, moved)
	})
	return out, err
}

// movable splits paused payments into those whose queue items wait
// PARKED, or were never enqueued (Phase A stored them paused), which a
// resume moves, and those an execution holds, locking the items.
func (s *Service) movable(ctx context.Context, tx pgx.Tx, rows []dbsqlc.WaitingOnRailsRow) ([]dbsqlc.WaitingOnRailsRow, []string, error) {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.PaymentID
	}
	states, err := s.cfg.Queue.LockStatesTx(ctx, tx, ItemType, ids)
	if err != nil {
		return nil, nil, err
	}
	var movable []dbsqlc.WaitingOnRailsRow
	var inFlight []string
	for _, r := range rows {
		switch st, ok := states[r.PaymentID]; {
		case !ok || st == queue.StatusParked:
			movable = append(movable, r)
		default:
			inFlight = append(inFlight, r.PaymentID)
		}
	}
	return movable, inFlight, nil
}

// moveParked paces payments whose items wait PARKED (or are absent) from
// now, and lets their items go at their new slots.
func (s *Service) moveParked(ctx context.Context, tx pgx.Tx, def string, rows []dbsqlc.WaitingOnRailsRow, out *Repaced) (int, error) {
	m := s.mover(tx, def)
	m.parked = true
	for _, r := range rows {
		if err := m.add(ctx, r); err != nil {
			return 0, err
		}
	}
	if err := m.place(ctx); err != nil {
		return 0, err
	}
	return m.store(ctx, out)
}

// SettleResumed settles the payments a resume left to their executions
// (marked RESUMED): one whose execution parked its item is paced from
// now, as the resume would have; one that ran, or left SCHEDULED, is
// unmarked; one still held waits for the next call. It answers how many
// it settled.
func (s *Service) SettleResumed(ctx context.Context) (int, error) {
	if s.cfg.Rails == nil || s.cfg.Pacer == nil || s.cfg.Queue == nil {
		return 0, nil
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return 0, err
	}
	settled := 0
	err = pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		settled = 0
		q := dbsqlc.New(tx)
		if err := q.LockPausesShared(ctx); err != nil {
			return fmt.Errorf("payment: pauses: %w", err)
		}
		rows, err := q.ResumedPayments(ctx, 1000)
		if err != nil || len(rows) == 0 {
			return err
		}
		var waiting []dbsqlc.WaitingOnRailsRow
		var done []string
		for _, r := range rows {
			if Status(r.Status) != StatusScheduled {
				done = append(done, r.PaymentID)
				continue
			}
			waiting = append(waiting, dbsqlc.WaitingOnRailsRow{PaymentID: r.PaymentID, TenantID: r.TenantID, Rail: r.Rail,
				ExecutionDate: r.ExecutionDate, RequestedExecutionTime: r.RequestedExecutionTime, ScheduledAt: r.ScheduledAt,
				PacingConfig: r.PacingConfig, TenantPacingConfig: r.TenantPacingConfig, Priority: r.Priority, CreatedAt: r.CreatedAt})
		}
		movable, _, err := s.movable(ctx, tx, waiting)
		if err != nil {
			return err
		}
		for _, r := range movable {
			done = append(done, r.PaymentID)
		}
		if err := q.ClearResumed(ctx, done); err != nil {
			return fmt.Errorf("payment: settle resumed payments: %w", err)
		}
		var out Repaced
		if _, err := s.moveParked(ctx, tx, def, movable, &out); err != nil {
			return err
		}
		settled = len(done)
		return nil
	})
	return settled, err
}

// Pauses lists the scopes paused.
func (s *Service) Pauses(ctx context.Context) ([]Pause, error) {
	rows, err := s.cfg.Store.q.ListPauses(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: pauses: %w", err)
	}
	out := make([]Pause, len(rows))
	for i, r := range rows {
		out[i] = Pause{PauseScope: PauseScope{Kind: r.Scope, ID: r.ScopeID}, PausedAt: r.PausedAt.UTC()}
	}
	return out, nil
}

// batchKeys are a file's payments' keys (ErrNotFound: no such file).
func (s *Service) batchKeys(ctx context.Context, batchID string) ([]string, error) {
	return s.tenantBatchKeys(ctx, batchID, "")
}

// tenantBatchKeys are batchKeys of a file of the tenant's (any tenant's
// for ""): another tenant's file is ErrNotFound, as one that does not
// exist, so that a tenant's caller learns nothing of other files.
func (s *Service) tenantBatchKeys(ctx context.Context, batchID, tenantID string) ([]string, error) {
	q := dbsqlc.New(s.cfg.Store.db)
	if b, err := q.GetBatch(ctx, batchID); errors.Is(err, pgx.ErrNoRows) || err == nil && tenantID != "" && !slices.Contains(b.Tenants, tenantID) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	parts, err := q.BatchParts(ctx, batchID)
	if err != nil {
		return nil, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	var keys []string
	for _, p := range parts {
		keys = append(keys, p.PaymentIds...)
	}
	return keys, nil
}
