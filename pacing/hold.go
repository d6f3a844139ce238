package pacing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/paydispatch/paydispatch/pacing/internal/dbsqlc"
)

// Held is how HoldSlot let an execution go.
type Held struct {
	// At is when it went, on this process's clock, within the window it
	// was counted in: its execution's time. It is the slot or later: later
	// when it came late or its window's executions were taken.
	At time.Time
	// Moved: it went in another window than its slot's.
	Moved bool
}

// HoldSlot holds an execution until its slot, on this process's clock,
// and counts it in the executions of the window it runs in
// (pacing_execute), so that no window of the config lets more than its
// limit go, whether its executions come on time or late. A slot counts in
// its own window only: executions that come after their slots' windows (a
// worker behind, a backlog catching up) would otherwise burst into windows
// that never counted them. An execution whose window is full waits for its
// place in the first later window with room. Every execution under a
// config must go through here for the count to hold.
//
// An execution on time is counted in its slot's window up to countAhead
// before its slot, and the counts that come together (a batch
// execution's group, started at once) go in one statement and one commit.
// If it then goes outside the window it was counted in, it is counted
// again where it goes: a count is never carried into another window, and
// one left unused costs a place, never the limit.
//
// A config that is missing or inactive lets the execution go at its slot:
// the operator has turned pacing off. ErrExhausted (no window with room
// within the config's headroom) and a database error are returned; the
// caller retries.
func (l *Limiter) HoldSlot(ctx context.Context, configName string, slot time.Time) (Held, error) {
	return l.HoldSlots(ctx, slot, configName)
}

// HoldSlots is HoldSlot under several configs at once (a rail's and its
// tenant's): the execution goes when each of them has counted it in the
// window it runs in. It is counted under each in turn, from the time the
// ones before let it go; a config that sends it to a later window moves
// it for the others, and it is counted again where it then is. Configs
// missing or inactive are left out; with none left, it goes at its slot.
func (l *Limiter) HoldSlots(ctx context.Context, slot time.Time, configNames ...string) (Held, error) {
	h := Held{At: slot}
	if err := Hold(ctx, slot.Add(-countAhead)); err != nil {
		return h, err
	}
	cfgs := make([]Limit, 0, len(configNames))
	for _, name := range configNames {
		cfg, err := l.activeConfig(ctx, name)
		if errors.Is(err, ErrConfigNotFound) || errors.Is(err, ErrConfigInactive) {
			continue
		}
		if err != nil {
			return h, err
		}
		cfgs = append(cfgs, cfg)
	}
	if len(cfgs) == 0 {
		return h, Hold(ctx, slot)
	}
	// The tightest rate first: a count it moves leaves the looser
	// configs' counts, taken after it, where they are.
	slices.SortStableFunc(cfgs, func(a, b Limit) int {
		return cmp.Compare(float64(a.MaxPerWindow)/float64(a.Window), float64(b.MaxPerWindow)/float64(b.Window))
	})
	// A count that came back after its window ended (a slow round trip)
	// is left unused, and the execution counted again where it now is.
	counted := make([]time.Time, len(cfgs))
	from, onTime := slot, true
	for range maxRecounts {
		// At its own slot, it is spread already: it goes then, unless its
		// window is full. Late, it takes its place among the window's.
		at, spread := time.Now(), true
		if onTime && (!at.After(slot) || sameWindow(at, slot, cfgs[0].Window)) {
			at, spread = later(at, slot), false
		} else {
			at = later(at, from)
		}
		// Each config counts it where it is; one that moves it makes the
		// others whose window it left count it again there (a count left
		// behind costs a place, never the limit).
		for pass := 0; pass < maxRecounts && !inCountedWindows(at, cfgs, counted); pass++ {
			for i, cfg := range cfgs {
				if !counted[i].IsZero() && sameWindow(at, counted[i], cfg.Window) {
					continue
				}
				r, err := l.executions.do(ctx, executeKey{cfg.Name, cfg.Version}, executeRequest{cfg: cfg, at: at, spread: spread})
				if err == nil {
					err = r.err
				}
				if err != nil {
					return h, fmt.Errorf("pacing: let an execution go under %s: %w", cfg.Name, err)
				}
				if r.at.Unix() == 0 {
					return h, fmt.Errorf("pacing: no window with room for an execution under %s within %d windows: %w", cfg.Name, cfg.Headroom, ErrExhausted)
				}
				if r.at.After(at) {
					at, spread = r.at, true
				}
				counted[i] = r.at
			}
		}
		if !inCountedWindows(at, cfgs, counted) {
			from, onTime = at, false
			clear(counted)
			continue
		}
		if err := Hold(ctx, at); err != nil {
			return h, err
		}
		if went := time.Now(); inCountedWindows(went, cfgs, counted) {
			h.At, h.Moved = went, !sameWindow(went, slot, cfgs[0].Window)
			return h, nil
		}
		clear(counted)
	}
	return h, fmt.Errorf("pacing: an execution under %v missed its window %d times: %w", configNames, maxRecounts, ErrExhausted)
}

