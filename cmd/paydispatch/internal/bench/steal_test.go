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
