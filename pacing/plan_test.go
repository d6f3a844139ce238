package pacing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
)

func events(prefix string, n int, at, deadline time.Time) []pacing.Event {
	out := make([]pacing.Event, n)
	for i := range out {
		out[i] = pacing.Event{ID: fmt.Sprintf("%s-%05d", prefix, i), RequestedTime: at, Deadline: deadline}
	}
	return out
}

// TestDeadline: no slot reaches the deadline, whatever the instant asked
// and the call's size; the events with no room before it are LATE, and
// nothing is written for them.
func TestDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		requested     time.Time
		deadline      time.Duration // after boundary
		n, wantPlaced int
	}{
		// 100 per 4 s: 25 a second.
		{"deadline on a window's edge", boundary, 40 * time.Second, 2000, 1000},
		{"deadline inside a window", boundary, 41 * time.Second, 2000, 1025},
		{"deadline inside the requested window", boundary.Add(time.Second), 3 * time.Second, 500, 50},
		{"requested at the deadline", boundary.Add(10 * time.Second), 10 * time.Second, 10, 0},
		{"requested after the deadline", boundary.Add(11 * time.Second), 10 * time.Second, 10, 0},
		{"room for all", boundary, time.Hour, 300, 300},
		{"one window's worth, one call", boundary, 2 * time.Second, 100, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _ := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
			deadline := boundary.Add(tc.deadline)
			slots, err := l.AssignBulk(ctx, "default", events("e", tc.n, tc.requested, deadline))
			if err != nil {
				t.Fatal(err)
			}
			placed := 0
			for _, s := range slots {
				switch s.Status {
				case pacing.StatusNew:
					placed++
					if !s.ScheduledTime.Before(deadline) || s.ScheduledTime.Before(tc.requested) {
						t.Errorf("%s at %s: outside [%s, %s)", s.EventID, s.ScheduledTime.Format(time.RFC3339Nano),
							tc.requested.Format(time.RFC3339), deadline.Format(time.RFC3339))
					}
				case pacing.StatusLate:
				default:
					t.Errorf("%s: %s", s.EventID, s.Status)
				}
			}
			if placed != tc.wantPlaced {
				t.Errorf("%d placed before the deadline, want %d", placed, tc.wantPlaced)
			}
			got := checkWindows(t, l, 100)
			total := 0
			for _, n := range got {
				total += n
			}
			if total != placed {
				t.Errorf("%d slots written, %d placed: a LATE event was written", total, placed)
			}
			// The LATE events go on the next day, as a roll does.
			next := deadline.Add(24 * time.Hour)
			again, err := l.AssignBulk(ctx, "default", events("e", tc.n, next, time.Time{}))
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range again {
				if slots[i].Status == pacing.StatusLate && (s.Status != pacing.StatusNew || s.ScheduledTime.Before(next)) {
					t.Errorf("%s, LATE before, then %s at %s", s.EventID, s.Status, s.ScheduledTime)
				}
			}
		})
	}
}

// TestDeadlineSingle: Assign's coalesced path keeps the deadline too, and
// says ErrLate.
func TestDeadlineSingle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := newLimiter(t, 10, time.Second, pacing.DefaultHeadroom)
	deadline := boundary.Add(2 * time.Second)
	var late, placed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			s, err := l.AssignEvent(ctx, "default", pacing.Event{ID: fmt.Sprintf("s-%d", i), RequestedTime: boundary, Deadline: deadline})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, pacing.ErrLate) && s.Status == pacing.StatusLate:
				late++
			case err == nil && s.ScheduledTime.Before(deadline):
				placed++
			default:
				t.Errorf("s-%d: %+v, %v", i, s, err)
			}
		})
	}
	wg.Wait()
	if placed != 20 || late != 30 {
		t.Errorf("%d placed and %d late, want 20 and 30", placed, late)
	}
}

