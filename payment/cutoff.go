package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/routing"
)

// Rails is what payments need of routing (routing.Resolver): the rails,
// their business days and the tenants' cut-off rules.
type Rails interface {
	Route(ctx context.Context, p routing.Payment) (routing.Rail, error)
	Rail(ctx context.Context, name string) (routing.Rail, error)
	Rails(ctx context.Context) ([]routing.Rail, error)
	DayFor(ctx context.Context, rail routing.Rail, t time.Time) (routing.Day, error)
	NextDay(ctx context.Context, rail routing.Rail, d routing.Day) (routing.Day, error)
	CutoffRule(ctx context.Context, tenant string) (routing.CutoffRule, error)
}

// DefaultCutoffGuard is how long before its rail's cut-off a payment's
// execution may last begin: the time its saga and the relayer take to
// put its instruction on the rail. Slots are never given inside it, and
// an execution that finds itself inside it does not begin.
const DefaultCutoffGuard = 2 * time.Second

// maxRolls bounds how many business days a payment is rolled by: a file
// larger than that many days of its rail's capacity is held instead.
const maxRolls = 10

// tenantEventSuffix tells a payment's slot under its tenant's own
// rate-limit config from its slot under its rail's (pacing_slot is keyed
// by event id alone).
const tenantEventSuffix = "@tenant"

// placement is where Phase A (or a release, or a roll) put one payment.
type placement struct {
	status Status // SCHEDULED, HELD or REJECTED
	reason string
	slot   ExecSlot
	// tenantConfig is the tenant's own rate-limit config the execution
	// is also held under ("": none).
	tenantConfig string
	rail         string
	date         calendar.Date
	// rolled: scheduled on a later business day than its first, by its
	// tenant's ROLL.
	rolled bool
	// pausedBy: its scope is paused; it takes no slot and waits unqueued.
	pausedBy string
}

// toPlace is a payment to place: its key, tenant, rail, and the first
// business day it may execute on, from start.
type toPlace struct {
	key, tenant string
	rail        routing.Rail
	day         routing.Day
	start       time.Time
	rule        routing.CutoffRule // applied when it misses day's cut-off
	rolls       int
	// high: a HIGH payment, which the reorder its chunk asks for
	// (askReorder) may place ahead of those waiting.
	high bool
}

// deadline is the latest a slot may be on day: its cut-off less the
// guard (zero: none).
func (a *InitActivities) deadline(day routing.Day) time.Time {
	if day.Cutoff.IsZero() {
		return time.Time{}
	}
	return day.Cutoff.Add(-a.cutoffGuard())
}

func (a *InitActivities) cutoffGuard() time.Duration {
	if a.cfg.CutoffGuard > 0 {
		return a.cfg.CutoffGuard
	}
	return DefaultCutoffGuard
}

// railFor is the rail a payment leaves by: the one chosen at intake, or,
// for a payment staged before rails were kept, the routing rules' choice.
func (a *InitActivities) railFor(ctx context.Context, r Request, amount decimal.Decimal) (routing.Rail, error) {
	if r.Rail == "" {
		return a.cfg.Rails.Route(ctx, routing.Payment{TenantID: r.TenantID, Currency: r.Currency, Amount: amount})
	}
	rail, err := a.cfg.Rails.Rail(ctx, r.Rail)
	if err != nil {
		return routing.Rail{}, err
	}
	if !rail.Active {
		return routing.Rail{}, fmt.Errorf("rail %s: %w", rail.Name, routing.ErrInactive)
	}
	return rail, nil
}

