package pacing

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/pacing/internal/dbsqlc"
)

// DBTX is a pool or a transaction a call may join.
type DBTX = dbsqlc.DBTX

// Release gives events' slots under a config back: each slot is deleted
// (the event may be assigned again, e.g. a later day's slot), and its
// window's counter takes the place back when the window has not begun, so
// that events assigned afterwards take it. A window that has begun keeps
// its count: an execution may already have gone at the slot. The limit
// holds either way, since executions are counted where they run
// (HoldSlot). db may be the caller's transaction, so that a slot is
// released with the change that frees it. It returns the events whose
// slots were released.
func (l *Limiter) Release(ctx context.Context, db DBTX, configName string, eventIDs []string) ([]string, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	cfg, err := l.GetConfig(ctx, configName)
	if err != nil {
		return nil, err
	}
	q := l.q
	if db != nil {
		q = dbsqlc.New(db)
	}
	ids, err := q.ReleaseSlots(ctx, dbsqlc.ReleaseSlotsParams{
		ConfigName: configName, EventIds: eventIDs, MaxPerWindow: int32(cfg.MaxPerWindow), Now: l.now(),
	})
	if err != nil {
		return nil, fmt.Errorf("pacing: release %d slots under %s: %w", len(eventIDs), configName, err)
	}
	return ids, nil
}

// ReleaseEvents is Release for events whatever their configs (each slot
// knows its own): what a cancel gives back. It returns the events whose
// slots were released.
func (l *Limiter) ReleaseEvents(ctx context.Context, db DBTX, eventIDs []string) ([]string, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	q := l.q
	if db != nil {
		q = dbsqlc.New(db)
	}
	ids, err := q.ReleaseEvents(ctx, dbsqlc.ReleaseEventsParams{EventIds: eventIDs, Now: l.now()})
	if err != nil {
		return nil, fmt.Errorf("pacing: release %d slots: %w", len(eventIDs), err)
	}
	return ids, nil
}

// Projection is where n events requesting one instant would go under a
// config as its windows stand: known before a slot is taken.
type Projection struct {
	// First and Last are the projected times of the first and the last
	// slot placed (zero when none was).
	First, Last time.Time
	// Placed is how many found a slot (before the deadline, when one was
	// given); the rest would be LATE.
	Placed int
}

// Demand is N events requesting one instant, before a deadline (zero:
// none), to project.
type Demand struct {
	Requested time.Time
	N         int
	Deadline  time.Time
}

// maxProjectedWindows bounds a projection's walk: a million windows is
// beyond any cut-off a day has.
const maxProjectedWindows = 1_000_000

// Project says where demands would go under a config, one after the
// other (as a file's instants are assigned), as pacing_assign would place
// them on the counters as they stand: the requested window in proportion
// to what is left of it, then whole windows, the one a deadline falls in
// in proportion. Slots of a window are spread as pacing_assign spreads
// them; a slot's time is taken at its mean jitter. Windows held by other
// transactions are not skipped here, so a projection made while others
// assign can be a little early. One query, bounded.
func (l *Limiter) Project(ctx context.Context, configName string, demands ...Demand) ([]Projection, error) {
	out := make([]Projection, len(demands))
	if len(demands) == 0 {
		return out, nil
	}
	cfg, err := l.activeConfig(ctx, configName)
	if err != nil {
		return nil, err
	}
	w := cfg.Window.Milliseconds()
	from, until, total := int64(0), int64(0), 0
	for i, d := range demands {
		req := ceilMilli(d.Requested).UnixMilli()
		w0 := floorDiv(req, w) * w
		if i == 0 || w0 < from {
			from = w0
		}
		end := w0 + int64(d.N/cfg.MaxPerWindow+2)*w
		if !d.Deadline.IsZero() {
			end = min(end, floorMilli(d.Deadline).UnixMilli()+w)
		}
		until = max(until, end)
		total += d.N
	}
	// The windows the walk can reach: the demands at full room, plus
	// whatever the windows in the way hold, read up to a bound.
	until = min(max(until, from+int64(total/cfg.MaxPerWindow+2)*w*4), from+maxProjectedWindows*w)
	rows, err := l.q.WindowsFrom(ctx, dbsqlc.WindowsFromParams{
		ConfigName: configName, FromTime: time.UnixMilli(from).UTC(), UntilTime: time.UnixMilli(until).UTC(), MaxRows: maxProjectedWindows,
	})
	if err != nil {
		return nil, fmt.Errorf("pacing: project %d events under %s: %w", total, configName, err)
	}
	counts := make(map[int64]int, len(rows))
	for _, r := range rows {
		counts[r.WindowStart.UnixMilli()] = int(r.SlotCount)
	}
	for i, d := range demands {
		if d.N <= 0 {
			continue
		}
		dl := int64(0)
		if !d.Deadline.IsZero() {
			dl = floorMilli(d.Deadline).UnixMilli()
		}
		req := ceilMilli(d.Requested).UnixMilli()
		if dl > 0 && dl <= req {
			continue
		}
		out[i] = project(cfg, req, dl, d.N, counts)
	}
	return out, nil
}

