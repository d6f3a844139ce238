package bench

import (
	"testing"
	"time"
)

func TestLatencySpread(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name          string
		lat           []time.Duration
		p50, p99, max time.Duration
	}{
		{"none", nil, 0, 0, 0},
		{"one", upTo(1), ms, ms, ms},
		{"two", upTo(2), ms, 2 * ms, 2 * ms},
		// The p99 of a hundred is the 99th, not the max.
		{"a hundred", upTo(100), 50 * ms, 99 * ms, 100 * ms},
		{"twenty thousand", upTo(20000), 10000 * ms, 19800 * ms, 20000 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p50, p99, most := latencySpread(tc.lat)
			if p50 != tc.p50 || p99 != tc.p99 || most != tc.max {
				t.Errorf("p50 %v, p99 %v, max %v; want %v, %v, %v", p50, p99, most, tc.p50, tc.p99, tc.max)
			}
		})
	}
}