// placeOnRails is Phase A's "determine the execution time" with rails:
// each payment's business day on its rail (its requested date, rolled
// past the days the rail's calendar closes), then a slot under its rail's
// rate-limit config (and its tenant's own, when it has one) before the
// day's cut-off. A payment with no room before it meets its tenant's
// cut-off rule: ROLL to the next business day's opening, HOLD, or REJECT.
// Slots are keyed by the payment's key, so a retry gets them back; a
// slot's day is read from its time, so a retry finds a rolled payment on
// the day it was rolled to. A payment whose rail is gone is rejected.
func (a *InitActivities) placeOnRails(ctx context.Context, keys []string, rs []Request, verdicts []verdict) (map[string]placement, error) {
	out := make(map[string]placement, len(rs))
	tenants := make([]string, len(rs))
	for i, r := range rs {
		tenants[i] = r.TenantID
	}
	cfgs, err := a.pacingConfigs(ctx, tenants)
	if err != nil {
		return nil, err
	}
	todo := make([]toPlace, 0, len(rs))
	for i, r := range rs {
		amount := decimal.Zero
		if verdicts[i].money != nil {
			amount = verdicts[i].money.Amount
		}
		rail, err := a.railFor(ctx, r, amount)
		if errors.Is(err, routing.ErrNotFound) || errors.Is(err, routing.ErrInactive) || errors.Is(err, routing.ErrNoRoute) || errors.Is(err, routing.ErrInvalid) {
			out[keys[i]] = placement{status: StatusRejected, reason: "rail: " + err.Error()}
			continue
		}
		if err != nil {
			return nil, err
		}
		day, err := a.cfg.Rails.DayFor(ctx, rail, r.RequestedExecutionTime)
		if err != nil {
			return nil, err
		}
		rule, err := a.cfg.Rails.CutoffRule(ctx, r.TenantID)
		if err != nil {
			return nil, err
		}
		todo = append(todo, toPlace{key: keys[i], tenant: r.TenantID, rail: rail, day: day, start: day.Start(r.RequestedExecutionTime), rule: rule,
			high: r.Priority.orDefault() == PriorityHigh})
	}
	first := make(map[string]calendar.Date, len(todo))
	for _, p := range todo {
		first[p.key] = p.day.Date
	}
	for len(todo) > 0 {
		late, err := a.placeRound(ctx, cfgs, todo, out)
		if err != nil {
			return nil, err
		}
		todo = todo[:0]
		for _, p := range late {
			switch {
			case p.high && p.rolls == 0 && p.rule != routing.Roll:
				// A HIGH payment that finds the day full goes ahead of
				// the waiting payments below it when its chunk's reorder
				// moves them: it waits on the next day until then, and
				// meets its tenant's rule only if the reorder finds no
				// room for it either (the lower ones ahead of it then
				// meet theirs).
				next, err := a.cfg.Rails.NextDay(ctx, p.rail, p.day)
				if err != nil {
					return nil, err
				}
				p.day, p.start, p.rolls = next, next.Opens, p.rolls+1
				todo = append(todo, p)
			case p.rule == routing.Reject:
				out[p.key] = placement{status: StatusRejected, rail: p.rail.Name, date: p.day.Date,
					reason: fmt.Sprintf("%s: no slot before rail %s's cut-off at %s on %s", CodeCutoffMissed, p.rail.Name,
						p.day.Cutoff.Format(time.RFC3339), p.day.Date)}
			case p.rule == routing.Hold || p.rolls >= maxRolls:
				reason := fmt.Sprintf("%s: no slot before rail %s's cut-off at %s on %s", ReasonCutoff, p.rail.Name,
					p.day.Cutoff.Format(time.RFC3339), p.day.Date)
				if p.rolls >= maxRolls {
					reason = fmt.Sprintf("%s: no slot on rail %s within %d business days", ReasonCutoff, p.rail.Name, maxRolls)
				}
				out[p.key] = placement{status: StatusHeld, rail: p.rail.Name, date: p.day.Date, reason: reason}
			default: // ROLL: the next business day, from its opening
				next, err := a.cfg.Rails.NextDay(ctx, p.rail, p.day)
				if err != nil {
					return nil, err
				}
				p.day, p.start, p.rolls = next, next.Opens, p.rolls+1
				todo = append(todo, p)
			}
		}
	}
	for key, pl := range out {
		if pl.status == StatusScheduled && pl.date.After(first[key]) {
			// Its events say so: payment.scheduled, then payment.rescheduled.
			pl.rolled = true
			pl.reason = fmt.Sprintf("ROLLED: no slot before rail %s's cut-off on %s; executes on %s", pl.rail, first[key], pl.date)
			out[key] = pl
		}
	}
	return out, nil
}

