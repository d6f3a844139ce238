package pacing_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	pacingmig "github.com/paydispatch/paydispatch/pacing/migrations"
	"github.com/paydispatch/paydispatch/postgres"
)

func TestMain(m *testing.M) {
	pgtest.Main(m, postgres.Schema{
		Migrations: []fs.FS{pacingmig.FS},
		Scripts:    []postgres.Script{{Name: "pacing/migrations/functions.sql", SQL: pacingmig.Functions}},
	})
}

// boundary is a window boundary for 4-second windows (and 1-second ones).
var boundary = time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)

func newLimiter(t *testing.T, max int, window time.Duration, headroom int, opts ...pacing.Config) (*pacing.Limiter, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t)
	var o pacing.Config
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Pool = pool
	l := pacing.New(o)
	if _, err := l.PutConfig(context.Background(), pacing.Limit{Name: "default", MaxPerWindow: max, Window: window, Headroom: headroom}); err != nil {
		t.Fatal(err)
	}
	return l, pool
}

func mustAssign(t *testing.T, l *pacing.Limiter, id string, at time.Time) pacing.Slot {
	t.Helper()
	s, err := l.Assign(context.Background(), "default", id, at)
	if err != nil {
		t.Fatalf("assign %s: %v", id, err)
	}
	return s
}

// checkWindows asserts no window is over max and each counter equals the
// slots it holds; it returns the slots per window start.
func checkWindows(t *testing.T, l *pacing.Limiter, max int) map[time.Time]int {
	t.Helper()
	ws, err := l.Windows(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	out := map[time.Time]int{}
	for _, w := range ws {
		if w.Counter > max || w.Counter != w.Slots {
			t.Errorf("window %s: counter %d, slots %d, max %d", w.Start.Format(time.RFC3339), w.Counter, w.Slots, max)
		}
		if (w.Counter >= max) != (w.Status == "CLOSED") {
			t.Errorf("window %s: counter %d of %d but %s", w.Start.Format(time.RFC3339), w.Counter, max, w.Status)
		}
		out[w.Start.UTC()] = w.Slots
	}
	return out
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
	first := mustAssign(t, l, "evt-1", boundary)
	if first.Status != pacing.StatusNew {
		t.Fatalf("first assignment: %s, want NEW", first.Status)
	}
	for i := range 10 {
		again := mustAssign(t, l, "evt-1", boundary.Add(time.Duration(i)*time.Hour)) // a different time changes nothing
		if again.Status != pacing.StatusExisting || !again.ScheduledTime.Equal(first.ScheduledTime) ||
			!again.WindowStart.Equal(first.WindowStart) || again.Index != first.Index {
			t.Fatalf("repeat %d: %+v, want the first slot %+v as EXISTING", i, again, first)
		}
	}
	if got := checkWindows(t, l, 100); got[boundary] != 1 {
		t.Fatalf("slots in the window: %d, want 1", got[boundary])
	}
}

func TestWindowWalkAndBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		max       int
		window    time.Duration
		requested time.Time
		events    int
		want      map[time.Duration]int // window offset from boundary → slots
	}{
		{"fills then overflows", 3, 4 * time.Second, boundary, 7,
			map[time.Duration]int{0: 3, 4 * time.Second: 3, 8 * time.Second: 1}},
		{"proportional first window", 100, 4 * time.Second, boundary.Add(3 * time.Second), 30,
			map[time.Duration]int{0: 25, 4 * time.Second: 5}},
		{"proportional, mid-millisecond", 10, time.Second, boundary.Add(250 * time.Millisecond), 10,
			map[time.Duration]int{0: 7, time.Second: 3}},
		{"requested near the end: no room in its window", 10, 4 * time.Second, boundary.Add(3900 * time.Millisecond), 2,
			map[time.Duration]int{4 * time.Second: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _ := newLimiter(t, tc.max, tc.window, pacing.DefaultHeadroom)
			for i := range tc.events {
				s := mustAssign(t, l, fmt.Sprintf("e-%d", i), tc.requested)
				if s.ScheduledTime.Before(tc.requested) {
					t.Errorf("slot %s before the requested %s", s.ScheduledTime, tc.requested)
				}
				if s.ScheduledTime.Before(s.WindowStart) || !s.ScheduledTime.Before(s.WindowStart.Add(tc.window)) {
					t.Errorf("slot %s outside its window %s + %s", s.ScheduledTime, s.WindowStart, tc.window)
				}
			}
			got := checkWindows(t, l, tc.max)
			for off, n := range tc.want {
				if got[boundary.Add(off)] != n {
					t.Errorf("window +%s: %d slots, want %d (all: %v)", off, got[boundary.Add(off)], n, got)
				}
			}
		})
	}
}