// project is Project's walk over the counters, in memory; it takes the
// places it gives from counts, so the next demand walks past them.
func project(cfg Limit, req, dl int64, n int, counts map[int64]int) Projection {
	var p Projection
	w, maxN := cfg.Window.Milliseconds(), cfg.MaxPerWindow
	w0 := floorDiv(req, w) * w
	place := func(ws, from int64, spreadCap, first, take int) {
		if take <= 0 {
			return
		}
		counts[ws] += take
		span := w - from
		at := func(k int) time.Time {
			// pacing_offset_ms at the mean jitter: a quarter into the part.
			return time.UnixMilli(ws + from + (4*int64(k)+1)*span/(4*int64(spreadCap))).UTC()
		}
		if p.Placed == 0 {
			p.First = at(first)
		}
		p.Last = at(first + take - 1)
		p.Placed += take
	}
	// Phase 1: the requested window, in proportion to what is left of it.
	elapsed := req - w0
	eff := int(int64(maxN) * (w - elapsed) / w)
	capacity := eff
	if dl > 0 && dl < w0+w {
		capacity = max(int(int64(eff)*(dl-req)/(w-elapsed)), 0)
	}
	c := counts[w0]
	place(w0, elapsed, max(eff, 1), c, min(n, max(capacity-c, 0)))
	for ws, walked := w0+w, 0; p.Placed < n && walked < maxProjectedWindows; ws, walked = ws+w, walked+1 {
		if dl > 0 && ws >= dl {
			break
		}
		capacity := maxN
		if dl > 0 && dl < ws+w {
			capacity = int(int64(maxN) * (dl - ws) / w)
		}
		c := counts[ws]
		place(ws, 0, maxN, c, min(n-p.Placed, max(capacity-c, 0)))
	}
	return p
}

// spillHorizon bounds the windows spillEnd reads: those from now on
// that hold slots (a lowered limit leaves over-full only those whose
// events were claimed already, a lead's worth).
const spillHorizon = 1000

// spillEnd is the start of the first window a move may fill after a
// lowered limit, or zero when none is over it: windows from now holding
// more slots than the limit now allows (events that stay, claimed at the
// old limit) will have their executions held to it, each spilling into
// the windows after until it is absorbed, so moved events begin after
// the last spill.
func (l *Limiter) spillEnd(ctx context.Context, q *dbsqlc.Queries, cfg Limit) (time.Time, error) {
	now := l.now()
	w := cfg.Window
	start := now.Truncate(w)
	rows, err := q.WindowsFrom(ctx, dbsqlc.WindowsFromParams{ConfigName: cfg.Name, FromTime: start,
		UntilTime: start.Add(time.Duration(spillHorizon) * w), MaxRows: spillHorizon})
	if err != nil {
		return time.Time{}, fmt.Errorf("pacing: %s's windows: %w", cfg.Name, err)
	}
	return spill(rows, cfg.MaxPerWindow, w), nil
}

