package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// WaitingFilter selects the waiting payments a lever moves: SCHEDULED on
// one of Rails (at least one), of a tenant or any, of a file or any,
// whose queue items are not claimed yet.
type WaitingFilter struct {
	Rails    []string
	TenantID string
	BatchID  string
}

// Repaced is what a lever did with the payments it moved.
type Repaced struct {
	// Moved counts the payments given new slots on their business days;
	// Rolled, Held and Rejected those that no longer made their day's
	// cut-off and met their tenants' rules. Claimed counts those left
	// where they were: their executions were claimed already (they keep
	// their slots; the limiter counts their executions where they run).
	Moved    int `json:"moved"`
	Rolled   int `json:"rolled"`
	Held     int `json:"held"`
	Rejected int `json:"rejected"`
	Claimed  int `json:"claimed"`
	// Paused counts those a resume, a release or an approval would have
	// let go but a pause still holds (their tenant's, rail's or file's):
	// SCHEDULED, marked with it, without a slot, until it is resumed.
	Paused int `json:"paused,omitempty"`
	// FirstSlot and LastSlot bound the slots given.
	FirstSlot *time.Time `json:"firstSlot,omitempty"`
	LastSlot  *time.Time `json:"lastSlot,omitempty"`
}

// repaceLead is how far ahead of now a lever's new slots begin: the
// slots of the next moments are being claimed while it moves the rest.
const repaceLead = time.Second

// Repace gives the waiting payments f selects new slots from now, in
// their order, under their rate-limit configs as they are now, each on
// its business day before its cut-off (pacing.Reslot, in one
// transaction): what a changed limit, a resumed pause or a priority asks
// of the payments already waiting. A raised limit brings them sooner, a
// lowered one later, never over it; one that no longer makes its
// day's cut-off meets its tenant's rule. Their queue items move with them,
// locked while they move, so none is claimed at its old slot meanwhile;
// items already claimed keep their slots. record is called in the
// transaction with how many moved.
func (s *Service) Repace(ctx context.Context, f WaitingFilter, record Record) (Repaced, error) {
	if s.cfg.Rails == nil || s.cfg.Pacer == nil || s.cfg.Queue == nil {
		return Repaced{}, ErrNoRails
	}
	if len(f.Rails) == 0 {
		return Repaced{}, ErrNoSelection
	}
	var keys []string
	if f.BatchID != "" {
		q := dbsqlc.New(s.cfg.Store.db)
		parts, err := q.BatchParts(ctx, f.BatchID)
		if err != nil {
			return Repaced{}, fmt.Errorf("payment: batch %s: %w", f.BatchID, err)
		}
		for _, p := range parts {
			keys = append(keys, p.PaymentIds...)
		}
		if len(keys) == 0 {
			return Repaced{}, ErrNotFound
		}
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return Repaced{}, err
	}
	var out Repaced
	err = pgx.BeginFunc(ctx, s.cfg.Store.db, func(tx pgx.Tx) error {
		out = Repaced{}
		rows, err := dbsqlc.New(tx).WaitingOnRails(ctx, dbsqlc.WaitingOnRailsParams{Rails: f.Rails, TenantID: f.TenantID, PaymentIds: keys})
		if err != nil {
			return fmt.Errorf("payment: waiting payments: %w", err)
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.PaymentID
		}
		m := s.mover(tx, def)
		ready, err := s.lockMovable(ctx, tx, ids, m)
		if err != nil {
			return err
		}
		out.Claimed = len(rows) - len(ready)
		for _, r := range rows {
			if ready[r.PaymentID] {
				if err := m.add(ctx, r); err != nil {
					return err
				}
			}
		}
		if err := m.place(ctx); err != nil {
			return err
		}
		n, err := m.store(ctx, &out)
		if err != nil || record == nil || n == 0 {
			return err
		}
		return record(ctx, tx, n)
	})
	return out, err
}