// TestStratified: the k-th of 100 slots in a 4-second window falls in the
// k-th of 101 equal sub-intervals, the last one (the margin for the
// engine's lag) stays empty, and each second gets 25 ± 1.
func TestStratified(t *testing.T) {
	t.Parallel()
	const max, window = 100, 4 * time.Second
	l, _ := newLimiter(t, max, window, pacing.DefaultHeadroom)
	events := make([]pacing.Event, 2*max) // two windows: the range path and the proportional one alike
	for i := range events {
		events[i] = pacing.Event{ID: fmt.Sprintf("s-%03d", i), RequestedTime: boundary}
	}
	slots, err := l.AssignBulk(context.Background(), "default", events)
	if err != nil {
		t.Fatal(err)
	}
	sub := window / max
	perSecond := map[int]int{}
	for _, s := range slots {
		off := s.ScheduledTime.Sub(s.WindowStart)
		lo := time.Duration(s.Index) * sub
		// The first half of its sub-interval: the second half is the guard
		// a late start uses up without crossing into the next one.
		if off < lo || off >= lo+sub/2 {
			t.Errorf("slot %d at +%s, want in [%s, %s)", s.Index, off, lo, lo+sub/2)
		}
		perSecond[int(s.ScheduledTime.Sub(boundary)/time.Second)]++
	}
	// 100 per 4 s: sub-intervals of 40 ms line up with the seconds, so each
	// second gets exactly 25 (uniform jitter alone: 25 ± 4).
	for sec := range 8 {
		if n := perSecond[sec]; n != 25 {
			t.Errorf("second %d: %d slots, want 25 (all: %v)", sec, n, perSecond)
		}
	}
}

func TestSkipQueryJumpsFullWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Headroom 0: a search that walked the full windows one by one would
	// give up at the first; the skip lands on the first open one directly.
	l, pool := newLimiter(t, 2, time.Second, 0)
	const full = 5000
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_window (config_name, window_start, slot_count, status)
		SELECT 'default', $1::timestamptz + i * interval '1 second', 2, 'CLOSED' FROM generate_series(1, $2::int) i`, boundary, full); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_window VALUES ('default', $1::timestamptz + $2::int * interval '1 second', 0, 'OPEN')`, boundary, full+1); err != nil {
		t.Fatal(err)
	}
	mustAssign(t, l, "fill-0", boundary)
	mustAssign(t, l, "fill-1", boundary) // the requested window is now full too
	s := mustAssign(t, l, "late", boundary)
	if want := boundary.Add((full + 1) * time.Second); !s.WindowStart.Equal(want) {
		t.Fatalf("landed in %s, want %s, the first open window", s.WindowStart, want)
	}
	// The skip query is an index lookup.
	var plan strings.Builder
	rows, err := pool.Query(ctx, `EXPLAIN SELECT min(window_start) FROM pacing_window
		WHERE config_name = 'default' AND status = 'OPEN' AND window_start > $1`, boundary)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		_ = rows.Scan(&line)
		plan.WriteString(line + "\n")
	}
	rows.Close()
	if !strings.Contains(plan.String(), "pacing_window_status_idx") || strings.Contains(plan.String(), "Seq Scan") {
		t.Fatalf("skip query plan:\n%s", plan.String())
	}
}

