package process_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/paydispatch/paydispatch/process"
)

// TestCompensationFailedGauge: the gauge counts the processes in
// COMPENSATION_FAILED as the database has them, 0 when there is none,
// and drops one that an operator's retry compensates.
func TestCompensationFailedGauge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(process.NewCollector(f.pool))
	gauge := func(want string) {
		t.Helper()
		exp := `
# HELP paydispatch_process_compensation_failed Processes in COMPENSATION_FAILED: a compensation failed for good; an operator must retry it.
# TYPE paydispatch_process_compensation_failed gauge
paydispatch_process_compensation_failed ` + want + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "paydispatch_process_compensation_failed"); err != nil {
			t.Fatal(err)
		}
	}
	gauge("0")

	for _, key := range []string{"a", "b"} {
		start(t, f, key)
		f.fail(key, "Debit", process.Failf("ACCOUNT_BLOCKED", "blocked"))
		f.fail(key, "Release", process.Failf("LEDGER_CLOSED", "closed"))
		execute(t, f, key, "Reserve", false)
		execute(t, f, key, "Debit", false)
		if res := execute(t, f, key, "Release", true); res.Status != process.StatusCompensationFailed {
			t.Fatalf("%s: %+v", key, res)
		}
	}
	start(t, f, "paused") // another listed status does not count
	if _, err := f.operator().Pause(t.Context(), process.ID(transfer, "paused"), "alice"); err != nil {
		t.Fatal(err)
	}
	gauge("2")

	if _, err := f.operator().Retry(t.Context(), process.ID(transfer, "a"), "alice"); err != nil {
		t.Fatal(err)
	}
	if res := execute(t, f, "a", "Release", true); res.Status != process.StatusCompensated {
		t.Fatalf("a: %+v", res)
	}
	gauge("1")
}
