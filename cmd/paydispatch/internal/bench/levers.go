package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// limitStep is a rate-limit config's limit from At (after the drain's
// instant) on: the first step is in force from before the instant, a
// change's from when it committed.
type limitStep struct {
	At  time.Duration
	Max int
}

// limits are a config's limit over a drain: its window and its steps, by
// At.
type limits struct {
	window time.Duration
	steps  []limitStep
}

func constantLimit(max int, window time.Duration) limits {
	return limits{window: window, steps: []limitStep{{At: math.MinInt64, Max: max}}}
}

// at is the limit in force at d.
func (l limits) at(d time.Duration) int {
	n := l.steps[0].Max
	for _, s := range l.steps[1:] {
		if s.At > d {
			break
		}
		n = s.Max
	}
	return n
}

// during is the largest limit in force at any moment of [from, to): a
// window the limit changed in may hold the larger one's executions.
func (l limits) during(from, to time.Duration) int {
	n := l.at(from)
	for _, s := range l.steps[1:] {
		if s.At > from && s.At < to {
			n = max(n, s.Max)
		}
	}
	return n
}

// changes reports whether the limit changed within (from, to).
func (l limits) changes(from, to time.Duration) bool {
	for _, s := range l.steps[1:] {
		if s.At > from && s.At < to {
			return true
		}
	}
	return false
}

// rate is the rate in force at d, per second.
func (l limits) rate(d time.Duration) float64 { return float64(l.at(d)) / l.window.Seconds() }

// most is the largest limit the config had.
func (l limits) most() int {
	n := 0
	for _, s := range l.steps {
		n = max(n, s.Max)
	}
	return n
}

// windowOver is a window that let more go than its limit.
type windowOver struct {
	Start    int // seconds after the instant
	N, Limit int
}

// windowCount is what a drain counted per window: windows of the config
// from the one second first falls in to the one last falls in, the most
// in one, and those over the limit in force (during).
type windowCount struct {
	Windows, Most int
	Over          []windowOver
}

// countWindows counts perSecond (seconds after the instant, which is a
// window boundary) per window against the limit in force during each.
func countWindows(perSecond map[int]int, first, last int, l limits) windowCount {
	win := int(l.window / time.Second)
	var c windowCount
	for ws := floorDiv(first, win) * win; ws <= last; ws += win {
		n := 0
		for s := ws; s < ws+win; s++ {
			n += perSecond[s]
		}
		c.Windows++
		c.Most = max(c.Most, n)
		if limit := l.during(sec(ws), sec(ws+win)); n > limit {
			c.Over = append(c.Over, windowOver{Start: ws, N: n, Limit: limit})
		}
	}
	return c
}

// Marks of a second in the drain's listing.
const (
	markInBand  = ' ' // within ±5 % of the rate in force
	markOff     = '*' // off it, though the schedule had the rate due
	markShort   = '-' // fewer due than the rate, executions within ±5 % of what was due
	markShortX  = '!' // fewer due than the rate, executions off what was due too
	markChanged = '~' // the limit changed within the second: not a full second of one rate
)

// secondsFigures judge a drain's full seconds (all but the first and the
// last second seen, and those a limit changed in) against the rate in
// force each second. A second whose schedule had fewer payments due than
// the rate less 5 % (a paused tenant's slots given back, nothing left to
// fill a window) counts against the target as any other, and is told
// apart: its executions are judged against what was due as well.
type secondsFigures struct {
	Full, InBand int
	Worst        float64 // the largest deviation from the rate in force
	// Short counts the full seconds with fewer due than the rate;
	// ShortFollowed those of them whose executions were within ±5 % of
	// what was due; FilledInBand the other full seconds within ±5 % of
	// the rate.
	Short, ShortFollowed, FilledInBand int
	Changed                            []int
	Marks                              map[int]rune
}

// Met is issue 26's target: at least 95 % of the full seconds in the band.
func (f secondsFigures) Met() bool { return f.Full > 0 && f.InBand*100 >= f.Full*95 }