// TestSkipStopsAtAMissingWindow: a run of full windows that ends in a
// missing window (its last was filled by a call with nothing left) is left
// there, not at the next OPEN window further on (another instant's).
func TestSkipStopsAtAMissingWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 2, time.Second, 0)
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_window (config_name, window_start, slot_count, status)
		SELECT 'default', $1::timestamptz + i * interval '1 second', 2, 'CLOSED' FROM generate_series(0, 999) i
		UNION ALL SELECT 'default', $1::timestamptz + interval '1 hour', 1, 'OPEN'`, boundary); err != nil {
		t.Fatal(err)
	}
	s := mustAssign(t, l, "late", boundary)
	if want := boundary.Add(1000 * time.Second); !s.WindowStart.Equal(want) {
		t.Fatalf("landed in %s, want %s, right after the full run", s.WindowStart, want)
	}
}

func TestStatusClosesWhenFull(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, 3, 4*time.Second, pacing.DefaultHeadroom)
	ctx := context.Background()
	status := func() map[time.Time]string {
		ws, err := l.Windows(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		out := map[time.Time]string{}
		for _, w := range ws {
			out[w.Start.UTC()] = w.Status
		}
		return out
	}
	for i := range 3 {
		mustAssign(t, l, fmt.Sprintf("c-%d", i), boundary)
		want := "OPEN"
		if i == 2 {
			want = "CLOSED"
		}
		if got := status()[boundary]; got != want {
			t.Fatalf("after %d slots: %s, want %s", i+1, got, want)
		}
	}
	// A call that closes a window with nothing left to place creates no
	// successor (an empty one could be left a hole); the next call finds
	// the room after the full window all the same.
	if got, ok := status()[boundary.Add(4*time.Second)]; ok {
		t.Fatalf("successor created empty: %q", got)
	}
	if s := mustAssign(t, l, "c-3", boundary); !s.WindowStart.Equal(boundary.Add(4 * time.Second)) {
		t.Fatalf("after the full window: %+v", s)
	}
}

func TestFarFutureDoesNotDisturbNearTerm(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, 2, 4*time.Second, pacing.DefaultHeadroom)
	farAway := boundary.AddDate(1, 0, 0)
	for i := range 5 {
		mustAssign(t, l, fmt.Sprintf("far-%d", i), farAway)
	}
	for i := range 5 {
		s := mustAssign(t, l, fmt.Sprintf("near-%d", i), boundary)
		if s.ScheduledTime.After(boundary.Add(time.Minute)) {
			t.Fatalf("near-term event %d sent to %s", i, s.ScheduledTime)
		}
	}
	checkWindows(t, l, 2)
}

func TestExhaustedWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 1, time.Second, 2)
	mustAssign(t, l, "first", boundary) // fills the window
	// The next three windows are full under a lowered max: OPEN, with
	// more slots than the max.
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_window VALUES
		('default', $1::timestamptz + interval '1 second', 2, 'OPEN'),
		('default', $1::timestamptz + interval '2 second', 2, 'OPEN'),
		('default', $1::timestamptz + interval '3 second', 2, 'OPEN')`, boundary); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pacing_slot) || '/' ||
			(SELECT string_agg(window_start || '=' || slot_count || status, ',' ORDER BY window_start) FROM pacing_window)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	s, err := l.Assign(ctx, "default", "second", boundary)
	if !errors.Is(err, pacing.ErrExhausted) || s.Status != pacing.StatusExhausted {
		t.Fatalf("assign with every window in reach full: %+v, %v; want EXHAUSTED", s, err)
	}
	if after := snapshot(); after != before {
		t.Fatalf("exhausted path wrote:\nbefore %s\nafter  %s", before, after)
	}
	// An event that has its slot gets it back even with no room anywhere
	// (a replayed chunk while the limiter is saturated), alone or in bulk.
	first := mustAssign(t, l, "first", boundary)
	if first.Status != pacing.StatusExisting {
		t.Fatalf("replay with no room: %+v; want EXISTING", first)
	}
	bulk, err := l.AssignBulk(ctx, "default", []pacing.Event{{ID: "first", RequestedTime: boundary}, {ID: "second", RequestedTime: boundary}})
	if err != nil {
		t.Fatal(err)
	}
	if bulk[0].Status != pacing.StatusExisting || !bulk[0].ScheduledTime.Equal(first.ScheduledTime) || bulk[1].Status != pacing.StatusExhausted {
		t.Fatalf("bulk replay with no room: %+v; want first EXISTING at %s, second EXHAUSTED", bulk, first.ScheduledTime)
	}
	if after := snapshot(); after != before {
		t.Fatalf("replay with no room wrote:\nbefore %s\nafter  %s", before, after)
	}
}