// lockMovable locks, of the waiting payments ids, those a lever may
// move, and returns them: those whose queue items are READY (locked, so
// that no claim takes them meanwhile), and those that have no queue item
// (their slots past the queue's mark: their rows are locked, so that no
// other lever moves them meanwhile). The others are held by their
// executions, or by another lever. It holds the feeder off to the commit
// (the absent stay absent) and tells m which were absent, and the mark.
func (s *Service) lockMovable(ctx context.Context, tx pgx.Tx, ids []string, m *mover) (map[string]bool, error) {
	mark, err := queueMarkShared(ctx, dbsqlc.New(tx))
	if err != nil {
		return nil, err
	}
	ready, absent, err := s.cfg.Queue.LockMovableTx(ctx, tx, ItemType, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ready)+len(absent))
	for _, id := range ready {
		out[id] = true
	}
	m.mark, m.absent = mark, nil
	if len(absent) > 0 {
		locked, err := dbsqlc.New(tx).LockWaitingRows(ctx, absent)
		if err != nil {
			return nil, fmt.Errorf("payment: lock %d waiting payments: %w", len(absent), err)
		}
		m.absent = make(map[string]bool, len(locked))
		for _, id := range locked {
			out[id], m.absent[id] = true, true
		}
	}
	return out, nil
}