// placeRound gives each payment of todo a slot on its day, in one call
// per rate-limit config, instant and deadline (pacing.AssignBulk groups
// them); it records the placed ones in out and returns the late ones.
func (a *InitActivities) placeRound(ctx context.Context, cfgs pacingConfigs, todo []toPlace, out map[string]placement) ([]toPlace, error) {
	type group struct{ rail, tenant string }
	groups := map[group][]int{}
	var order []group
	for i, p := range todo {
		railCfg := p.rail.PacingConfig
		if railCfg == "" {
			railCfg = cfgs.def
		}
		tenantCfg := cfgs.byTenant[p.tenant]
		if tenantCfg == railCfg {
			tenantCfg = ""
		}
		g := group{railCfg, tenantCfg}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], i)
	}
	var late []toPlace
	for _, g := range order {
		idx := groups[g]
		// Each payment's requested time under the rail's config: its
		// start, or its slot under its tenant's config when it has one.
		at := make([]time.Time, len(idx))
		for j, i := range idx {
			at[j] = todo[i].start
		}
		tenantPaced := false
		if g.tenant != "" {
			events := make([]pacing.Event, len(idx))
			for j, i := range idx {
				events[j] = pacing.Event{ID: todo[i].key + tenantEventSuffix, RequestedTime: at[j], Deadline: a.deadline(todo[i].day)}
			}
			slots, paced, err := a.assign(ctx, g.tenant, events)
			if err != nil {
				return nil, err
			}
			if tenantPaced = paced; paced {
				for j, s := range slots {
					if s.Status == pacing.StatusLate {
						at[j] = time.Time{}
						continue
					}
					at[j] = s.ScheduledTime
				}
			}
		}
		var events []pacing.Event
		var placing []int // indexes into idx of the events
		for j, i := range idx {
			if at[j].IsZero() {
				late = append(late, todo[i])
				continue
			}
			events = append(events, pacing.Event{ID: todo[i].key, RequestedTime: at[j], Deadline: a.deadline(todo[i].day)})
			placing = append(placing, j)
		}
		if len(events) == 0 {
			continue
		}
		slots, paced, err := a.assign(ctx, g.rail, events)
		if err != nil {
			return nil, err
		}
		var release []string
		for e, j := range placing {
			p := todo[idx[j]]
			if !paced {
				// No usable config: it runs at its requested time, if that
				// makes the cut-off.
				if dl := a.deadline(p.day); !dl.IsZero() && !at[j].Before(dl) {
					late = append(late, p)
					continue
				}
				out[p.key] = a.placed(p, ExecSlot{At: at[j]}, tenantPaced, g.tenant)
				continue
			}
			s := slots[e]
			if s.Status == pacing.StatusLate {
				late = append(late, p)
				release = append(release, p.key+tenantEventSuffix)
				continue
			}
			out[p.key] = a.placed(p, ExecSlot{At: s.ScheduledTime, Paced: true, Config: g.rail}, tenantPaced, g.tenant)
		}
		if tenantPaced && len(release) > 0 {
			// The tenant's places of payments its rail had no room for go
			// back to the tenant's other payments.
			if _, err := a.cfg.Pacer.Release(ctx, nil, g.tenant, release); err != nil {
				return nil, err
			}
		}
	}
	return late, nil
}

// placed is p scheduled at slot, on the business day its slot falls on
// (a retry finds a rolled payment's slot on the day it was rolled to).
func (a *InitActivities) placed(p toPlace, slot ExecSlot, tenantPaced bool, tenantCfg string) placement {
	date := p.day.Date
	if loc, err := p.rail.Location(); err == nil && slot.Paced {
		date = calendar.DateOf(slot.At, loc)
	}
	pl := placement{status: StatusScheduled, slot: slot, rail: p.rail.Name, date: date}
	if tenantPaced {
		pl.tenantConfig = tenantCfg
	}
	return pl
}

// assign gives events slots under a config; paced is false when the
// config is missing or inactive (the events then run at their requested
// times; the operator is told). EXHAUSTED is an error: the step is
// retried.
func (a *InitActivities) assign(ctx context.Context, cfg string, events []pacing.Event) ([]pacing.Slot, bool, error) {
	if a.cfg.Pacer == nil || cfg == "" {
		return nil, false, nil
	}
	slots, err := a.cfg.Pacer.AssignBulk(ctx, cfg, events)
	if a.unpaced(cfg, err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("payment: slots for %d payments under %s: %w", len(events), cfg, err)
	}
	for _, s := range slots {
		if s.Status == pacing.StatusExhausted {
			return nil, false, fmt.Errorf("payment %s: slot under %s: %w", s.EventID, cfg, pacing.ErrExhausted)
		}
	}
	return slots, true, nil
}

