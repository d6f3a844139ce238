package pacing

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxReslots bounds how many new slots HoldSlot takes for one execution.
const MaxReslots = 10

// Held is how HoldSlot let an execution go.
type Held struct {
	// At is the slot the execution went at: its own, or the last new one.
	At time.Time
	// Reslotted is how many new slots it took (0: it was on time).
	Reslotted int
}

// HoldSlot holds an execution until its slot, on this process's clock, and
// keeps every window of the config within its limit when the execution
// comes late. A slot counts in its window only: an execution that would
// run after its slot's window ended (its worker was behind, its workflow
// started late) would land in a window whose count does not include it, so
// that a backlog catching up would burst over the limit. Such an execution
// takes a new slot instead, the earliest the config has room for from now
// (event eventID/late-N, so a retry finds the slot it took), and waits for
// it; the lag grows, the windows stay within their limits.
//
// A config that is missing or inactive lets the execution go at its slot:
// the operator has turned pacing off. ErrExhausted (no room within the
// config's headroom) and a database error are returned; the caller
// retries.
func (l *Limiter) HoldSlot(ctx context.Context, configName, eventID string, slot time.Time) (Held, error) {
	h := Held{At: slot}
	for {
		if err := sleepUntil(ctx, h.At); err != nil {
			return h, err
		}
		cfg, err := l.activeConfig(ctx, configName)
		if errors.Is(err, ErrConfigNotFound) || errors.Is(err, ErrConfigInactive) {
			return h, nil
		}
		if err != nil {
			return h, err
		}
		now := time.Now() // the clock sleepUntil waited on
		if sameWindow(now, h.At, cfg.Window) {
			return h, nil
		}
		if h.Reslotted == MaxReslots {
			return h, fmt.Errorf("pacing: %s is still late after %d new slots under %s: %w", eventID, MaxReslots, configName, ErrExhausted)
		}
		h.Reslotted++
		s, err := l.Assign(ctx, configName, fmt.Sprintf("%s/late-%d", eventID, h.Reslotted), now)
		if err != nil {
			return h, err
		}
		h.At = s.ScheduledTime
	}
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

// sleepUntil waits until t (a past or zero t returns at once).
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if t.IsZero() || d <= 0 {
		return ctx.Err()
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
