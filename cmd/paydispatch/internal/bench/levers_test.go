package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/payment"
)

// raised is 100 per PT1S, 150 from 10.3 s after the instant.
var raised = limits{window: time.Second, steps: []limitStep{{At: -1 << 62, Max: 100}, {At: 10300 * time.Millisecond, Max: 150}}}

func TestLimits(t *testing.T) {
	t.Parallel()
	lowered := limits{window: 4 * time.Second, steps: []limitStep{{At: -1 << 62, Max: 100}, {At: 6 * time.Second, Max: 60}}}
	for _, tc := range []struct {
		name     string
		l        limits
		at       time.Duration
		to       time.Duration // for during and changes
		wantAt   int
		wantDur  int
		changes  bool
		wantRate float64
	}{
		{"before the change", raised, 9 * time.Second, 10 * time.Second, 100, 100, false, 100},
		{"the second it changed in", raised, 10 * time.Second, 11 * time.Second, 100, 150, true, 100},
		{"at the commit", raised, 10300 * time.Millisecond, 11 * time.Second, 150, 150, false, 150},
		{"after", raised, 11 * time.Second, 12 * time.Second, 150, 150, false, 150},
		{"before the instant", raised, -5 * time.Second, -4 * time.Second, 100, 100, false, 100},
		{"lowered: the window it changed in keeps the larger", lowered, 4 * time.Second, 8 * time.Second, 100, 100, true, 25},
		{"lowered: the next window", lowered, 8 * time.Second, 12 * time.Second, 60, 60, false, 15},
		{"constant", constantLimit(40, time.Second), 100 * time.Second, 101 * time.Second, 40, 40, false, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.l.at(tc.at); got != tc.wantAt {
				t.Errorf("at(%v) = %d, want %d", tc.at, got, tc.wantAt)
			}
			if got := tc.l.during(tc.at, tc.to); got != tc.wantDur {
				t.Errorf("during(%v, %v) = %d, want %d", tc.at, tc.to, got, tc.wantDur)
			}
			if got := tc.l.changes(tc.at, tc.to); got != tc.changes {
				t.Errorf("changes(%v, %v) = %v, want %v", tc.at, tc.to, got, tc.changes)
			}
			if got := tc.l.rate(tc.at); got != tc.wantRate {
				t.Errorf("rate(%v) = %v, want %v", tc.at, got, tc.wantRate)
			}
		})
	}
	if got, want := raised.String(), "100 per PT1S until +10.3 s, then 150 per PT1S"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := raised.most(); got != 150 {
		t.Errorf("most() = %d, want 150", got)
	}
}

// seconds fills from..to with n.
func seconds(m map[int]int, from, to, n int) map[int]int {
	if m == nil {
		m = map[int]int{}
	}
	for s := from; s <= to; s++ {
		m[s] = n
	}
	return m
}

func TestJudgeSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		executed, due   map[int]int
		first, last     int
		l               limits
		full, inBand    int
		short, followed int
		filledInBand    int
		changed         []int
		met             bool
		marks           map[int]rune
	}{
		{
			name: "all at the rate", executed: seconds(nil, 0, 20, 100), due: seconds(nil, 0, 20, 100), first: 0, last: 20,
			l: constantLimit(100, time.Second), full: 19, inBand: 19, filledInBand: 19, met: true,
			marks: map[int]rune{1: markInBand, 19: markInBand},
		},
		{
			// The rate in force follows the change; the second it came
			// in is no full second of one rate.
			name:     "a raised limit",
			executed: seconds(seconds(nil, 0, 9, 100), 10, 30, 150), due: seconds(seconds(nil, 0, 9, 100), 10, 30, 150),
			first: 0, last: 30, l: raised, full: 28, inBand: 28, filledInBand: 28, changed: []int{10}, met: true,
			marks: map[int]rune{9: markInBand, 10: markChanged, 11: markInBand},
		},
		{
			// The claimed keep their old slots: 100 due for a while under
			// a rate of 150. Short seconds count against the target.
			name:     "claimed slots after a raise",
			executed: seconds(seconds(nil, 0, 20, 100), 21, 40, 150), due: seconds(seconds(nil, 0, 20, 100), 21, 40, 150),
			first: 0, last: 40, l: raised, full: 38, inBand: 28, short: 10, followed: 10, filledInBand: 28, changed: []int{10}, met: false,
			marks: map[int]rune{11: markShort, 20: markShort, 21: markInBand},
		},
		{
			// A tenant of ten paused for 4 s: 90 due, 90 executed.
			name:     "a pause's gap",
			executed: seconds(seconds(nil, 0, 100, 100), 30, 33, 90), due: seconds(seconds(nil, 0, 100, 100), 30, 33, 90),
			first: 0, last: 100, l: constantLimit(100, time.Second), full: 99, inBand: 95, short: 4, followed: 4, filledInBand: 95, met: true,
			marks: map[int]rune{29: markInBand, 30: markShort, 33: markShort},
		},
		{
			name:     "late seconds",
			executed: seconds(seconds(seconds(nil, 0, 20, 100), 5, 5, 80), 6, 6, 50), due: seconds(seconds(nil, 0, 20, 100), 6, 6, 70),
			first: 0, last: 20, l: constantLimit(100, time.Second), full: 19, inBand: 17, short: 1, followed: 0, filledInBand: 17, met: false,
			marks: map[int]rune{5: markOff, 6: markShortX, 7: markInBand},
		},
		{
			name:     "the edges are not full seconds",
			executed: map[int]int{0: 3, 1: 100, 2: 40}, due: map[int]int{0: 3, 1: 100, 2: 40},
			first: 0, last: 2, l: constantLimit(100, time.Second), full: 1, inBand: 1, filledInBand: 1, met: true,
			marks: map[int]rune{1: markInBand},
		},
		{
			name: "nothing", executed: map[int]int{}, due: map[int]int{}, first: 0, last: -1, l: constantLimit(100, time.Second), met: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := judgeSeconds(tc.executed, tc.due, tc.first, tc.last, tc.l)
			if f.Full != tc.full || f.InBand != tc.inBand || f.Short != tc.short || f.ShortFollowed != tc.followed || f.FilledInBand != tc.filledInBand {
				t.Errorf("full %d, in band %d, short %d (followed %d), filled in band %d; want %d, %d, %d (%d), %d",
					f.Full, f.InBand, f.Short, f.ShortFollowed, f.FilledInBand, tc.full, tc.inBand, tc.short, tc.followed, tc.filledInBand)
			}
			if !slices.Equal(f.Changed, tc.changed) {
				t.Errorf("changed %v, want %v", f.Changed, tc.changed)
			}
			if f.Met() != tc.met {
				t.Errorf("met %v, want %v", f.Met(), tc.met)
			}
			for s, want := range tc.marks {
				if got := f.Marks[s]; got != want {
					t.Errorf("second %d marked %q, want %q", s, got, want)
				}
			}
		})
	}
}

func TestCountWindows(t *testing.T) {
	t.Parallel()
	twoSecs := limits{window: 2 * time.Second, steps: []limitStep{{At: -1 << 62, Max: 100}, {At: 5 * time.Second, Max: 150}}}
	for _, tc := range []struct {
		name       string
		perSecond  map[int]int
		first      int
		last       int
		l          limits
		windows    int
		most       int
		over       []windowOver
		overCounts []windowOver // the same counts as windows' counters
	}{
		{
			name: "under the limit", perSecond: seconds(nil, 0, 9, 50), first: 0, last: 9, l: twoSecs, windows: 5, most: 100,
		},
		{
			// Window 4..5 had the change in it: the larger limit holds.
			name: "the window of the change", perSecond: seconds(seconds(nil, 0, 3, 50), 4, 9, 75), first: 0, last: 9, l: twoSecs,
			windows: 5, most: 150,
		},
		{
			name: "over before the change", perSecond: seconds(seconds(nil, 0, 9, 50), 2, 2, 51), first: 0, last: 9, l: twoSecs,
			windows: 5, most: 101, over: []windowOver{{Start: 2, N: 101, Limit: 100}},
		},
		{
			name: "a negative first second", perSecond: map[int]int{-1: 60, 0: 60}, first: -1, last: 0, l: twoSecs,
			windows: 2, most: 60,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := countWindows(tc.perSecond, tc.first, tc.last, tc.l)
			if c.Windows != tc.windows || c.Most != tc.most || !slices.Equal(c.Over, tc.over) {
				t.Errorf("got %+v, want %d windows, most %d, over %v", c, tc.windows, tc.most, tc.over)
			}
			// The same counts by window start, as the config's counters.
			counters := map[int]int{}
			for s, n := range tc.perSecond {
				counters[floorDiv(s, 2)*2] += n
			}
			if got := overCounters(counters, tc.l); !slices.Equal(got, tc.over) {
				t.Errorf("overCounters = %v, want %v", got, tc.over)
			}
		})
	}
}