// CodeCutoffMissed is the reason code of a payment refused because it
// could not reach its rail before the cut-off (its tenant's rule is
// REJECT).
const CodeCutoffMissed = "CUTOFF_MISSED"

// ReasonCutoff is the reason code of a payment HELD at its rail's
// cut-off (its tenant's rule is HOLD).
const ReasonCutoff = "CUTOFF"

// reschedule gives payments already stored (SCHEDULED or HELD, from
// fromStatuses) new slots on their rails from `from` on, each rolling to
// later business days while a day has no room before its cut-off (up to
// maxRolls, then HELD): the levers' move (mover, pacing's Reslot), in one
// transaction that gives back the slots they had, stores them SCHEDULED
// at their new slots and puts their queue items READY there (resume: a
// parked or never enqueued one is enqueued; one its execution holds is
// left to it). It returns where each went.
func (a *InitActivities) reschedule(ctx context.Context, ps []Payment, from time.Time, fromStatuses []Status, reason string, record Record) (map[string]placement, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	rows := make([]dbsqlc.WaitingOnRailsRow, len(ps))
	for i, p := range ps {
		pc, _, err := a.cfg.Store.ContextAndStatus(ctx, p.Key)
		if err != nil {
			return nil, err
		}
		// Its day is over: from's business day on.
		rows[i] = dbsqlc.WaitingOnRailsRow{PaymentID: p.Key, TenantID: p.TenantID, Rail: p.Rail, RequestedExecutionTime: p.RequestedExecutionTime,
			PacingConfig: pc.PacingConfig, TenantPacingConfig: pc.TenantPacingConfig, Priority: string(p.Priority), CreatedAt: p.CreatedAt}
	}
	cfgs, err := a.pacingConfigs(ctx, nil)
	if err != nil {
		return nil, err
	}
	statuses := make([]string, len(fromStatuses))
	for i, st := range fromStatuses {
		statuses[i] = string(st)
	}
	var out map[string]placement
	err = pgx.BeginFunc(ctx, a.cfg.Store.db, func(tx pgx.Tx) error {
		// Before any payment is locked, as Phase A's store: the pauses
		// as they are at the commit hold what the move lets go.
		if err := dbsqlc.New(tx).LockPausesShared(ctx); err != nil {
			return fmt.Errorf("payment: pauses: %w", err)
		}
		m := &mover{rails: a.cfg.Rails, pacer: a.cfg.Pacer, queue: a.cfg.Queue, guard: a.cutoffGuard(), tx: tx, def: cfgs.def, from: from,
			parked: true, roll: true, fromStatuses: statuses, reason: reason}
		for _, r := range rows {
			if err := m.add(ctx, r); err != nil {
				return err
			}
		}
		if err := m.place(ctx); err != nil {
			return err
		}
		var res Repaced
		if _, err := m.store(ctx, &res); err != nil {
			return err
		}
		out = m.placements()
		if record == nil || res.Moved+res.Rolled == 0 {
			return nil
		}
		return record(ctx, tx, res.Moved+res.Rolled)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pastCutoff reports whether an execution of the payment beginning at t
// cannot reach its rail before the cut-off of its execution date (with
// the guard), and that day. A payment stored before rails has none.
func (a *ExecActivities) pastCutoff(ctx context.Context, pc Context, t time.Time) (bool, routing.Day, routing.Rail, error) {
	if a.cfg.Rails == nil || pc.Rail == "" || pc.ExecutionDate == "" || t.IsZero() {
		return false, routing.Day{}, routing.Rail{}, nil
	}
	rail, err := a.cfg.Rails.Rail(ctx, pc.Rail)
	if err != nil {
		return false, routing.Day{}, routing.Rail{}, err
	}
	date, err := calendar.ParseDate(pc.ExecutionDate)
	if err != nil {
		return false, routing.Day{}, routing.Rail{}, fmt.Errorf("payment: execution date %q: %w", pc.ExecutionDate, err)
	}
	day, err := rail.DayOn(date)
	if err != nil {
		return false, routing.Day{}, routing.Rail{}, err
	}
	guard := a.cfg.CutoffGuard
	if guard <= 0 {
		guard = DefaultCutoffGuard
	}
	return day.Late(t.Add(guard)), day, rail, nil
}

// missedCutoff applies the tenant's cut-off rule to a payment whose
// execution would reach its rail after the cut-off: it never begins.
// REJECT ends it REJECTED (CUTOFF_MISSED), the execution done; HOLD makes
// it HELD and parks its queue item; ROLL gives it a slot on the next
// business day and hands its queue item back for then. No money moved:
// the execution had not begun.
func (a *ExecActivities) missedCutoff(ctx context.Context, in ExecutionInput, day routing.Day, rail routing.Rail, at time.Time) (bool, error) {
	rule, err := a.cfg.Rails.CutoffRule(ctx, in.Context.Request.TenantID)
	if err != nil {
		return false, err
	}
	detail := fmt.Sprintf("its execution at %s would reach rail %s after the cut-off at %s on %s",
		at.UTC().Format(time.RFC3339), rail.Name, day.Cutoff.Format(time.RFC3339), day.Date)
	switch rule {
	case routing.Reject:
		err := a.cfg.Store.Transition(ctx, in.PaymentID, StatusScheduled, StatusRejected, CodeCutoffMissed+": "+detail)
		if errors.Is(err, ErrWrongStatus) {
			return true, nil // cancelled meanwhile
		}
		return err == nil, err
	case routing.Hold:
		err := a.cfg.Store.Transition(ctx, in.PaymentID, StatusScheduled, StatusHeld, ReasonCutoff+": "+detail)
		if errors.Is(err, ErrWrongStatus) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, dispatch.Deferred(time.Time{}, "held at its rail's cut-off")
	}
	p, err := a.cfg.Store.Get(ctx, in.PaymentID)
	if err != nil {
		return false, err
	}
	init := NewInitActivities(InitConfig{Store: a.cfg.Store, Queue: a.cfg.Queue, Pacer: a.cfg.Pacer, Rails: a.cfg.Rails, CutoffGuard: a.cfg.CutoffGuard})
	// Its queue item is being executed, not parked: the reschedule's
	// resume leaves it, and the deferral below moves it.
	places, err := init.reschedule(ctx, []Payment{p}, day.Cutoff, []Status{StatusScheduled}, "ROLLED: "+detail, nil)
	if err != nil {
		return false, err
	}
	pl, ok := places[in.PaymentID]
	switch {
	case !ok:
		return true, nil // cancelled meanwhile
	case pl.status == StatusHeld:
		if err := a.cfg.Store.Transition(ctx, in.PaymentID, StatusScheduled, StatusHeld, pl.reason); err != nil && !errors.Is(err, ErrWrongStatus) {
			return false, err
		}
		return false, dispatch.Deferred(time.Time{}, "held: no business day with room")
	case pl.pausedBy != "":
		return false, dispatch.Deferred(time.Time{}, "rolled, and paused ("+pl.pausedBy+")")
	}
	return false, dispatch.Deferred(pl.slot.At, "rolled to its rail's next business day")
}

// rolledSince reports whether the payment was rolled to a later business
// day after this execution was started for its slot: its stored
// execution date is after its slot's date on its rail.
func (a *ExecActivities) rolledSince(ctx context.Context, in ExecutionInput) bool {
	pc := in.Context
	if a.cfg.Rails == nil || pc.Rail == "" || pc.ExecutionDate == "" || in.NotBefore.IsZero() {
		return false
	}
	rail, err := a.cfg.Rails.Rail(ctx, pc.Rail)
	if err != nil {
		return false
	}
	loc, err := rail.Location()
	if err != nil {
		return false
	}
	date, err := calendar.ParseDate(pc.ExecutionDate)
	return err == nil && date.After(calendar.DateOf(in.NotBefore, loc)) && pc.scheduledAt.After(in.NotBefore)
}
