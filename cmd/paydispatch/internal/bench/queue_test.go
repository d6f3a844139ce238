package bench

import (
	"testing"
	"time"
)

// upTo is 1 ms, 2 ms, … n ms, in reverse (the order is the function's to
// sort).
func upTo(n int) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = time.Duration(n-i) * time.Millisecond
	}
	return d
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		samples  []time.Duration
		p50, p99 time.Duration
	}{
		{"none", nil, 0, 0},
		{"one", upTo(1), ms, ms},
		// Nearest rank: the p50 of two is the lower, the p99 the higher.
		{"two", upTo(2), ms, 2 * ms},
		{"three", upTo(3), 2 * ms, 3 * ms},
		{"a hundred: p99 is not the max", upTo(100), 50 * ms, 99 * ms},
		{"a hundred and one", upTo(101), 51 * ms, 100 * ms},
		{"a thousand", upTo(1000), 500 * ms, 990 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := append([]time.Duration(nil), tc.samples...)
			if got := percentile(tc.samples, 50); got != tc.p50 {
				t.Errorf("p50 = %v, want %v", got, tc.p50)
			}
			if got := percentile(tc.samples, 99); got != tc.p99 {
				t.Errorf("p99 = %v, want %v", got, tc.p99)
			}
			for i := range before {
				if tc.samples[i] != before[i] {
					t.Fatalf("the samples were reordered")
				}
			}
		})
	}
	if got := percentile(upTo(10), 100); got != 10*ms {
		t.Errorf("p100 = %v, want the max", got)
	}
	if got := percentile(upTo(10), 0); got != ms {
		t.Errorf("p0 = %v, want the min", got)
	}
}

func TestRatioAndUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"deep over shallow", ratio(60*time.Millisecond, 40*time.Millisecond), 1.5},
		{"equal", ratio(time.Second, time.Second), 1},
		{"over zero", ratio(time.Second, 0), 0},
		{"zero over", ratio(0, time.Second), 0},
		{"ms", ms(1500 * time.Microsecond), 1.5},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if verdict(true) != "met" || verdict(false) != "NOT met" {
		t.Errorf("verdict: %q, %q", verdict(true), verdict(false))
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {20000, "20,000"}, {100000, "100,000"},
		{1234567, "1,234,567"}, {-5, "-5"}, {-123, "-123"}, {-1234, "-1,234"}, {-123456, "-123,456"},
	} {
		if got := thousands(tc.n); got != tc.want {
			t.Errorf("thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