// RepaceConfig moves the payments waiting under a rate-limit config (on
// the rails pacing by it, and, for PAYMENT's own, on those that name
// none) to its limit as it is now: a raised limit brings them sooner, a
// lowered one sends them later, never over it. No rail pacing by it:
// nothing to move.
func (s *Service) RepaceConfig(ctx context.Context, config string, record Record) (Repaced, error) {
	if s.cfg.Rails == nil {
		return Repaced{}, ErrNoRails
	}
	rails, err := s.cfg.Rails.Rails(ctx)
	if err != nil {
		return Repaced{}, err
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return Repaced{}, err
	}
	var names []string
	for _, r := range rails {
		if r.PacingConfig == config || (r.PacingConfig == "" && def == config) {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return Repaced{}, nil
	}
	return s.Repace(ctx, WaitingFilter{Rails: names}, record)
}

// mover moves waiting payments in one transaction: every lever's move,
// the release of held payments and an execution's roll past its
// cut-off. Each payment is given a slot by pacing.Limiter.Reslot, the
// one move of slots.
type mover struct {
	rails Rails
	pacer Pacer
	queue *queue.Queue
	guard time.Duration
	tx    pgx.Tx
	def   string
	from  time.Time
	// parked: the payments' queue items are PARKED, absent (never
	// enqueued) or held by their executions (ResumeTx), not READY.
	parked bool
	// absent: of payments moved from READY items (not parked), those
	// without queue items (slots past the queue's mark, which is mark).
	absent map[string]bool
	mark   *time.Time
	// roll: every payment past its day's cut-off rolls, whatever its
	// tenant's rule (a release, an execution's roll), held after
	// maxRolls; and one whose rail is inactive is held.
	roll bool
	// ruled: in a roll, a payment past its day's cut-off meets its
	// tenant's rule all the same (an approval that came late); one held
	// or rejected leaves lateFrom (SCHEDULED when empty).
	ruled    bool
	lateFrom Status
	// fromStatuses are the statuses the payments are moved from
	// (SCHEDULED when empty); reason, when set, is every moved one's.
	fromStatuses []string
	reason       string

	todo   []moving
	placed []moving
	// paused are the moved payments a pause still holds, by key, with
	// its tag (stillPaused).
	paused map[string]string
}

// mover is a move by the service's rails, limiter and queue.
func (s *Service) mover(tx pgx.Tx, def string) *mover {
	return &mover{rails: s.cfg.Rails, pacer: s.cfg.Pacer, queue: s.cfg.Queue, guard: s.cutoffGuard(), tx: tx, def: def, from: s.now().Add(repaceLead)}
}

// moving is a waiting payment on its way to a new slot.
type moving struct {
	key, tenant          string
	rail                 routing.Rail
	day                  routing.Day
	start                time.Time
	railCfg, tenantCfg   string
	rule                 routing.CutoffRule
	rolls                int
	slot                 time.Time
	outcome              Status // SCHEDULED, HELD or REJECTED once placed
	reason               string // HELD's, when not the cut-off's
	rolled, movedNothing bool
	// place and stored order the payments (priorityOrder).
	place, stored time.Time
}

// priorityOrder is the order levers give waiting payments their slots
// in: by place (when each began to wait, moved by its priority:
// Priority.place), then by when Phase A stored them, then as they were.
func priorityOrder(ps []moving) {
	slices.SortStableFunc(ps, func(x, y moving) int {
		if c := x.place.Compare(y.place); c != 0 {
			return c
		}
		return x.stored.Compare(y.stored)
	})
}

func (m *mover) add(ctx context.Context, r dbsqlc.WaitingOnRailsRow) error {
	rail, err := m.rails.Rail(ctx, r.Rail)
	if err != nil && !m.roll {
		return err
	}
	place := Priority(r.Priority).orDefault().place(later(r.RequestedExecutionTime, r.CreatedAt))
	if m.roll && (err != nil || !rail.Active) {
		m.placed = append(m.placed, moving{key: r.PaymentID, tenant: r.TenantID, rail: routing.Rail{Name: r.Rail}, outcome: StatusHeld,
			reason: fmt.Sprintf("%s: rail %s is not available", ReasonCutoff, r.Rail)})
		return nil
	}
	// Never before it was asked for, nor before its day opens.
	base := later(m.from, r.RequestedExecutionTime)
	day, err := m.rails.DayFor(ctx, rail, base)
	if err != nil {
		return err
	}
	if r.ExecutionDate != nil {
		// A roll keeps the business day it rolled to, unless that is
		// over. A lever gives a payment rolled for want of room its
		// first day again (a raised limit or a HIGH payment that
		// displaced it may have made room there), while that day's
		// slots last: once they are over, the day it rolled to, never
		// its tenant's rule for a day it had already left.
		own, err := rail.DayOn(calendarDate(*r.ExecutionDate))
		if err == nil && own.Date.After(day.Date) && (m.roll || day.Late(day.Start(base).Add(m.guard))) {
			day = own
		}
	}
	rule := routing.Roll
	if !m.roll || m.ruled {
		if rule, err = m.rails.CutoffRule(ctx, r.TenantID); err != nil {
			return err
		}
	}
	cfg := r.PacingConfig
	if cfg == "" {
		cfg = rail.PacingConfig
	}
	if cfg == "" {
		cfg = m.def
	}
	m.todo = append(m.todo, moving{key: r.PaymentID, tenant: r.TenantID, rail: rail, day: day, start: day.Start(base),
		railCfg: cfg, tenantCfg: r.TenantPacingConfig, rule: rule, place: place, stored: r.CreatedAt})
	return nil
}

// place reslots the payments to move, in their order, each group of
// configs in one call per instant, rolling the late ones on as their
// tenants' rules say.
func (m *mover) place(ctx context.Context) error {
	priorityOrder(m.todo)
	for round := 0; len(m.todo) > 0; round++ {
		type group struct{ rail, tenant string }
		groups := map[group][]int{}
		var order []group
		for i, p := range m.todo {
			g := group{p.railCfg, p.tenantCfg}
			if g.tenant == g.rail {
				g.tenant = ""
			}
			if _, ok := groups[g]; !ok {
				order = append(order, g)
			}
			groups[g] = append(groups[g], i)
		}
		var late []moving
		for _, g := range order {
			idx := groups[g]
			at := make([]time.Time, len(idx))
			for j, i := range idx {
				at[j] = m.todo[i].start
			}
			if g.tenant != "" {
				events := make([]pacing.Event, len(idx))
				for j, i := range idx {
					events[j] = pacing.Event{ID: m.todo[i].key + tenantEventSuffix, RequestedTime: at[j], Deadline: deadlineOf(m.todo[i].day, m.guard)}
				}
				slots, err := m.pacer.Reslot(ctx, m.tx, g.tenant, events)
				switch {
				case errors.Is(err, pacing.ErrConfigNotFound), errors.Is(err, pacing.ErrConfigInactive):
				case err != nil:
					return err
				default:
					for j, sl := range slots {
						if sl.Status == pacing.StatusLate {
							at[j] = time.Time{}
						} else {
							at[j] = sl.ScheduledTime
						}
					}
				}
			}
			var events []pacing.Event
			var which []int
			for j, i := range idx {
				if at[j].IsZero() {
					late = append(late, m.todo[i])
					continue
				}
				events = append(events, pacing.Event{ID: m.todo[i].key, RequestedTime: at[j], Deadline: deadlineOf(m.todo[i].day, m.guard)})
				which = append(which, i)
			}
			slots, err := m.pacer.Reslot(ctx, m.tx, g.rail, events)
			if errors.Is(err, pacing.ErrConfigNotFound) || errors.Is(err, pacing.ErrConfigInactive) {
				// Not paced: a lever leaves it its time; a roll or a
				// release gives it its day's start.
				for e, i := range which {
					p := m.todo[i]
					if m.roll {
						p.slot, p.outcome, p.rolled = events[e].RequestedTime, StatusScheduled, p.rolls > 0
					} else {
						p.movedNothing = true
					}
					m.placed = append(m.placed, p)
				}
				continue
			}
			if err != nil {
				return err
			}
			var releaseTenant []string
			for e, i := range which {
				p := m.todo[i]
				if slots[e].Status == pacing.StatusLate {
					late = append(late, p)
					releaseTenant = append(releaseTenant, p.key+tenantEventSuffix)
					continue
				}
				p.slot, p.outcome, p.rolled = slots[e].ScheduledTime, StatusScheduled, p.rolls > 0
				m.placed = append(m.placed, p)
			}
			if len(releaseTenant) > 0 && g.tenant != "" {
				if _, err := m.pacer.ReleaseEvents(ctx, m.tx, releaseTenant); err != nil {
					return err
				}
			}
		}
		m.todo = m.todo[:0]
		for _, p := range late {
			switch {
			case p.rule == routing.Reject:
				p.outcome = StatusRejected
				m.placed = append(m.placed, p)
			case p.rule == routing.Hold || p.rolls >= maxRolls:
				p.outcome = StatusHeld
				if p.rolls >= maxRolls {
					p.reason = fmt.Sprintf("%s: no slot on rail %s within %d business days", ReasonCutoff, p.rail.Name, maxRolls)
				}
				m.placed = append(m.placed, p)
			default:
				next, err := m.rails.NextDay(ctx, p.rail, p.day)
				if err != nil {
					return err
				}
				p.day, p.start, p.rolls = next, next.Opens, p.rolls+1
				m.todo = append(m.todo, p)
			}
		}
	}
	return nil
}

// store writes where the payments went, and moves their queue items with
// them, in the transaction; it returns how many changed. A payment no
// longer in a status it is moved from (cancelled meanwhile) is left, and
// its new slots given back.
func (m *mover) store(ctx context.Context, out *Repaced) (int, error) {
	var ids, reasons []string
	var ats, dates []time.Time
	var moves []queue.Deferral
	var rejected []string
	q := dbsqlc.New(m.tx)
	lateFrom := string(StatusScheduled)
	if m.lateFrom != "" {
		lateFrom = string(m.lateFrom)
	}
	for i, p := range m.placed {
		switch {
		case p.movedNothing:
			continue
		case p.outcome == StatusScheduled:
			reason := m.reason
			if p.rolled && reason == "" {
				reason = fmt.Sprintf("ROLLED: no slot before rail %s's cut-off; executes on %s", p.rail.Name, p.day.Date)
			}
			ids, ats, dates, reasons = append(ids, p.key), append(ats, p.slot), append(dates, p.day.Date.In(time.UTC)), append(reasons, reason)
			moves = append(moves, queue.Deferral{ItemID: p.key, At: p.slot})
		case p.outcome == StatusHeld:
			if p.reason == "" {
				m.placed[i].reason = fmt.Sprintf("%s: no slot before rail %s's cut-off at %s on %s", ReasonCutoff, p.rail.Name, p.day.Cutoff.Format(time.RFC3339), p.day.Date)
			}
			if _, err := q.TransitionPayment(ctx, dbsqlc.TransitionPaymentParams{PaymentID: p.key, FromStatus: lateFrom,
				ToStatus: string(StatusHeld), StatusReason: &m.placed[i].reason}); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return 0, fmt.Errorf("payment %s: hold: %w", p.key, err)
			}
			out.Held++
			moves = append(moves, queue.Deferral{ItemID: p.key})
			if err := releaseSlots(ctx, m.pacer, m.tx, []string{p.key}); err != nil {
				return 0, err
			}
		case p.outcome == StatusRejected:
			reason := fmt.Sprintf("%s: no slot before rail %s's cut-off at %s on %s", CodeCutoffMissed, p.rail.Name, p.day.Cutoff.Format(time.RFC3339), p.day.Date)
			if _, err := q.TransitionPayment(ctx, dbsqlc.TransitionPaymentParams{PaymentID: p.key, FromStatus: lateFrom,
				ToStatus: string(StatusRejected), StatusReason: &reason}); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return 0, fmt.Errorf("payment %s: reject: %w", p.key, err)
			}
			out.Rejected++
			rejected = append(rejected, p.key)
			if err := releaseSlots(ctx, m.pacer, m.tx, []string{p.key}); err != nil {
				return 0, err
			}
		}
	}
	from := m.fromStatuses
	if len(from) == 0 {
		from = []string{string(StatusScheduled)}
	}
	moved := map[string]bool{}
	if len(ids) > 0 {
		rows, err := q.ReschedulePayments(ctx, dbsqlc.ReschedulePaymentsParams{
			PaymentIds: ids, Ats: ats, ExecutionDates: dates, Reasons: reasons, FromStatuses: from,
		})
		if err != nil {
			return 0, fmt.Errorf("payment: move %d waiting payments: %w", len(ids), err)
		}
		for _, r := range rows {
			moved[r.PaymentID] = true
		}
	}
	// A move that lets payments go (parked: a resume, a release, an
	// approval, a roll) leaves those a pause still holds marked with it,
	// their slots given back, their items where they were.
	paused, err := m.stillPaused(ctx, moved)
	if err != nil {
		return 0, err
	}
	m.paused = paused
	var gone []string
	kept := moves[:0]
	for _, d := range moves {
		switch {
		case paused[d.ItemID] != "":
			gone = append(gone, d.ItemID)
		case d.At.IsZero() || moved[d.ItemID]:
			kept = append(kept, d)
		default:
			gone = append(gone, d.ItemID)
		}
	}
	moves = kept
	if err := releaseSlots(ctx, m.pacer, m.tx, gone); err != nil {
		return 0, err
	}
	for i, p := range m.placed {
		if p.outcome == StatusScheduled && !p.movedNothing && !moved[p.key] {
			m.placed[i].outcome = "" // left: cancelled, or moved on meanwhile
			continue
		}
		if p.outcome != StatusScheduled || p.movedNothing {
			continue
		}
		if paused[p.key] != "" {
			out.Paused++
			continue
		}
		if p.rolled {
			out.Rolled++
		} else {
			out.Moved++
		}
		at := p.slot.UTC()
		if out.FirstSlot == nil || at.Before(*out.FirstSlot) {
			out.FirstSlot = &at
		}
		if out.LastSlot == nil || at.After(*out.LastSlot) {
			last := at
			out.LastSlot = &last
		}
	}
	n := out.Moved + out.Rolled + out.Held + out.Rejected + out.Paused
	if m.parked {
		// A resume, a release, a roll: the items wait PARKED, were never
		// enqueued, or are held by their executions (left to them); a
		// held one stays parked.
		var resume []queue.Resume
		tenant := m.tenants()
		for _, d := range moves {
			if !d.At.IsZero() {
				resume = append(resume, queue.Resume{ItemID: d.ItemID, TenantID: tenant[d.ItemID], At: d.At})
			}
		}
		if _, err := m.queue.ResumeTx(ctx, m.tx, ItemType, resume); err != nil {
			return 0, err
		}
		if _, err := m.queue.CompleteParkedTx(ctx, m.tx, ItemType, rejected); err != nil {
			return 0, err
		}
		return n, nil
	}
	if _, err := m.queue.MoveReadyTx(ctx, m.tx, ItemType, moves); err != nil {
		return 0, err
	}
	// Payments that had no queue items (their slots were past the
	// queue's mark) get them when their new slots are before it.
	var absent []queue.EnqueueParams
	if len(m.absent) > 0 {
		tenant := m.tenants()
		for _, d := range moves {
			if m.absent[d.ItemID] && !d.At.IsZero() && beforeMark(m.mark, d.At) {
				absent = append(absent, queue.EnqueueParams{ItemID: d.ItemID, TenantID: tenant[d.ItemID], ScheduledExecTime: d.At, Paced: true})
			}
		}
	}
	if _, err := m.queue.EnqueueAbsentTx(ctx, m.tx, ItemType, absent); err != nil {
		return 0, err
	}
	if _, err := m.queue.CompleteReadyTx(ctx, m.tx, ItemType, rejected); err != nil {
		return 0, err
	}
	return n, nil
}

