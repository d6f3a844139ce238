package bench

import (
	"testing"
	"time"
)

func TestMoveTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		took     time.Duration
		n        int
		baseline time.Duration
		payments int
		want     string
	}{
		{
			name: "every payment moved", took: 2 * time.Second, n: 20000, baseline: 500 * time.Millisecond, payments: 20000,
			want: "wall time 2.00 s for 20,000 payments: 10,000 a second (100.0 µs each; the baseline's bare UPDATEs 25.0 µs a row, this 4.0 × it)",
		},
		{
			// A tenant's tenth: its time a payment against the baseline's
			// over all of them.
			name: "some moved", took: 300 * time.Millisecond, n: 2000, baseline: 500 * time.Millisecond, payments: 20000,
			want: "wall time 0.30 s for 2,000 payments: 6,666 a second (150.0 µs each; the baseline's bare UPDATEs 25.0 µs a row, this 6.0 × it)",
		},
		{
			name: "none moved", took: 10 * time.Millisecond, n: 0, baseline: 500 * time.Millisecond, payments: 20000,
			want: "wall time 0.01 s for 0 payments: 0 a second (10000.0 µs each; the baseline's bare UPDATEs 25.0 µs a row, this 400.0 × it)",
		},
		{
			name: "no time at all", took: 0, n: 5, baseline: 0, payments: 0,
			want: "wall time 0.00 s for 5 payments: 0 a second (0.0 µs each; the baseline's bare UPDATEs 0.0 µs a row, this 0.0 × it)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := moveTimes(tc.took, tc.n, tc.baseline, tc.payments); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
