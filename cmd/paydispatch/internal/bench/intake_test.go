package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestIntakeMeasures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		m              intakeMeasures
		rate, baseRate float64
		want           []string
		not            []string
	}{
		{
			name: "measured", rate: 10000, baseRate: 50000,
			m: intakeMeasures{payments: 20000, took: 2 * time.Second, baseline: 400 * time.Millisecond,
				busy: 3 * time.Second, used: 1200 * time.Millisecond, cpuOK: true, stolen: 0.03, stolenOK: true},
			want: []string{
				"POST → the last of 20,000 payments SCHEDULED and queued (its queue item, or its slot past the queue's mark): 2.0 s, 10,000 payments/s (target: 500,000 in 30 s)\n",
				"baseline, COPY of 20,000 payment rows into a table shaped like payments: 0.4 s, 50,000 rows/s\n",
				"ratio intake / COPY: 0.200\n",
				"CPU time stolen by the hypervisor during the intake: 3%\n",
				"the machine's CPU time during the intake: 3.0 s, 0.15 ms per payment (this process 0.06 ms: ",
			},
		},
		{
			name: "the machine's CPU unknown", rate: 10000, baseRate: 50000,
			m:    intakeMeasures{payments: 20000, took: 2 * time.Second, baseline: 400 * time.Millisecond, busy: 3 * time.Second},
			want: []string{"ratio intake / COPY: 0.200\n"},
			not:  []string{"CPU time"},
		},
		{
			// Nothing timed: no rate, no ratio, no division by zero.
			name: "zero durations", m: intakeMeasures{payments: 100, cpuOK: true},
			want: []string{"0.0 s, 0 payments/s", "0.0 s, 0 rows/s", "ratio intake / COPY: 0.000\n"},
			not:  []string{"CPU time"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			rate, baseRate := tc.m.write(&out)
			if rate != tc.rate || baseRate != tc.baseRate {
				t.Errorf("rates %v and %v, want %v and %v", rate, baseRate, tc.rate, tc.baseRate)
			}
			got := out.String()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("no %q in\n%s", want, got)
				}
			}
			for _, not := range append(tc.not, "NaN", "Inf") {
				if strings.Contains(got, not) {
					t.Errorf("%q in\n%s", not, got)
				}
			}
		})
	}
}

func TestPerSecondAndQuotient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"rateIn", rateIn(20000, 4*time.Second), 5000},
		{"rateIn of one", rateIn(1, 500*time.Millisecond), 2},
		{"rateIn in no time", rateIn(5, 0), 0},
		{"quotient", quotient(13944, 11080), 13944.0 / 11080},
		{"quotient of none", quotient(0, 3), 0},
		{"quotient over zero", quotient(3, 0), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
