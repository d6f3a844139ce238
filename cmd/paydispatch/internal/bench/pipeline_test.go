package bench

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestPrintPipeline(t *testing.T) {
	t.Parallel()
	a := designResult{ran: true, peakOpen: 20000, peakBytes: 300 << 20, peakRows: 900000, drain: 1500 * time.Second,
		intake: 40 * time.Second, cpuMachine: 200 * time.Second, cpuProcess: 120 * time.Second, stolen: 0.02}
	b := designResult{ran: true, peakOpen: 50, peakBytes: 30 << 20, peakRows: 9000, drain: 800 * time.Second,
		intake: 10 * time.Second, cpuMachine: 100 * time.Second, cpuProcess: 60 * time.Second, stolen: -1}
	for _, tc := range []struct {
		name string
		a, b designResult
		want []string
		not  []string
	}{
		{
			name: "both", a: a, b: b,
			want: []string{
				"peak open workflows 20,000 50 400.0×",
				"instant → all delivered 1500.0 s 800.0 s 1.9×",
				// No ratio asked for the intake.
				"intake call for all N 40.0 s 10.0 s \n",
				// 200 s over 20,000 payments.
				"CPU per payment, machine (intake → done) 10.0 ms 5.0 ms 2.0×",
				"CPU stolen by the hypervisor meanwhile 2 % unknown",
				"Temporal store growth at the peak (bytes) 300.0 MiB 30.0 MiB 10.0×",
				"target: (b) drains ≥ 1.5× faster than (a): met",
				"target: ≥ 200× fewer peak open workflows (set for N = 100,000): met",
			},
		},
		{
			// A zero in (b) gives no ratio, not an infinite one.
			name: "nothing open in (b)", a: a, b: func() designResult { r := b; r.peakOpen = 0; return r }(),
			want: []string{"peak open workflows 20,000 0 -"},
		},
		{
			name: "(b) timed out", a: a, b: func() designResult { r := b; r.timedOut, r.processing = true, 19000; return r }(),
			want: []string{"not reached", "note: (b) gave up with 19000 of 20000 delivered", "target: (b) drains ≥ 1.5× faster than (a): NOT met"},
		},
		{
			name: "only (b)", a: designResult{}, b: b,
			want: []string{"not run", "targets: compared only when both designs run (--designs ab)"},
			not:  []string{"×"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			printPipeline(&out, 20000, tc.a, tc.b)
			// The columns' widths aside: one space between cells.
			got := regexp.MustCompile(` {2,}`).ReplaceAllString(out.String(), " ")
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("no %q in\n%s", want, got)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(strings.SplitN(got, "\n", 3)[2], not) {
					t.Errorf("%q in\n%s", not, got)
				}
			}
			if strings.Contains(got, "NaN") || strings.Contains(got, "Inf") {
				t.Errorf("a division by zero printed:\n%s", got)
			}
		})
	}
}