// TestHeldWindowsAreNoMisses: windows another transaction holds are being
// filled; a call walks past any number of them, alone or in ranges. Each
// held window used to count against the headroom, and a 10,000-payment
// chunk walking past another's 100 windows gave up (EXHAUSTED).
func TestHeldWindowsAreNoMisses(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 25} { // the one-window path, and ranges
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const max, held = 10, 12
			l, pool := newLimiter(t, max, time.Second, 2)
			if _, err := pool.Exec(ctx, `INSERT INTO pacing_window
				SELECT 'default', $1::timestamptz + i * interval '1 second', 0, 'OPEN' FROM generate_series(0, $2 - 1) i`,
				boundary, held); err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM pacing_window WHERE config_name = 'default' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			events := make([]pacing.Event, n)
			for i := range events {
				events[i] = pacing.Event{ID: fmt.Sprintf("e-%02d", i), RequestedTime: boundary}
			}
			slots, err := l.AssignBulk(ctx, "default", events)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range slots {
				if s.Status != pacing.StatusNew || s.WindowStart.Before(boundary.Add(held*time.Second)) {
					t.Fatalf("%+v: want NEW past the %d held windows", s, held)
				}
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			checkWindows(t, l, max)
		})
	}
}

// TestReplayCreatesNoWindow: a call replayed after its slots committed
// gets them back and changes no window. It used to walk past its own full
// windows, create new ones for its events, find them conflicting, and
// leave those windows empty: 99 holes in a 20,000-payment schedule.
func TestReplayCreatesNoWindow(t *testing.T) {
	t.Parallel()
	for _, n := range []int{30, 1000} { // the one-window path, and ranges
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const max = 50
			l, pool := newLimiter(t, max, 4*time.Second, pacing.DefaultHeadroom)
			events := make([]pacing.Event, n)
			for i := range events {
				events[i] = pacing.Event{ID: fmt.Sprintf("e-%04d", i), RequestedTime: boundary}
			}
			first, err := l.AssignBulk(ctx, "default", events)
			if err != nil {
				t.Fatal(err)
			}
			windows := func() string {
				var s string
				if err := pool.QueryRow(ctx, `SELECT string_agg(window_start || '=' || slot_count || status, ',' ORDER BY window_start)
					FROM pacing_window`).Scan(&s); err != nil {
					t.Fatal(err)
				}
				return s
			}
			before := windows()
			again, err := l.AssignBulk(ctx, "default", events)
			if err != nil {
				t.Fatal(err)
			}
			for i := range again {
				if again[i].Status != pacing.StatusExisting || !again[i].ScheduledTime.Equal(first[i].ScheduledTime) {
					t.Fatalf("replay %d: %+v, want %+v as EXISTING", i, again[i], first[i])
				}
			}
			if after := windows(); after != before {
				t.Fatalf("the replay changed the windows:\nbefore %s\nafter  %s", before, after)
			}
			// The same events and one more: the new one takes the first room.
			more := append(slices.Clone(events), pacing.Event{ID: "new", RequestedTime: boundary})
			got, err := l.AssignBulk(ctx, "default", more)
			if err != nil {
				t.Fatal(err)
			}
			last := got[len(got)-1]
			if last.Status != pacing.StatusNew || last.Index != n%max {
				t.Fatalf("the new event: %+v, want NEW at index %d of the last window", last, n%max)
			}
			checkWindows(t, l, max)
		})
	}
}