// TestRelease: a released slot in a window not begun is taken by the next
// event; one in a window that has begun keeps its count; the released
// event can be assigned again.
func TestRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := newLimiter(t, 10, time.Second, pacing.DefaultHeadroom)
	future := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	past := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	if _, err := l.AssignBulk(ctx, "default", events("f", 30, future, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AssignBulk(ctx, "default", events("p", 10, past, time.Time{})); err != nil {
		t.Fatal(err)
	}
	released, err := l.Release(ctx, nil, "default", []string{"f-00000", "f-00001", "f-00002", "p-00000", "nobody"})
	if err != nil || len(released) != 4 {
		t.Fatalf("released %v, %v; want the four that had slots", released, err)
	}
	windows := checkWindowCounts(t, l)
	if windows[future] != 7 || windows[past] != 10 {
		t.Errorf("counters: future window %d (want 7), past window %d (want 10: it had begun)", windows[future], windows[past])
	}
	// The next event for the instant takes a freed place in the first
	// window, before the windows after it.
	s := mustAssign(t, l, "late-comer", future)
	if !s.WindowStart.Equal(future) {
		t.Errorf("late-comer in %s, want the freed window %s", s.WindowStart, future)
	}
	again := mustAssign(t, l, "f-00000", future.Add(24*time.Hour))
	if again.Status != pacing.StatusNew || !again.WindowStart.Equal(future.Add(24*time.Hour)) {
		t.Errorf("a released event assigned again: %+v", again)
	}
}

// checkWindowCounts returns each window's counter (not its slots: a
// released slot in a begun window keeps its count).
func checkWindowCounts(t *testing.T, l *pacing.Limiter) map[time.Time]int {
	t.Helper()
	ws, err := l.Windows(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	out := map[time.Time]int{}
	for _, w := range ws {
		out[w.Start.UTC()] = w.Counter
	}
	return out
}

// TestProjection: a projection made before the slots are taken names the
// last slot the assignment then gives, and how many fit before a
// deadline, also over windows that others filled.
func TestProjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		before    int // taken first, at boundary
		requested time.Time
		n         int
		deadline  time.Duration
	}{
		{"empty schedule", 0, boundary, 1000, 0},
		{"behind another file", 700, boundary, 1000, 0},
		{"mid-window", 0, boundary.Add(1500 * time.Millisecond), 333, 0},
		{"past a deadline", 300, boundary, 5000, 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _ := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
			if tc.before > 0 {
				if _, err := l.AssignBulk(ctx, "default", events("b", tc.before, boundary, time.Time{})); err != nil {
					t.Fatal(err)
				}
			}
			var deadline time.Time
			if tc.deadline > 0 {
				deadline = boundary.Add(tc.deadline)
			}
			ps, err := l.Project(ctx, "default", pacing.Demand{Requested: tc.requested, N: tc.n, Deadline: deadline})
			if err != nil {
				t.Fatal(err)
			}
			p := ps[0]
			slots, err := l.AssignBulk(ctx, "default", events("e", tc.n, tc.requested, deadline))
			if err != nil {
				t.Fatal(err)
			}
			var last time.Time
			placed := 0
			for _, s := range slots {
				if s.Status == pacing.StatusNew {
					placed++
					if s.ScheduledTime.After(last) {
						last = s.ScheduledTime
					}
				}
			}
			if placed != p.Placed {
				t.Errorf("projected %d placed, assigned %d", p.Placed, placed)
			}
			// Within one slot's part (40 ms at 100 per 4 s).
			if d := p.Last.Sub(last); d > 40*time.Millisecond || d < -40*time.Millisecond {
				t.Errorf("projected last slot %s, assigned %s (%v apart)", p.Last.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano), d)
			}
		})
	}
}

