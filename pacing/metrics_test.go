package pacing_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/paydispatch/paydispatch/pacing"
)

// TestLimitCollector: each active config's limit, a second; an inactive
// config has none.
func TestLimitCollector(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, 8, 4*time.Second, 10) // "default", 2 a second
	ctx := t.Context()
	for _, c := range []pacing.Limit{
		{Name: "fifty", MaxPerWindow: 50, Window: time.Second},
		{Name: "bank", MaxPerWindow: 600, Window: time.Minute},
		{Name: "off", MaxPerWindow: 10, Window: time.Second},
	} {
		if _, err := l.PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Deactivate(ctx, "off"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(pacing.NewCollector(l))
	want := `
# HELP paydispatch_pacing_limit_per_second An active rate-limit config's limit, in executions a second (max per window over the window).
# TYPE paydispatch_pacing_limit_per_second gauge
paydispatch_pacing_limit_per_second{config="bank"} 10
paydispatch_pacing_limit_per_second{config="default"} 2
paydispatch_pacing_limit_per_second{config="fifty"} 50
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "paydispatch_pacing_limit_per_second"); err != nil {
		t.Fatal(err)
	}
}