// TestBulkFindsSlotsAmongItsEvents: AssignBulk inserts a file's slots
// without probing each key (pacing_assign's p_fresh). Events that have
// slots in the middle of a call (not its first or last, which mark a
// replay) fail that call on the key, and it is asked again: they come
// back EXISTING with their slots, the others NEW, and every counter
// agrees with its slots.
func TestBulkFindsSlotsAmongItsEvents(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ n, chunk int }{
		{30, 1000},   // the requested window's path, which probes
		{1000, 1000}, // ranges of windows
		{1000, 300},  // several calls, one of them with the slots
	} {
		t.Run(fmt.Sprintf("%d-by-%d", tt.n, tt.chunk), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const max = 50
			l, _ := newLimiter(t, max, 4*time.Second, pacing.DefaultHeadroom, pacing.Config{BulkChunk: tt.chunk})
			events := make([]pacing.Event, tt.n)
			for i := range events {
				events[i] = pacing.Event{ID: fmt.Sprintf("e-%04d", i), RequestedTime: boundary}
			}
			had := map[string]pacing.Slot{}
			for _, i := range []int{tt.n / 3, tt.n/3 + 1, tt.n / 2} {
				s := mustAssign(t, l, events[i].ID, boundary.Add(time.Minute))
				had[s.EventID] = s
			}
			got, err := l.AssignBulk(ctx, "default", events)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range got {
				prev, ok := had[events[i].ID]
				switch {
				case ok && (s.Status != pacing.StatusExisting || !s.ScheduledTime.Equal(prev.ScheduledTime)):
					t.Fatalf("%s: %+v, want its slot %+v as EXISTING", events[i].ID, s, prev)
				case !ok && s.Status != pacing.StatusNew:
					t.Fatalf("%s: %+v, want NEW", events[i].ID, s)
				}
			}
			total := 0
			for _, n := range checkWindows(t, l, max) {
				total += n
			}
			if total != tt.n {
				t.Fatalf("%d slots for %d events", total, tt.n)
			}
		})
	}
}

func TestConcurrentAssignments(t *testing.T) {
	t.Parallel()
	const goroutines, each, max = 100, 20, 50
	l, _ := newLimiter(t, max, 4*time.Second, pacing.DefaultHeadroom)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := l.Assign(context.Background(), "default", fmt.Sprintf("g%03d-%03d", g, i), boundary); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, n := range checkWindows(t, l, max) {
		total += n
	}
	if total != goroutines*each {
		t.Fatalf("%d slots for %d events", total, goroutines*each)
	}
}

func TestAssignBulk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom, pacing.Config{BulkChunk: 300}) // several round trips per instant
	var events []pacing.Event
	for i := range 1000 {
		events = append(events, pacing.Event{ID: fmt.Sprintf("b-%04d", i), RequestedTime: boundary})
	}
	for i := range 50 { // another instant in the same call
		events = append(events, pacing.Event{ID: fmt.Sprintf("o-%04d", i), RequestedTime: boundary.Add(time.Hour)})
	}
	events = append(events, events[0]) // the same id twice
	slots, err := l.AssignBulk(ctx, "default", events)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range slots[:len(slots)-1] {
		if s.EventID != events[i].ID || s.Status != pacing.StatusNew || s.ScheduledTime.Before(events[i].RequestedTime) {
			t.Fatalf("slot %d: %+v for %+v", i, s, events[i])
		}
	}
	if last := slots[len(slots)-1]; !last.ScheduledTime.Equal(slots[0].ScheduledTime) {
		t.Fatalf("a repeated id got another slot: %+v vs %+v", last, slots[0])
	}
	// Chunks run two at a time and skip the windows the other holds, so a
	// window can end part full; none is over its limit, and the instant's
	// 1,000 events stay packed near it.
	perWindow := checkWindows(t, l, 100)
	used, total := 0, 0
	for w, n := range perWindow {
		if w.Before(boundary.Add(time.Hour)) && n > 0 {
			used++
			total += n
		}
	}
	if total != 1000 || used > 14 {
		t.Fatalf("%d slots over %d windows for 1,000 events at 100 per window", total, used)
	}
	// The same file again: every slot back as it was.
	again, err := l.AssignBulk(ctx, "default", events)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i].Status != pacing.StatusExisting || !again[i].ScheduledTime.Equal(slots[i].ScheduledTime) {
			t.Fatalf("replay %d: %+v, want %+v as EXISTING", i, again[i], slots[i])
		}
	}
}