// tenants are the moved payments' tenants, by key.
func (m *mover) tenants() map[string]string {
	out := make(map[string]string, len(m.placed))
	for _, p := range m.placed {
		out[p.key] = p.tenant
	}
	return out
}

// placements are where the move put each payment (those left out: not
// moved, cancelled meanwhile).
func (m *mover) placements() map[string]placement {
	out := make(map[string]placement, len(m.placed))
	for _, p := range m.placed {
		switch p.outcome {
		case StatusScheduled:
			out[p.key] = placement{status: StatusScheduled, slot: ExecSlot{At: p.slot, Paced: !p.movedNothing, Config: p.railCfg},
				tenantConfig: p.tenantCfg, rail: p.rail.Name, date: p.day.Date, rolled: p.rolled, pausedBy: m.paused[p.key]}
		case StatusHeld, StatusRejected:
			out[p.key] = placement{status: p.outcome, reason: p.reason, rail: p.rail.Name}
		}
	}
	return out
}

// calendarDate is a date column's civil date.
func calendarDate(t time.Time) calendar.Date { return calendar.DateOf(t, time.UTC) }

// The reorder's timing: a rail asked for is put in order once nothing
// more was asked for it for reorderQuiet (a file's chunks arrive close
// together), or reorderMost after it was first asked for, whichever
// comes first.
const (
	reorderQuiet = 500 * time.Millisecond
	reorderMost  = 3 * time.Second
)

