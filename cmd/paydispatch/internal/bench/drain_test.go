package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReportDrain checks the figures the drain prints from its counts per
// second: the listing, the drain's span and rate, the windows over the
// limit, the seconds in the band and the split by what was due.
func TestReportDrain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		payments, limit int
		window          time.Duration
		perSecond, due  map[int]int
		pulled          []pulledLever
		want            []string
		rate            float64 // the headline figure, payments/s
	}{
		{
			name: "steady", payments: 100, limit: 10, window: time.Second,
			perSecond: seconds(nil, 0, 9, 10), due: seconds(nil, 0, 9, 10),
			pulled: []pulledLever{{What: "pause", At: 2 * time.Second, Took: 100 * time.Millisecond}},
			want: []string{
				// Eight seconds a line.
				"    0: 10/10      1: 10/10      2: 10/10      3: 10/10      4: 10/10      5: 10/10      6: 10/10      7: 10/10  \n" +
					"    8: 10/10      9: 10/10  \n",
				"drain: seconds 0..9 after the instant (10 s for 100 payments, 10.0/s)",
				"windows of PT1S: 10, most executions in one 10 (limit 10), over the limit in force 0: met",
				"full seconds within ±5% of 10.0/s: 8 of 8, 100.0% (worst 0.0%; target ≥ 95 %): met",
				"fewer payments due than the rate less 5 %: 0 (executions within ±5 % of what was due in 0); the other 8 full seconds: 8 within ±5 % of the rate in force, 100.0%",
				"executions before their slot: 0",
				"the pause at +2.00 s (its calls took 0.10 s): most executions in one second of the 10 from it 10, at most 100% of the rate in force: no burst",
			},
			rate: 10,
		},
		{
			// Second 3 executed nothing, its payments ran in 4: both are
			// off the rate, and the window 4..5 is over its limit.
			name: "an empty second inside", payments: 60, limit: 20, window: 2 * time.Second,
			perSecond: map[int]int{0: 10, 1: 10, 2: 10, 4: 20, 5: 10}, due: seconds(nil, 0, 5, 10),
			want: []string{
				"    2: 10/10      3:  0/10 *    4: 20/10 *    5: 10/10  \n",
				"drain: seconds 0..5 after the instant (6 s for 60 payments, 10.0/s)",
				"windows of PT2S: 3, most executions in one 30 (limit 20), over the limit in force 1: NOT met",
				"  window at +4 s: 30 executions, limit 20\n",
				"full seconds within ±5% of 10.0/s: 2 of 4, 50.0% (worst 100.0%; target ≥ 95 %): NOT met",
				"the other 4 full seconds: 2 within ±5 % of the rate in force, 50.0%",
			},
			rate: 10,
		},
		{
			name: "a run shorter than one window", payments: 75, limit: 100, window: 4 * time.Second,
			perSecond: seconds(nil, 0, 2, 25), due: seconds(nil, 0, 2, 25),
			want: []string{
				"drain: seconds 0..2 after the instant (3 s for 75 payments, 25.0/s)",
				"windows of PT4S: 1, most executions in one 75 (limit 100), over the limit in force 0: met",
				"full seconds within ±5% of 25.0/s: 1 of 1, 100.0% (worst 0.0%; target ≥ 95 %): met",
			},
			rate: 25,
		},
		{
			// The last window, 4..7, is counted though the drain ends in
			// its second second.
			name: "a window over the limit straddling the end", payments: 85, limit: 40, window: 4 * time.Second,
			perSecond: map[int]int{0: 10, 1: 10, 2: 10, 3: 10, 4: 10, 5: 35}, due: seconds(nil, 0, 5, 10),
			want: []string{
				"windows of PT4S: 2, most executions in one 45 (limit 40), over the limit in force 1: NOT met",
				"  window at +4 s: 45 executions, limit 40\n",
			},
			rate: 85.0 / 6,
		},
		{
			// The first execution 3 s after the instant: the drain's
			// seconds are those seen, from 3; the slots of 0..2 left
			// seconds 4 and 5 with nothing due, so they count as short
			// and off what was due (the lag shows the late start).
			name: "a late start", payments: 40, limit: 10, window: time.Second,
			perSecond: seconds(nil, 3, 6, 10), due: seconds(nil, 0, 3, 10),
			want: []string{
				"    3: 10/10      4: 10/0  !    5: 10/0  !    6: 10/0   \n",
				"drain: seconds 3..6 after the instant (4 s for 40 payments, 10.0/s)",
				"windows of PT1S: 4, most executions in one 10 (limit 10), over the limit in force 0: met",
				"full seconds within ±5% of 10.0/s: 2 of 2, 100.0% (worst 0.0%; target ≥ 95 %): met",
				"fewer payments due than the rate less 5 %: 2 (executions within ±5 % of what was due in 0); the other 0 full seconds: 0 within ±5 % of the rate in force, 0.0%",
			},
			rate: 10,
		},
		{
			// No full second at all: nothing to divide by.
			name: "a single payment", payments: 1, limit: 10, window: time.Second,
			perSecond: map[int]int{0: 1}, due: map[int]int{0: 1},
			want: []string{
				"    0:  1/1   \n",
				"drain: seconds 0..0 after the instant (1 s for 1 payments, 1.0/s)",
				"windows of PT1S: 1, most executions in one 1 (limit 10), over the limit in force 0: met",
				"full seconds within ±5% of 10.0/s: 0 of 0, 0.0% (worst 0.0%; target ≥ 95 %): NOT met",
				"the other 0 full seconds: 0 within ±5 % of the rate in force, 0.0%",
			},
			rate: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			figs := &Figures{}
			o := DrainOptions{Env: Env{Out: &out, Figures: figs}, Payments: tc.payments, MaxPerWindow: tc.limit, Window: tc.window}
			first, last := spanOf(tc.perSecond)
			if err := reportDrain(o, constantLimit(tc.limit, tc.window), tc.pulled, tc.perSecond, tc.due, first, last, 0, nil); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("no %q in\n%s", want, got)
				}
			}
			if strings.Contains(got, "NaN") || strings.Contains(got, "Inf") {
				t.Errorf("a division by zero printed:\n%s", got)
			}
			if l := figs.List(); len(l) != 1 || l[0].Value != tc.rate || l[0].BaseVal != float64(tc.limit)/tc.window.Seconds() {
				t.Errorf("figures %+v, want one of %v payments/s against %v/s", l, tc.rate, float64(tc.limit)/tc.window.Seconds())
			}
		})
	}
}