func TestConfigs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
	if _, err := l.Assign(ctx, "nope", "e", boundary); !errors.Is(err, pacing.ErrConfigNotFound) {
		t.Fatalf("unknown config: %v", err)
	}
	c, err := l.PutConfig(ctx, pacing.Limit{Name: "default", MaxPerWindow: 10, Window: 2 * time.Second, Headroom: 5})
	if err != nil || c.Version != 2 || c.MaxPerWindow != 10 || c.Window != 2*time.Second || !c.Active {
		t.Fatalf("update: %+v %v", c, err)
	}
	if _, err := l.Deactivate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Assign(ctx, "default", "e", boundary); !errors.Is(err, pacing.ErrConfigInactive) {
		t.Fatalf("inactive config: %v", err)
	}
	for _, bad := range []pacing.Limit{
		{Name: "", MaxPerWindow: 1, Window: time.Second},
		{Name: "x", MaxPerWindow: 0, Window: time.Second},
		{Name: "x", MaxPerWindow: 1, Window: 0},
		{Name: "x", MaxPerWindow: 1, Window: time.Second, Headroom: -1},
	} {
		if _, err := l.PutConfig(ctx, bad); !errors.Is(err, pacing.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	cs, err := l.ListConfigs(ctx)
	if err != nil || len(cs) != 1 || cs[0].Active {
		t.Fatalf("list: %+v %v", cs, err)
	}
}

// TestConfigCache: another process's change is seen once the cache
// expires or is flushed, not before.
func TestConfigCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
	mustAssign(t, l, "warm", boundary) // caches the config
	other := pacing.New(pacing.Config{Pool: pool})
	if _, err := other.Deactivate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Assign(ctx, "default", "cached", boundary); err != nil {
		t.Fatalf("within the cache's life the old config holds: %v", err)
	}
	l.FlushCache()
	if _, err := l.Assign(ctx, "default", "flushed", boundary); !errors.Is(err, pacing.ErrConfigInactive) {
		t.Fatalf("after a flush: %v, want inactive", err)
	}
}

func TestISODuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		out  string
	}{
		{"PT4S", 4 * time.Second, "PT4S"},
		{"PT0.5S", 500 * time.Millisecond, "PT0.5S"},
		{"PT1M30S", 90 * time.Second, "PT1M30S"},
		{"P1D", 24 * time.Hour, "P1D"},
		{"pt2h", 2 * time.Hour, "PT2H"},
	} {
		got, err := pacing.ParseISODuration(tc.in)
		if err != nil || got != tc.want || pacing.FormatISODuration(got) != tc.out {
			t.Errorf("%s: %v %v %s", tc.in, got, err, pacing.FormatISODuration(got))
		}
	}
	for _, bad := range []string{"", "P", "PT", "4s", "P1M", "PT-1S", "P1Y"} {
		if _, err := pacing.ParseISODuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestAssignWaitsOutAConcurrentInsert: an event another transaction is
// inserting at the same moment comes back EXISTING with that
// transaction's slot once it commits — not as no answer (the insert that
// waited for the other's row sees it only from its next statement).
func TestAssignWaitsOutAConcurrentInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 10, time.Second, pacing.DefaultHeadroom)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	theirs := boundary.Add(7 * time.Millisecond)
	if _, err := tx.Exec(ctx, `INSERT INTO pacing_slot (event_id, config_name, window_start, slot_index, scheduled_time, requested_time)
		VALUES ('race', 'default', $1, 0, $2, $1)`, boundary, theirs); err != nil {
		t.Fatal(err)
	}
	type result struct {
		s   pacing.Slot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := l.Assign(ctx, "default", "race", boundary)
		done <- result{s, err}
	}()
	time.Sleep(300 * time.Millisecond) // let the assignment reach the other's row and wait on it
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.s.Status != pacing.StatusExisting || !r.s.ScheduledTime.Equal(theirs) {
		t.Fatalf("assign while another inserts the event: %+v, %v; want EXISTING at %s", r.s, r.err, theirs)
	}
}

// TestConcurrentSameEvent: the same event id from many clients at once
// (coalesced into shared calls or not) gets one slot.
func TestConcurrentSameEvent(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, 100, 4*time.Second, pacing.DefaultHeadroom)
	var wg sync.WaitGroup
	slots := make([]pacing.Slot, 20)
	errs := make([]error, 20)
	for i := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots[i], errs[i] = l.Assign(context.Background(), "default", "same", boundary)
		}()
	}
	wg.Wait()
	for i := range slots {
		if errs[i] != nil || !slots[i].ScheduledTime.Equal(slots[0].ScheduledTime) {
			t.Fatalf("client %d: %+v %v; client 0: %+v", i, slots[i], errs[i], slots[0])
		}
	}
	// One slot in all. (Not necessarily in the first window: a call that
	// finds it held by the other moves on, and either may insert first.)
	total := 0
	for _, n := range checkWindows(t, l, 100) {
		total += n
	}
	if total != 1 {
		t.Fatalf("%d slots for one event", total)
	}
}