func TestCheckLevers(t *testing.T) {
	t.Parallel()
	base := DrainOptions{Payments: 30000, MaxPerWindow: 100, Window: time.Second, Debtors: 10}
	with := func(f func(*DrainOptions)) DrainOptions { o := base; f(&o); return o }
	for _, tc := range []struct {
		name string
		o    DrainOptions
		want string // "" : fine
	}{
		{"no levers", base, ""},
		{"all of them", with(func(o *DrainOptions) {
			o.LimitChangeAt, o.LimitChangeTo, o.PauseAt, o.ResumeAt, o.PauseTenant = 60*time.Second, 150, 20*time.Second, 35*time.Second, "t1"
		}), ""},
		{"a change without its limit", with(func(o *DrainOptions) { o.LimitChangeAt = time.Minute }), "--limit-change-at 1m0s needs --limit-change-to N"},
		{"a limit without its time", with(func(o *DrainOptions) { o.LimitChangeTo = 150 }), "--limit-change-to 150 needs --limit-change-at D"},
		{"the same limit", with(func(o *DrainOptions) { o.LimitChangeAt, o.LimitChangeTo = time.Minute, 100 }), "--limit-change-to 100: the limit is 100 already"},
		{"a change after the end", with(func(o *DrainOptions) { o.LimitChangeAt, o.LimitChangeTo = 400*time.Second, 150 }),
			"--limit-change-at 6m40s: the drain's schedule ends about 300 s after the instant"},
		{"a pause without a resume", with(func(o *DrainOptions) { o.PauseAt, o.PauseTenant = 20*time.Second, "t1" }), "--resume-at: want when to resume"},
		{"a resume without a pause", with(func(o *DrainOptions) { o.ResumeAt, o.PauseTenant = 20*time.Second, "t1" }), "--pause-at: want when to pause"},
		{"a tenant alone", with(func(o *DrainOptions) { o.PauseTenant = "t1" }), "--pause-at: want when to pause"},
		{"a resume before the pause", with(func(o *DrainOptions) { o.PauseAt, o.ResumeAt, o.PauseTenant = 20*time.Second, 20*time.Second, "t1" }),
			"--resume-at 20s: want a time later than --pause-at 20s"},
		{"no tenant", with(func(o *DrainOptions) { o.PauseAt, o.ResumeAt = 20*time.Second, 35*time.Second }), "--pause-tenant: want the tenant to pause, t0 to t9"},
		{"one debtor", with(func(o *DrainOptions) {
			o.Debtors, o.PauseAt, o.ResumeAt, o.PauseTenant = 1, 20*time.Second, 35*time.Second, "t0"
		}), "want --debtors 2 or more"},
		{"a tenant not in the drain", with(func(o *DrainOptions) {
			o.Debtors, o.PauseAt, o.ResumeAt, o.PauseTenant = 3, 20*time.Second, 35*time.Second, "t3"
		}), "--pause-tenant t3: the drain's tenants are t0 to t2 (--debtors 3)"},
		{"a pause after the end, the raise included", with(func(o *DrainOptions) {
			o.LimitChangeAt, o.LimitChangeTo, o.PauseAt, o.ResumeAt, o.PauseTenant = 60*time.Second, 200, 250*time.Second, 260*time.Second, "t1"
		}), "--pause-at 4m10s: the drain's schedule ends about 180 s after the instant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.o.checkLevers()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("error on more than one line: %q", err)
			}
		})
	}
}

func TestPlannedEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    DrainOptions
		want time.Duration
	}{
		{DrainOptions{Payments: 30000, MaxPerWindow: 100, Window: time.Second}, 300 * time.Second},
		{DrainOptions{Payments: 20000, MaxPerWindow: 100, Window: 4 * time.Second}, 800 * time.Second},
		// 6,000 in the first minute, 24,000 at 150/s.
		{DrainOptions{Payments: 30000, MaxPerWindow: 100, Window: time.Second, LimitChangeAt: time.Minute, LimitChangeTo: 150}, 220 * time.Second},
		// Done before the change.
		{DrainOptions{Payments: 3000, MaxPerWindow: 100, Window: time.Second, LimitChangeAt: time.Minute, LimitChangeTo: 150}, 30 * time.Second},
		{DrainOptions{Payments: 30000, MaxPerWindow: 100, Window: time.Second, LimitChangeAt: time.Minute, LimitChangeTo: 50}, 540 * time.Second},
	} {
		if got := tc.o.plannedEnd(); got != tc.want {
			t.Errorf("plannedEnd(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

func TestOffsetFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, {"20s", 20 * time.Second, true}, {"1m30s", 90 * time.Second, true},
		{"0s", 0, false}, {"-5s", 0, false}, {"soon", 0, false}, {"20", 0, false},
	} {
		var d time.Duration
		err := offsetFlag("pause-at", "", &d).Parse(tc.in)
		if (err == nil) != tc.ok || (tc.ok && d != tc.want) {
			t.Errorf("%q: %v, %v; want %v, ok %v", tc.in, d, err, tc.want, tc.ok)
		}
	}
}

func TestAfterLever(t *testing.T) {
	t.Parallel()
	perSecond := seconds(seconds(nil, 0, 40, 100), 11, 40, 150)
	for _, tc := range []struct {
		name   string
		per    map[int]int
		at     time.Duration
		l      limits
		most   int
		ofRate float64
	}{
		{"steady", perSecond, 500 * time.Millisecond, raised, 100, 1},
		{"across the raise", perSecond, 5 * time.Second, raised, 150, 1},
		{"a burst at a resume", seconds(seconds(nil, 0, 40, 100), 20, 20, 130), 19 * time.Second, constantLimit(100, time.Second), 130, 1.3},
		{"the same executions under a raised limit", seconds(seconds(nil, 0, 40, 100), 20, 20, 130), 19 * time.Second, raised, 130, 130.0 / 150},
	} {
		most, ofRate := afterLever(tc.per, tc.at, 10, tc.l)
		if most != tc.most || ofRate != tc.ofRate {
			t.Errorf("%s: most %d, of the rate %.2f; want %d, %.2f", tc.name, most, ofRate, tc.most, tc.ofRate)
		}
	}
	if burst(1.05) != "no burst" || burst(1.3) != "a burst" {
		t.Errorf("burst(1.05) = %q, burst(1.3) = %q", burst(1.05), burst(1.3))
	}
}

func TestDescribeRepaced(t *testing.T) {
	t.Parallel()
	instant := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	first, last := instant.Add(61*time.Second), instant.Add(208300*time.Millisecond)
	got := describeRepaced(payment.Repaced{Moved: 22000, Claimed: 1200, FirstSlot: &first, LastSlot: &last}, instant)
	want := "moved 22,000, claimed (left at their slots) 1,200, rolled 0, held 0, rejected 0; new slots +61.0 s … +208.3 s"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := describeRepaced(payment.Repaced{Claimed: 3}, instant); strings.Contains(got, "slots +") {
		t.Errorf("no slots given, but %q", got)
	}
}