// spill walks windows in time order (missing ones hold nothing) carrying
// what each holds over max into the next, and returns the start of the
// window after the last carry was absorbed (zero: nothing over max).
func spill(rows []dbsqlc.WindowsFromRow, max int, w time.Duration) time.Time {
	var end, at time.Time
	carry := 0
	for _, r := range rows {
		// The empty windows between absorb the carry first.
		for carry > 0 && !at.IsZero() && at.Before(r.WindowStart) {
			carry = carry - min(carry, max)
			at = at.Add(w)
			if carry == 0 {
				end = at
			}
		}
		at = r.WindowStart
		held := int(r.SlotCount) + carry
		carry = 0
		if held > max {
			carry = held - max
		} else if held > int(r.SlotCount) {
			end = at.Add(w) // absorbed here: this window is full in effect
		}
		at = at.Add(w)
	}
	for carry > 0 {
		carry -= min(carry, max)
		at = at.Add(w)
		end = at
	}
	return end
}

// Reslot moves events to new slots in the caller's transaction: their
// slots given back (ReleaseEvents), then each given a slot from its
// requested time before its deadline, under the config's limit as it is
// now, in the events' order: the events of an instant go in one round
// trip per chunk, one chunk after the other, so that no event gets a
// later slot than one after it. It is what every lever that moves
// waiting events calls: a changed limit (the events from now, at the new
// rate), a pause's resume, a priority (the order). A config's moves are
// serialised to their commits, and its assignments wait for them, so
// nothing answers LATE for a window a move holds. Results come in the
// order of events, LATE where a deadline left no room (nothing written
// for those), as AssignBulk's.
func (l *Limiter) Reslot(ctx context.Context, tx DBTX, configName string, events []Event) ([]Slot, error) {
	if len(events) == 0 {
		return nil, nil
	}
	cfg, err := l.activeConfig(ctx, configName)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(events))
	for i, e := range events {
		if e.ID == "" || len(e.ID) > 200 || !plaintext.Valid(e.ID) || e.RequestedTime.IsZero() {
			return nil, invalid(fmt.Sprintf("events[%d]", i), "want an event id of 1-200 characters of text and a requested time")
		}
		ids[i] = e.ID
	}
	q := dbsqlc.New(tx)
	if err := q.LockConfigMoves(ctx, cfg.Name); err != nil {
		return nil, fmt.Errorf("pacing: lock %s's moves: %w", cfg.Name, err)
	}
	if _, err := l.ReleaseEvents(ctx, tx, ids); err != nil {
		return nil, err
	}
	if after, err := l.spillEnd(ctx, q, cfg); err != nil {
		return nil, err
	} else if !after.IsZero() {
		moved := make([]Event, len(events))
		for i, e := range events {
			moved[i] = e
			if e.RequestedTime.Before(after) {
				moved[i].RequestedTime = after
			}
		}
		events = moved
	}
	got := make(map[string]Slot, len(events))
	chunk := max(min(l.opts.BulkChunk, cfg.MaxPerWindow*max(cfg.Headroom, 1)), 1)
	for from := 0; from < len(events); {
		// A run of events of one instant and deadline, in order.
		t := instant{at: ceilMilli(events[from].RequestedTime), deadline: floorMilli(events[from].Deadline)}
		to := from + 1
		for to < len(events) && to-from < chunk && ceilMilli(events[to].RequestedTime).Equal(t.at) && floorMilli(events[to].Deadline).Equal(t.deadline) {
			to++
		}
		slots, err := l.assignOn(ctx, q, cfg, t.at, t.deadline, ids[from:to], false)
		if err != nil {
			return nil, err
		}
		for _, s := range slots {
			got[s.EventID] = s
		}
		// A window before the deadline held by a transaction that does not
		// move events (a cancel giving slots back): asked again in this
		// one, each statement seeing what the holders committed.
		if err := l.retryBusy(ctx, q, cfg, t, ids[from:to], got); err != nil {
			return nil, err
		}
		from = to
	}
	out := make([]Slot, len(events))
	for i, id := range ids {
		s, ok := got[id]
		if !ok {
			return nil, errNoResult(id)
		}
		out[i] = s
	}
	return out, nil
}