// TestConcurrentBulk: several bulk calls for one instant at once (each
// running its chunks two at a time) neither deadlock nor overfill.
func TestConcurrentBulk(t *testing.T) {
	t.Parallel()
	tests := []struct{ max, chunk, callers, events int }{
		{50, 120, 4, 600},
		{50, 100, 8, 500}, // every call's chunks fill whole windows: the successor case
		{25, 25, 8, 100},
		{40, 1000, 6, 130},
		{100, 5000, 4, 10000}, // four calls of 5,000, each a chunk's share of the headroom: walkers pass held ranges
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max%d-chunk%d-%dx%d", tt.max, tt.chunk, tt.callers, tt.events), func(t *testing.T) {
			t.Parallel()
			l, _ := newLimiter(t, tt.max, 4*time.Second, pacing.DefaultHeadroom, pacing.Config{BulkChunk: tt.chunk})
			var wg sync.WaitGroup
			errs := make(chan error, tt.callers)
			for c := range tt.callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					events := make([]pacing.Event, tt.events)
					for i := range events {
						events[i] = pacing.Event{ID: fmt.Sprintf("c%d-%04d", c, i), RequestedTime: boundary}
					}
					slots, err := l.AssignBulk(context.Background(), "default", events)
					if err == nil {
						for _, s := range slots {
							if s.Status != pacing.StatusNew {
								err = fmt.Errorf("%s: %s", s.EventID, s.Status)
								break
							}
						}
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			perWindow := checkWindows(t, l, tt.max)
			total, last := 0, boundary
			for w, n := range perWindow {
				total += n
				if n > 0 && w.After(last) {
					last = w
				}
			}
			if total != tt.callers*tt.events {
				t.Fatalf("%d slots for %d events", total, tt.callers*tt.events)
			}
			for w := boundary; !w.After(last); w = w.Add(4 * time.Second) {
				if perWindow[w] == 0 {
					t.Errorf("window %s empty between the first and the last slot", w.Format(time.TimeOnly))
				}
			}
		})
	}
}