func TestDrainCPU(t *testing.T) {
	t.Parallel()
	const (
		process = "this process's CPU time during the drain: 20.0 s, 2.0 ms per payment\n"
		machine = "the machine's CPU time during the drain: 50.0 s, 5.0 ms per payment (3.0 ms outside this process: PostgreSQL and the rest)\n"
	)
	for _, tc := range []struct {
		name     string
		c        drainCPU
		payments int
		want     string
	}{
		{
			name: "all known", payments: 10000,
			c: drainCPU{process: 20 * time.Second, machine: 50 * time.Second, machineOK: true, stack: 45 * time.Second, stackOK: true},
			want: process + machine +
				"the stack's CPU time during the drain (this process and its PostgreSQL): 45.0 s, 4.5 ms per payment; the rest of the machine (other users): 5.0 s\n",
		},
		{
			name: "no stack", payments: 10000,
			c:    drainCPU{process: 20 * time.Second, machine: 50 * time.Second, machineOK: true},
			want: process + machine,
		},
		{
			name: "the machine unknown", payments: 10000,
			c:    drainCPU{process: 20 * time.Second, machine: 50 * time.Second, stack: 45 * time.Second, stackOK: true},
			want: process,
		},
		{
			// /proc/stat's ticks said less than this process used.
			name: "the machine's count below this process's", payments: 10000,
			c:    drainCPU{process: 20 * time.Second, machine: 20 * time.Second, machineOK: true, stack: 20 * time.Second, stackOK: true},
			want: process,
		},
		{
			name: "the stack's count above the machine's", payments: 10000,
			c: drainCPU{process: 20 * time.Second, machine: 50 * time.Second, machineOK: true, stack: 50*time.Second + 30*time.Millisecond, stackOK: true},
			want: process + machine +
				"the stack's CPU time during the drain (this process and its PostgreSQL): 50.0 s, 5.0 ms per payment; the rest of the machine (other users): 0.0 s\n",
		},
		{
			name: "no CPU time", payments: 10000, c: drainCPU{machine: 50 * time.Second, machineOK: true, stack: 45 * time.Second, stackOK: true},
		},
		{
			name: "no payments", payments: 0,
			c: drainCPU{process: 2 * time.Second, machine: 5 * time.Second, machineOK: true, stack: 4 * time.Second, stackOK: true},
			want: "this process's CPU time during the drain: 2.0 s, 0.0 ms per payment\n" +
				"the machine's CPU time during the drain: 5.0 s, 0.0 ms per payment (0.0 ms outside this process: PostgreSQL and the rest)\n" +
				"the stack's CPU time during the drain (this process and its PostgreSQL): 4.0 s, 0.0 ms per payment; the rest of the machine (other users): 1.0 s\n",
		},
		{
			name: "one payment", payments: 1,
			c:    drainCPU{process: 1500 * time.Microsecond},
			want: "this process's CPU time during the drain: 0.0 s, 1.5 ms per payment\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			tc.c.write(&out, tc.payments)
			if got := out.String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestPerFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"msPer", msPer(3*time.Second, 1000), 3},
		{"msPer of one", msPer(1500*time.Microsecond, 1), 1.5},
		{"msPer of none", msPer(time.Second, 0), 0},
		{"msPer below a microsecond", msPer(999*time.Nanosecond, 1), 0},
		{"rateIn", rateIn(20000, sec(800)), 25},
		{"rateIn one second", rateIn(1, sec(1)), 1},
		{"rateIn no second", rateIn(5, sec(0)), 0},
		{"share", share(19, 20), 95},
		{"share of none", share(0, 0), 0},
		{"share of one", share(1, 1), 100},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		ofRate float64
		want   string
	}{{0, "no burst"}, {1, "no burst"}, {1.05, "no burst"}, {1.0501, "a burst"}, {2, "a burst"}} {
		if got := burst(tc.ofRate); got != tc.want {
			t.Errorf("burst(%v) = %q, want %q", tc.ofRate, got, tc.want)
		}
	}
}

// TestDrainKeysInChunks: the chunks countDone sends are the drain's
// keys, each once and in order, whatever the drain's size against a chunk.
func TestDrainKeysInChunks(t *testing.T) {
	t.Parallel()
	instant := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, doneChunk - 1, doneChunk, doneChunk + 1, 3*doneChunk + 17} {
		o := DrainOptions{Payments: n, Debtors: 3}
		var chunked []string
		for from := 0; from < n; from += doneChunk {
			chunked = append(chunked, o.drainKeysIn(instant, from, min(from+doneChunk, n))...)
		}
		want := o.drainKeys(instant)
		if !slices.Equal(chunked, want) {
			t.Fatalf("n=%d: chunks give %d keys, the drain has %d (or in another order)", n, len(chunked), len(want))
		}
		seen := make(map[string]bool, n)
		for _, k := range want {
			if seen[k] {
				t.Fatalf("n=%d: key %s twice", n, k)
			}
			seen[k] = true
		}
	}
}