// inCountedWindows reports whether t falls in each window an execution
// was counted in (counted[i] under cfgs[i]).
func inCountedWindows(t time.Time, cfgs []Limit, counted []time.Time) bool {
	for i, cfg := range cfgs {
		if !sameWindow(t, counted[i], cfg.Window) {
			return false
		}
	}
	return true
}

// countAhead is how long before its slot an execution on time is
// counted: a batch execution's group starts a second or so before its
// first item, so that its items are counted together.
const countAhead = 2 * time.Second

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

type executeKey struct {
	config  string
	version int
}

type executeRequest struct {
	cfg    Limit
	at     time.Time // when it would go: its slot, or now when later
	spread bool
}

type executeResult struct {
	at  time.Time // when it may go; the epoch when no window had room
	err error
}

// executeBatch counts executions of one config in one statement: one
// pacing_execute each, in the order they came.
func (l *Limiter) executeBatch(ctx context.Context, reqs []executeRequest) []executeResult {
	cfg := reqs[0].cfg
	ats := make([]time.Time, len(reqs))
	spreads := make([]bool, len(reqs))
	for i, r := range reqs {
		ats[i], spreads[i] = r.at, r.spread
	}
	rows, err := l.q.ExecuteMany(ctx, dbsqlc.ExecuteManyParams{ConfigName: cfg.Name, WindowMs: cfg.Window.Milliseconds(),
		MaxPerWindow: int32(cfg.MaxPerWindow), Headroom: int32(cfg.Headroom), GuardMs: guardMs(cfg.Window), Nows: ats, Spreads: spreads})
	if err == nil && len(rows) != len(reqs) {
		err = fmt.Errorf("%d counts for %d executions", len(rows), len(reqs))
	}
	out := make([]executeResult, len(reqs))
	for i := range out {
		if err != nil {
			out[i].err = err
		} else {
			out[i].at = rows[i].RunAt // in the requests' order (ORDER BY)
		}
	}
	return out
}

// maxRecounts bounds how often HoldSlot counts one execution again.
const maxRecounts = 10

// guardMs is the end of a window in which an execution is counted in the
// next one: the time between the count and the execution's own clock
// reading (a round trip) must not carry it past the window's end.
func guardMs(window time.Duration) int64 {
	return min(window.Milliseconds()/200, 5)
}

// sameWindow reports whether a and b fall in one window of the given size
// (windows are counted from the Unix epoch, as pacing_assign counts them).
func sameWindow(a, b time.Time, window time.Duration) bool {
	w := window.Milliseconds()
	if w <= 0 {
		return true
	}
	return floorDiv(a.UnixMilli(), w) == floorDiv(b.UnixMilli(), w)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Hold waits until t on this process's clock (a past or zero t returns at
// once). A timer in the worker is exact to the millisecond, where the
// engine's timers can fire seconds late under load.
func Hold(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if t.IsZero() || d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
