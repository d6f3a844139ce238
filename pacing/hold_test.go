package pacing_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
)

// TestHoldSlot: executions under a limit of 5 a second, 20 of them seconds
// late (a backlog catching up) and 10 on time for the next two seconds,
// all at once: no second lets more than 5 go, counting the late and the
// punctual alike; the late ones wait for room instead of bursting; none
// goes before its slot. With the config switched off, an execution goes
// at once.
func TestHoldSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 5, time.Second, pacing.DefaultHeadroom)
	past := time.Now().Add(-10 * time.Second).Truncate(time.Second) // 4 seconds of slots, all gone
	next := time.Now().Truncate(time.Second).Add(time.Second)
	var slots []pacing.Slot
	for i := range 20 {
		slots = append(slots, mustAssign(t, l, fmt.Sprintf("late-%d", i), past))
	}
	for i := range 10 {
		slots = append(slots, mustAssign(t, l, fmt.Sprintf("punctual-%d", i), next))
	}
	start := time.Now()
	held := make([]pacing.Held, len(slots))
	went := make([]time.Time, len(slots))
	var wg sync.WaitGroup
	for i, s := range slots {
		wg.Go(func() {
			var err error
			held[i], err = l.HoldSlot(ctx, "default", s.ScheduledTime)
			went[i] = time.Now()
			if err != nil {
				t.Errorf("%s: %v", s.EventID, err)
			}
		})
	}
	wg.Wait()
	perSecond := map[int64]int{}
	for i, s := range slots {
		switch {
		case went[i].Before(s.ScheduledTime):
			t.Errorf("%s went at %s, before its slot %s", s.EventID, went[i].Format(time.RFC3339Nano), s.ScheduledTime.Format(time.RFC3339Nano))
		case i < 20 && !held[i].Moved:
			t.Errorf("%s went in its past slot's window", s.EventID)
		case !held[i].At.IsZero() && went[i].Before(held[i].At):
			t.Errorf("%s went at %s, before the time it was given, %s", s.EventID, went[i].Format(time.RFC3339Nano), held[i].At.Format(time.RFC3339Nano))
		}
		perSecond[went[i].Unix()]++
	}
	for sec, n := range perSecond {
		if n > 5 {
			t.Errorf("%d executions went in the second %s, limit 5", n, time.Unix(sec, 0).UTC().Format(time.RFC3339))
		}
	}
	if took := time.Since(start); took < 4*time.Second {
		t.Errorf("30 executions at 5 a second went in %v", took)
	}
	var over int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pacing_execution WHERE executed > 5`).Scan(&over); err != nil || over != 0 {
		t.Errorf("%d windows counted over the limit (%v)", over, err)
	}
	checkWindows(t, l, 5)

	// Pacing switched off: a late execution goes at once.
	if _, err := l.Deactivate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	l.FlushCache()
	if h, err := l.HoldSlot(ctx, "default", past); err != nil || h.Moved || !h.At.Equal(past) {
		t.Errorf("with the config inactive: %+v, %v", h, err)
	}
}

// TestHoldSlotCountsAhead: 100 executions on time for the next two
// seconds, under a limit of 50 a second, all held at once (a batch
// execution's group): each is counted before its slot, together with the
// others, and goes at its slot, and no second lets more than 50 go.
func TestHoldSlotCountsAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 50, time.Second, pacing.DefaultHeadroom)
	next := time.Now().Truncate(time.Second).Add(time.Second)
	var slots []pacing.Slot
	for i := range 100 {
		slots = append(slots, mustAssign(t, l, fmt.Sprintf("on-time-%d", i), next))
	}
	went := make([]time.Time, len(slots))
	var wg sync.WaitGroup
	for i, s := range slots {
		wg.Go(func() {
			h, err := l.HoldSlot(ctx, "default", s.ScheduledTime)
			went[i] = time.Now()
			if err != nil || went[i].Before(s.ScheduledTime) || h.At.Before(s.ScheduledTime) {
				t.Errorf("%s (slot %s): went at %s, told %+v, %v", s.EventID, s.ScheduledTime.Format(time.RFC3339Nano),
					went[i].Format(time.RFC3339Nano), h, err)
			}
		})
	}
	wg.Wait()
	perSecond := map[int64]int{}
	for i := range slots {
		perSecond[went[i].Unix()]++
	}
	for sec, n := range perSecond {
		if n > 50 {
			t.Errorf("%d executions went in the second %s, limit 50", n, time.Unix(sec, 0).UTC().Format(time.RFC3339))
		}
	}
	var counted, over int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(executed), 0), count(*) FILTER (WHERE executed > 50) FROM pacing_execution`).Scan(&counted, &over); err != nil {
		t.Fatal(err)
	}
	// A count left unused (an execution that missed its window on a busy
	// machine) costs a place, so there may be more counts than executions,
	// never fewer.
	if counted < len(slots) || over != 0 {
		t.Errorf("%d counted for %d executions, %d windows over the limit", counted, len(slots), over)
	}
	checkWindows(t, l, 50)
}

// A limit lowered by another process binds the next count at once: the
// executions of slots given under the former limit, held by a limiter
// that still caches it, are counted under the new one and spill into
// later windows, never over it.
func TestHoldSlotFollowsALimitLoweredElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 30, time.Second, pacing.DefaultHeadroom)
	next := time.Now().Truncate(time.Second).Add(time.Second)
	var slots []pacing.Slot
	for i := range 20 { // l caches the config at 30 a second
		slots = append(slots, mustAssign(t, l, fmt.Sprintf("claimed-%d", i), next))
	}
	operator := pacing.New(pacing.Config{Pool: pool})
	if _, err := operator.PutConfig(ctx, pacing.Limit{Name: "default", MaxPerWindow: 8, Window: time.Second, Headroom: pacing.DefaultHeadroom}); err != nil {
		t.Fatal(err)
	}
	went := make([]time.Time, len(slots))
	var wg sync.WaitGroup
	for i, s := range slots {
		wg.Go(func() {
			_, err := l.HoldSlot(ctx, "default", s.ScheduledTime)
			went[i] = time.Now()
			if err != nil {
				t.Errorf("%s: %v", s.EventID, err)
			}
		})
	}
	wg.Wait()
	perSecond := map[int64]int{}
	for i := range slots {
		perSecond[went[i].Unix()]++
	}
	for sec, n := range perSecond {
		if n > 8 {
			t.Errorf("%d executions went in the second %s, the limit lowered to 8", n, time.Unix(sec, 0).UTC().Format(time.RFC3339))
		}
	}
	var over int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pacing_execution WHERE executed > 8`).Scan(&over); err != nil || over != 0 {
		t.Errorf("%d windows counted over the lowered limit (%v)", over, err)
	}
}