// judgeSeconds judges executions per second against the rate in force,
// with due the payments whose (final) slots fell in each second.
func judgeSeconds(executed, due map[int]int, first, last int, l limits) secondsFigures {
	f := secondsFigures{Marks: map[int]rune{}}
	for s := first + 1; s < last; s++ {
		if l.changes(sec(s), sec(s+1)) {
			f.Changed = append(f.Changed, s)
			f.Marks[s] = markChanged
			continue
		}
		rate := l.rate(sec(s))
		n := float64(executed[s])
		f.Full++
		dev := math.Abs(n-rate) / rate
		f.Worst = max(f.Worst, dev)
		inBand := dev <= 0.05
		if inBand {
			f.InBand++
		}
		switch d := float64(due[s]); {
		case d < rate*0.95:
			f.Short++
			if math.Abs(n-d) <= 0.05*d {
				f.ShortFollowed++
				f.Marks[s] = markShort
			} else {
				f.Marks[s] = markShortX
			}
		case inBand:
			f.FilledInBand++
			f.Marks[s] = markInBand
		default:
			f.Marks[s] = markOff
		}
	}
	return f
}

// late reports whether a full second's executions were off what its
// schedule had for it (the rate, or what was due when less): the engine's
// or the machine's doing, not the schedule's.
func (f secondsFigures) late(s int) bool {
	m := f.Marks[s]
	return m == markOff || m == markShortX
}

func sec(s int) time.Duration { return time.Duration(s) * time.Second }

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// checkLevers says what is wrong with the drain's lever flags, in one line
// naming the flag and the fix.
func (o DrainOptions) checkLevers() error {
	switch {
	case o.LimitChangeAt > 0 && o.LimitChangeTo == 0:
		return fmt.Errorf("--limit-change-at %v needs --limit-change-to N, the config's new max per window", o.LimitChangeAt)
	case o.LimitChangeTo > 0 && o.LimitChangeAt == 0:
		return fmt.Errorf("--limit-change-to %d needs --limit-change-at D, when after the instant to change it (e.g. 60s)", o.LimitChangeTo)
	case o.LimitChangeTo > 0 && o.LimitChangeTo == o.MaxPerWindow:
		return fmt.Errorf("--limit-change-to %d: the limit is %d already; want another max per window", o.LimitChangeTo, o.MaxPerWindow)
	}
	if o.PauseAt > 0 || o.ResumeAt > 0 || o.PauseTenant != "" {
		tenants := max(o.Debtors, 1)
		switch {
		case o.PauseAt == 0:
			return fmt.Errorf("--pause-at: want when to pause after the instant (e.g. 20s), with --resume-at and --pause-tenant")
		case o.ResumeAt == 0:
			return fmt.Errorf("--resume-at: want when to resume after the instant, later than --pause-at %v", o.PauseAt)
		case o.ResumeAt <= o.PauseAt:
			return fmt.Errorf("--resume-at %v: want a time later than --pause-at %v", o.ResumeAt, o.PauseAt)
		case o.PauseTenant == "":
			return fmt.Errorf("--pause-tenant: want the tenant to pause, t0 to t%d", tenants-1)
		case tenants < 2:
			return fmt.Errorf("--pause-tenant %s with --debtors %d: one tenant holds every payment; want --debtors 2 or more, so the others keep running", o.PauseTenant, o.Debtors)
		case !slices.Contains(drainTenants(tenants), o.PauseTenant):
			return fmt.Errorf("--pause-tenant %s: the drain's tenants are t0 to t%d (--debtors %d)", o.PauseTenant, tenants-1, tenants)
		}
	}
	end := o.plannedEnd()
	for _, at := range []struct {
		flag string
		d    time.Duration
	}{{"--limit-change-at", o.LimitChangeAt}, {"--pause-at", o.PauseAt}} {
		if at.d >= end {
			return fmt.Errorf("%s %v: the drain's schedule ends about %.0f s after the instant at these limits; want an earlier time", at.flag, at.d, end.Seconds())
		}
	}
	return nil
}