// TestRangeLocksOnlyWhatItFills: a bulk call filling a range of windows
// locks only the windows it fills. Before 00016 it locked one more (in
// case the first was part full) and left it empty; a concurrent call,
// finding it locked, went on past it, and it stayed a hole in the schedule
// (two empty windows, 8 s with no execution, in a 20,000-payment drain).
func TestRangeLocksOnlyWhatItFills(t *testing.T) {
	t.Parallel()
	const max = 50
	l, pool := newLimiter(t, max, 4*time.Second, pacing.DefaultHeadroom)
	ctx := context.Background()
	// Windows 0..9 exist, empty: nothing below depends on who creates them.
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_window (config_name, window_start, slot_count, status)
		SELECT 'default', $1::timestamptz + i * interval '4 seconds', 0, 'OPEN' FROM generate_series(0, 9) i`, boundary); err != nil {
		t.Fatal(err)
	}
	assign := func(q execer, prefix string, n int) { assignRaw(t, q, max, prefix, n) }
	// A: 150 events, windows 0 (the requested one), then 1 and 2 as a
	// range; its transaction stays open, its windows locked.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	assign(tx, "a", 150)
	// B meanwhile: 50 events; windows 0..2 are held, so window 3.
	assign(pool, "b", 50)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	perWindow := checkWindows(t, l, max)
	for w := range 4 {
		start := boundary.Add(time.Duration(w) * 4 * time.Second)
		if n := perWindow[start]; n != max {
			t.Errorf("window %d: %d slots, want %d (all: %v)", w, n, max, perWindow)
		}
	}
}

// TestNoHoleBehindACallThatEndsFull: a call whose last event fills a
// window used to create that window's successor, empty, and hold it to
// its commit; a concurrent call, unable to create it, went on past it,
// and the successor stayed empty between two full windows (a PT4S window
// with no execution in a 3,000-payment drain). A call now creates a
// successor only when it goes on to fill it.
func TestNoHoleBehindACallThatEndsFull(t *testing.T) {
	t.Parallel()
	const max = 50
	for _, bEvents := range []int{max, 3 * max} { // B on the one-window path, and on the range path
		t.Run(fmt.Sprint(bEvents), func(t *testing.T) {
			t.Parallel()
			l, pool := newLimiter(t, max, 4*time.Second, pacing.DefaultHeadroom)
			ctx := context.Background()
			assign := func(q execer, prefix string, n int) { assignRaw(t, q, max, prefix, n) }
			// A fills window 0 exactly and ends; its transaction stays open.
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			assign(tx, "a", max)
			assign(pool, "b", bEvents)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			perWindow := checkWindows(t, l, max)
			var starts []time.Time
			for s, n := range perWindow {
				if n > 0 {
					starts = append(starts, s)
				}
			}
			slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
			for w := boundary; !w.After(starts[len(starts)-1]); w = w.Add(4 * time.Second) {
				if perWindow[w] == 0 {
					t.Errorf("window %s empty between the first and the last slot: %v", w.Format(time.TimeOnly), perWindow)
				}
			}
		})
	}
}

type execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// assignRaw calls pacing_assign on q (a pool, or a transaction kept open)
// for n events prefix-000.. at boundary, in 4-second windows of max.
func assignRaw(t *testing.T, q execer, max int, prefix string, n int) {
	t.Helper()
	ids, us := make([]string, n), make([]float64, n)
	for i := range ids {
		ids[i], us[i] = fmt.Sprintf("%s-%03d", prefix, i), 0.5
	}
	if _, err := q.Exec(context.Background(), `SELECT * FROM pacing_assign('default', 4000, $1, 100, $2, $3, $4, NULL)`, max, boundary, ids, us); err != nil {
		t.Fatal(err)
	}
}

// TestConfigInCallersTransaction: PutConfigTx and DeactivateTx commit with
// the caller's transaction, or not at all, and leave the cache to the
// caller: the config cached before serves until Forget, after the commit.
func TestConfigInCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	lim := pacing.New(pacing.Config{Pool: pool})
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "c", MaxPerWindow: 10, Window: time.Second, Headroom: 10}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	if _, err := lim.Assign(ctx, "c", "e-1", at); err != nil { // caches c
		t.Fatal(err)
	}
	inTx := func(commit bool, f func(tx pgx.Tx) error) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := f(tx); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	inTx(false, func(tx pgx.Tx) error {
		_, err := lim.PutConfigTx(ctx, tx, pacing.Limit{Name: "c", MaxPerWindow: 20, Window: time.Second, Headroom: 10})
		return err
	})
	if c, err := lim.GetConfig(ctx, "c"); err != nil || c.MaxPerWindow != 10 || c.Version != 1 {
		t.Fatalf("a change rolled back: %+v, %v", c, err)
	}
	inTx(true, func(tx pgx.Tx) error {
		_, err := lim.DeactivateTx(ctx, tx, "c")
		return err
	})
	if _, err := lim.Assign(ctx, "c", "e-2", at); err != nil {
		t.Fatalf("before Forget the cached config serves: %v", err)
	}
	lim.Forget("c")
	if _, err := lim.Assign(ctx, "c", "e-3", at); !errors.Is(err, pacing.ErrConfigInactive) {
		t.Fatalf("after Forget: %v, want the config inactive", err)
	}
}

// TestDeadlineWaitsForAHolder: an event whose only window before its
// deadline is held by another transaction waits for that transaction
// (up to busyPatience) and is placed when it ends without taking the
// room, rather than given up as LATE.
func TestDeadlineWaitsForAHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, pool := newLimiter(t, 1, time.Second, 2)
	mustAssign(t, l, "first", boundary) // fills the first window
	if _, err := pool.Exec(ctx, `INSERT INTO pacing_window VALUES ('default', $1::timestamptz + interval '1 second', 0, 'OPEN')`, boundary); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM pacing_window WHERE config_name = 'default' AND window_start > $1 FOR UPDATE`, boundary); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(800 * time.Millisecond)
		_ = tx.Rollback(ctx)
	}()
	s, err := l.AssignEvent(ctx, "default", pacing.Event{ID: "second", RequestedTime: boundary, Deadline: boundary.Add(2 * time.Second)})
	<-released
	if err != nil || !s.WindowStart.Equal(boundary.Add(time.Second)) {
		t.Fatalf("assign while its window was held for 800 ms: %+v, %v; want placed in the window of %s", s, err, boundary.Add(time.Second))
	}
}
