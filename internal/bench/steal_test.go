package bench

import "testing"

func TestParseCPU(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want cpuTimes
		ok   bool
	}{
		{"cpu  100 5 50 800 10 0 5 30 7 0", cpuTimes{total: 1000, steal: 30}, true},
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