// plannedEnd is when the drain's schedule ends at its limits, the change
// included (a pause moves the end by what it held back).
func (o DrainOptions) plannedEnd() time.Duration {
	rate := float64(o.MaxPerWindow) / o.Window.Seconds()
	n := float64(o.Payments)
	if o.LimitChangeTo == 0 || o.LimitChangeAt.Seconds()*rate >= n {
		return time.Duration(n / rate * float64(time.Second))
	}
	rest := n - o.LimitChangeAt.Seconds()*rate
	return o.LimitChangeAt + time.Duration(rest/(float64(o.LimitChangeTo)/o.Window.Seconds())*float64(time.Second))
}

// levers reports whether the drain pulls any lever.
func (o DrainOptions) levers() bool { return o.LimitChangeTo > 0 || o.PauseTenant != "" }

// drainTenants are the drain's tenants: t0 … t(n-1).
func drainTenants(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

// describeRepaced says how a lever moved payments, its slots as offsets
// from the instant.
func describeRepaced(r payment.Repaced, instant time.Time) string {
	s := fmt.Sprintf("moved %s, claimed (left at their slots) %s, rolled %d, held %d, rejected %d",
		thousands(r.Moved), thousands(r.Claimed), r.Rolled, r.Held, r.Rejected)
	if r.FirstSlot != nil && r.LastSlot != nil {
		s += fmt.Sprintf("; new slots %+.1f s … %+.1f s", r.FirstSlot.Sub(instant).Seconds(), r.LastSlot.Sub(instant).Seconds())
	}
	return s
}

// String says the limits as the config had them, a change from when it
// committed.
func (l limits) String() string {
	var b strings.Builder
	for i, s := range l.steps {
		if i > 0 {
			fmt.Fprintf(&b, " until %+.1f s, then ", s.At.Seconds())
		}
		fmt.Fprintf(&b, "%d per %s", s.Max, pacing.FormatISODuration(l.window))
	}
	return b.String()
}

// overCounters are the windows (by start, seconds after the instant)
// whose counts are over the limit in force during them.
func overCounters(counts map[int]int, l limits) []windowOver {
	win := int(l.window / time.Second)
	var out []windowOver
	for ws, n := range counts {
		if limit := l.during(sec(ws), sec(ws+win)); n > limit {
			out = append(out, windowOver{Start: ws, N: n, Limit: limit})
		}
	}
	slices.SortFunc(out, func(a, b windowOver) int { return a.Start - b.Start })
	return out
}

// spanOf is the first and last second counted (0, -1: none).
func spanOf(m map[int]int) (first, last int) {
	if len(m) == 0 {
		return 0, -1
	}
	first, last = math.MaxInt, math.MinInt
	for s := range m {
		first, last = min(first, s), max(last, s)
	}
	return first, last
}

// leverPlan says the levers the drain pulls.
func (o DrainOptions) leverPlan() string {
	var parts []string
	if o.PauseTenant != "" {
		parts = append(parts, fmt.Sprintf("tenant %s paused at +%v and resumed at +%v", o.PauseTenant, o.PauseAt, o.ResumeAt))
	}
	if o.LimitChangeTo > 0 {
		parts = append(parts, fmt.Sprintf("the limit %d → %d per %s (%.1f/s) at +%v", o.MaxPerWindow, o.LimitChangeTo,
			pacing.FormatISODuration(o.Window), float64(o.LimitChangeTo)/o.Window.Seconds(), o.LimitChangeAt))
	}
	return strings.Join(parts, "; ")
}

// afterLever is the most executions in one second of the span seconds
// from the one a lever was pulled in, and the largest share of the rate
// in force its second any of them had: a burst at a resume would show.
func afterLever(perSecond map[int]int, at time.Duration, span int, l limits) (most int, ofRate float64) {
	from := int(at / time.Second)
	for s := from; s < from+span; s++ {
		most = max(most, perSecond[s])
		ofRate = max(ofRate, float64(perSecond[s])/l.rate(sec(s)))
	}
	return most, ofRate
}