// Reorder puts in order again the payments waiting on the rails Phase A
// asked for (HIGH payments, or NORMAL ones over LOW ones, joined them)
// that are due, in one move per call (Repace); a move that fails asks
// for them again. It answers how the payments moved.
func (s *Service) Reorder(ctx context.Context) (Repaced, error) {
	if s.cfg.Rails == nil || s.cfg.Pacer == nil || s.cfg.Queue == nil {
		return Repaced{}, nil
	}
	rails, err := s.cfg.Store.q.TakeReorders(ctx, dbsqlc.TakeReordersParams{
		Quiet: pgtype.Interval{Microseconds: reorderQuiet.Microseconds(), Valid: true},
		Most:  pgtype.Interval{Microseconds: reorderMost.Microseconds(), Valid: true},
	})
	if err != nil || len(rails) == 0 {
		return Repaced{}, err
	}
	res, err := s.Repace(ctx, WaitingFilter{Rails: rails}, nil)
	if err != nil {
		if again := s.cfg.Store.q.AskReorder(context.WithoutCancel(ctx), rails); again != nil {
			s.log().Error("a reorder failed and could not be asked for again", "rails", rails, "error", again)
		}
		return Repaced{}, fmt.Errorf("payment: put %v in order: %w", rails, err)
	}
	return res, nil
}

