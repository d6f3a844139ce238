package pacing

import (
	"context"
	"errors"
	"fmt"
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
	h := Held{At: slot}
	if err := Hold(ctx, slot.Add(-countAhead)); err != nil {
		return h, err
	}
	cfg, err := l.activeConfig(ctx, configName)
	if errors.Is(err, ErrConfigNotFound) || errors.Is(err, ErrConfigInactive) {
		return h, Hold(ctx, slot)
	}
	if err != nil {
		return h, err
	}
	// A count that came back after its window ended (a slow round trip)
	// is left unused, and the execution counted again where it now is.
	for range maxRecounts {
		// At its own slot, it is spread already: it goes then, unless its
		// window is full. Late, it takes its place among the window's.
		at, spread := time.Now(), true
		if !at.After(slot) || sameWindow(at, slot, cfg.Window) {
			at, spread = later(at, slot), false
		}
		r, err := l.executions.do(ctx, executeKey{cfg.Name, cfg.Version}, executeRequest{cfg: cfg, at: at, spread: spread})
		if err == nil {
			err = r.err
		}
		if err != nil {
			return h, fmt.Errorf("pacing: let an execution go under %s: %w", configName, err)
		}
		if r.at.Unix() == 0 {
			return h, fmt.Errorf("pacing: no window with room for an execution under %s within %d windows: %w", configName, cfg.Headroom, ErrExhausted)
		}
		if err := Hold(ctx, r.at); err != nil {
			return h, err
		}
		if went := time.Now(); sameWindow(went, r.at, cfg.Window) {
			h.At, h.Moved = went, !sameWindow(went, slot, cfg.Window)
			return h, nil
		}
	}
	return h, fmt.Errorf("pacing: an execution under %s missed its window %d times: %w", configName, maxRecounts, ErrExhausted)
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
	cfg    Config
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
