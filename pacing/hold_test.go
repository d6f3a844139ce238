package pacing_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
)

// TestHoldSlotLate: executions that come seconds after their slots (a
// backlog catching up), 20 at once under a limit of 5 a second, never put
// more than 5 into any second: each takes a new slot from now and waits
// for it. Executions on time go at their slots; with the config switched
// off they go at once.
func TestHoldSlotLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := newLimiter(t, 5, time.Second, pacing.DefaultHeadroom)
	past := time.Now().Add(-10 * time.Second).Truncate(time.Second) // 4 seconds of slots, all gone
	late := make([]pacing.Slot, 20)
	for i := range late {
		late[i] = mustAssign(t, l, fmt.Sprintf("late-%d", i), past)
	}
	start := time.Now()
	held := make([]pacing.Held, len(late))
	var wg sync.WaitGroup
	for i, s := range late {
		wg.Go(func() {
			var err error
			if held[i], err = l.HoldSlot(ctx, "default", s.EventID, s.ScheduledTime); err != nil {
				t.Errorf("%s: %v", s.EventID, err)
			}
		})
	}
	wg.Wait()
	perSecond := map[int64]int{}
	for i, h := range held {
		switch {
		case h.Reslotted == 0:
			t.Errorf("late-%d went at its past slot %s", i, late[i].ScheduledTime.Format(time.RFC3339Nano))
		case h.At.Before(start.Truncate(time.Second)):
			t.Errorf("late-%d went at %s, in a window that had passed", i, h.At.Format(time.RFC3339Nano))
		}
		perSecond[h.At.Unix()]++
	}
	for sec, n := range perSecond {
		if n > 5 {
			t.Errorf("%d executions in the second %s, limit 5", n, time.Unix(sec, 0).UTC().Format(time.RFC3339))
		}
	}
	checkWindows(t, l, 5)
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("20 late executions at 5 a second went in %v", took)
	}
	// A retry of a held execution finds the slot it took.
	if again, err := l.HoldSlot(ctx, "default", late[0].EventID, late[0].ScheduledTime); err != nil || again.Reslotted == 0 {
		t.Errorf("a retry: %+v, %v", again, err)
	}

	// On time: held to the slot, no new one.
	soon := mustAssign(t, l, "soon", time.Now().Add(1500*time.Millisecond))
	if h, err := l.HoldSlot(ctx, "default", "soon", soon.ScheduledTime); err != nil || h.Reslotted != 0 || !h.At.Equal(soon.ScheduledTime) || time.Now().Before(soon.ScheduledTime) {
		t.Errorf("on time: %+v, %v at %s", h, err, time.Now().Format(time.RFC3339Nano))
	}
	// Pacing switched off: a late execution goes at once.
	if _, err := l.Deactivate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	l.FlushCache()
	if h, err := l.HoldSlot(ctx, "default", "off", past); err != nil || h.Reslotted != 0 {
		t.Errorf("with the config inactive: %+v, %v", h, err)
	}
}
