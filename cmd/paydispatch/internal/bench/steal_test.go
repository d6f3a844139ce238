package bench

import (
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want cpuTimes
		ok   bool
	}{
		{"cpu  100 5 50 800 10 0 5 30 7 0", cpuTimes{total: 1000, idle: 810, steal: 30}, true},
		{"cpu  1 2 3 4 5 6 7", cpuTimes{}, false},          // no steal column
		{"cpu0 100 5 50 800 10 0 5 30", cpuTimes{}, false}, // not the total line
		{"cpu  1 2 x 4 5 6 7 8", cpuTimes{}, false},
	} {
		got, ok := parseCPU(tc.line)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseCPU(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestStealByBand(t *testing.T) {
	t.Parallel()
	// Seconds 0..20 at 25/s except 12 (a stall's burst); steal high in 9..11.
	perSecond, due := map[int]int{}, map[int]int{}
	stolen := map[int]float64{}
	for s := 0; s <= 20; s++ {
		perSecond[s], due[s] = 25, 25
		stolen[s] = 0.02
	}
	perSecond[12] = 40
	for s := 9; s <= 11; s++ {
		stolen[s] = 0.6
	}
	f := judgeSeconds(perSecond, due, 0, 20, constantLimit(25, time.Second))
	in, out := stealByBand(stolen, 0, 20, f.late)
	if len(out) != 6 || len(in) != 13 { // out: 7..12; in: 1..6, 13..19
		t.Fatalf("in %d seconds, out %d; want 13 and 6", len(in), len(out))
	}
	if m := median(out); m != 0.6 {
		t.Errorf("median stolen out of the band %.2f, want 0.60", m)
	}
	if m := median(in); m != 0.02 {
		t.Errorf("median stolen in the band %.2f, want 0.02", m)
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want procTimes
		ok   bool
	}{
		{"4242 (postgres) S 4000 4242 4242 0 -1 4194560 900 0 0 0 150 50 30 20 20 0 1 0 100 0 0",
			procTimes{ppid: 4000, comm: "postgres", own: 200, ofChildren: 50}, true},
		// A comm with spaces and a parenthesis.
		{"7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 5 6 7 8 20 0 1 0 100 0 0",
			procTimes{ppid: 1, comm: "a (b) c", own: 11, ofChildren: 15}, true},
		{"7 (short) R 1 7", procTimes{}, false},
		{"no parentheses at all", procTimes{}, false},
	} {
		got, ok := parseProcStat(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseProcStat(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPostgresTicks(t *testing.T) {
	t.Parallel()
	procs := map[int]procTimes{
		10: {ppid: 1, comm: "paydispatch"},
		20: {ppid: 10, comm: "postgres", own: 100, ofChildren: 40}, // the postmaster, 40 of reaped backends
		21: {ppid: 20, comm: "postgres", own: 7},                   // a backend
		22: {ppid: 20, comm: "postgres", own: 3},
		30: {ppid: 1, comm: "postgres", own: 1000},   // another engineer's server
		31: {ppid: 30, comm: "postgres", own: 500},   // and its backend
		40: {ppid: 10, comm: "sh", own: 9},           // not PostgreSQL
		50: {ppid: 1, comm: "go", own: 5000},         // another engineer's tests
		51: {ppid: 50, comm: "bench.test", own: 800}, // ...
	}
	if got := postgresTicks(procs, 10); got != 150 {
		t.Errorf("postgresTicks = %d, want 150 (100 + 40 + 7 + 3)", got)
	}
	if got := ticks(150); got != 1500*time.Millisecond {
		t.Errorf("ticks(150) = %v", got)
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0}, {[]float64{0.3}, 0.3}, {[]float64{0.4, 0.1}, 0.4}, {[]float64{0.5, 0.1, 0.3}, 0.3}, {[]float64{0, 0, 0.9, 0.1}, 0.1},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