// RunLevers, every interval until ctx is done, puts in order the rails
// Phase A asked for (Reorder) and settles the payments resumed while an
// execution held them (SettleResumed).
func (s *Service) RunLevers(ctx context.Context, interval time.Duration) {
	s.every(ctx, interval, func() {
		if _, err := s.Reorder(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("putting waiting payments in order failed; trying again", "error", err, "in", interval)
		}
		if _, err := s.SettleResumed(ctx); err != nil && ctx.Err() == nil {
			s.log().Warn("settling resumed payments failed; trying again", "error", err, "in", interval)
		}
	})
}

// stillPaused marks the payments a parked move let go (among moved) that
// a pause still holds, each with its pause's tag (a tenant's first, then
// a rail's, then a file's, as Phase A marks them), and answers them by
// key. Nothing in a move that is not parked: a lever moves only what no
// pause holds.
func (m *mover) stillPaused(ctx context.Context, moved map[string]bool) (map[string]string, error) {
	if !m.parked || len(moved) == 0 {
		return nil, nil
	}
	q := dbsqlc.New(m.tx)
	pauses, err := q.ListPauses(ctx)
	if err != nil {
		return nil, fmt.Errorf("payment: pauses: %w", err)
	}
	if len(pauses) == 0 {
		return nil, nil
	}
	scoped := make(map[string]bool, len(pauses))
	inFile := map[string]string{}
	for _, r := range pauses {
		scope := PauseScope{Kind: r.Scope, ID: r.ScopeID}
		if r.Scope != PauseBatch {
			scoped[scope.tag()] = true
			continue
		}
		parts, err := q.BatchParts(ctx, r.ScopeID)
		if err != nil {
			return nil, fmt.Errorf("payment: paused file %s: %w", r.ScopeID, err)
		}
		for _, part := range parts {
			for _, k := range part.PaymentIds {
				if moved[k] && inFile[k] == "" {
					inFile[k] = scope.tag()
				}
			}
		}
	}
	out := map[string]string{}
	var keys, tags []string
	for _, p := range m.placed {
		if !moved[p.key] || p.outcome != StatusScheduled {
			continue
		}
		tag := inFile[p.key]
		for _, s := range []PauseScope{{Kind: PauseRail, ID: p.rail.Name}, {Kind: PauseTenant, ID: p.tenant}} {
			if scoped[s.tag()] {
				tag = s.tag()
			}
		}
		if tag != "" {
			out[p.key] = tag
			keys, tags = append(keys, p.key), append(tags, tag)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	if err := q.SetPausedBy(ctx, dbsqlc.SetPausedByParams{PaymentIds: keys, Tags: tags}); err != nil {
		return nil, fmt.Errorf("payment: mark %d payments paused: %w", len(keys), err)
	}
	return out, nil
}