// TestHoldSlots: executions under two configs at once (a rail's 10 a
// second and a tenant's 4 a second) go at the tighter rate, and neither
// config's window counts over its limit.
func TestHoldSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 10, time.Second, pacing.DefaultHeadroom)
	if _, err := l.PutConfig(ctx, pacing.Limit{Name: "tenant", MaxPerWindow: 4, Window: time.Second, Headroom: pacing.DefaultHeadroom}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(500 * time.Millisecond)
	went := make([]time.Time, 16)
	var wg sync.WaitGroup
	for i := range went {
		wg.Go(func() {
			h, err := l.HoldSlots(ctx, slot, "default", "tenant")
			if err != nil {
				t.Error(err)
			}
			went[i] = time.Now()
			if went[i].Before(h.At) || went[i].Before(slot) {
				t.Errorf("went at %s, slot %s, given %s", went[i], slot, h.At)
			}
		})
	}
	wg.Wait()
	perSecond := map[int64]int{}
	for _, w := range went {
		perSecond[w.Unix()]++
	}
	for sec, n := range perSecond {
		if n > 4 {
			t.Errorf("%d executions in the second %d, the tenant's limit 4", n, sec)
		}
	}
	var over int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pacing_execution
		WHERE (config_name = 'default' AND executed > 10) OR (config_name = 'tenant' AND executed > 4)`).Scan(&over); err != nil || over != 0 {
		t.Errorf("%d windows counted over their limit (%v)", over, err)
	}
}

// TestReslot: 300 events slotted at 100 per 4 s are moved, in their
// order, to the config's new limit: lowered to 50 they span twice the
// windows, raised to 200 half of them; at every step no window holds
// more than the limit in force, each counter is its slots, and the order
// of the events is the order of their slots.
func TestReslot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
	start := time.Now().Add(time.Hour).Truncate(4 * time.Second).UTC()
	evs := events("r", 300, start, time.Time{})
	if _, err := l.AssignBulk(ctx, "default", evs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		max     int
		windows int
	}{{50, 6}, {200, 2}, {100, 3}} {
		if _, err := l.PutConfig(ctx, pacing.Limit{Name: "default", MaxPerWindow: tc.max, Window: 4 * time.Second, Headroom: pacing.DefaultHeadroom}); err != nil {
			t.Fatal(err)
		}
		l.FlushCache()
		// In reverse order this time: the order given is the order kept.
		slices.Reverse(evs)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slots, err := l.Reslot(ctx, tx, "default", evs)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		used := map[time.Time]bool{}
		for i, s := range slots {
			if s.Status != pacing.StatusNew || s.EventID != evs[i].ID {
				t.Fatalf("max %d: %s: %+v", tc.max, evs[i].ID, s)
			}
			if i > 0 && s.ScheduledTime.Before(slots[i-1].ScheduledTime) {
				t.Fatalf("max %d: %s at %s, before %s at %s", tc.max, s.EventID, s.ScheduledTime, slots[i-1].EventID, slots[i-1].ScheduledTime)
			}
			used[s.WindowStart.UTC()] = true
		}
		if len(used) != tc.windows {
			t.Errorf("max %d: %d windows used, want %d", tc.max, len(used), tc.windows)
		}
		ws, err := l.Windows(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if w.Counter > tc.max || w.Counter != w.Slots {
				t.Errorf("max %d: window %s counter %d, %d slots", tc.max, w.Start, w.Counter, w.Slots)
			}
		}
	}
}

// TestReslotAfterALoweredLimit: events that stay (claimed at the old
// limit) fill the next windows at 10 a second; the limit lowered to 3,
// their executions will be held to it and spill over 20 windows, so
// events moved now begin after them, not in the windows they spill into.
func TestReslotAfterALoweredLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 10, time.Second, pacing.DefaultHeadroom)
	start := time.Now().Add(3 * time.Second).Truncate(time.Second).UTC()
	if _, err := l.AssignBulk(ctx, "default", events("claimed", 60, start, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if _, err := l.PutConfig(ctx, pacing.Limit{Name: "default", MaxPerWindow: 3, Window: time.Second, Headroom: pacing.DefaultHeadroom}); err != nil {
		t.Fatal(err)
	}
	l.FlushCache()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	slots, err := l.Reslot(ctx, tx, "default", events("moved", 10, start, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.Status != pacing.StatusNew || s.ScheduledTime.Before(start.Add(20*time.Second)) {
			t.Errorf("%s: %s at %s; the 60 staying spill until %s", s.EventID, s.Status, s.ScheduledTime, start.Add(20*time.Second))
		}
	}
}
