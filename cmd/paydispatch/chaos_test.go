package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestChaosShort is the fault suite's short mode, in each exec mode: the
// built binary's roles as processes, 1,500 payments paced at 15/s, a kill
// every 4 s (at least 10), Temporal stopped for 30 s and SIGKILLed,
// PostgreSQL restarted twice, the rail failing and the operator's
// switches flipped (the exec mode among them); every invariant checked.
func TestChaosShort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a stack of processes and attacks it for about 3 minutes")
	}
	bin := binary(t)
	for _, mode := range []string{"BATCH", "PER_ITEM"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			chaosShort(t, bin, mode)
		})
	}
}

func chaosShort(t *testing.T, bin, mode string) {
	dir := dataDir(t)
	cmd := exec.Command(bin, "chaos", "--binary", bin, "--dir", dir, "--payments", "1500", "--rate", "15", "--kill-every", "4s", "--seed", "1", "--exec-mode", mode)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	text := string(out)
	// The failed checks come first: a CI log keeps the head and tail of a
	// long output, and the invariants table sits in its middle.
	failed := regexp.MustCompile(`(?m)^\s+FAIL(ED)?  \S.*$`).FindAllString(text, -1)
	if err != nil {
		t.Fatalf("chaos: %v; failed checks: %q\n%s", err, failed, text)
	}
	for _, want := range []string{"chaos: every invariant held in 1 run(s)", "faults injected (seed 1):", "payments execute in " + mode + " mode"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, invariant := range []string{"every planned fault injected during the drain and undone", "no sequence gap, no sequence number reused",
		"paydispatch verify (the ledger check)", "each payment executed once: one saga, one debit, each saga step completed once",
		"every queue transition audited (each item's audit trail replays to its status)"} {
		if !regexp.MustCompile(`(?m)^\s+ok\s+` + regexp.QuoteMeta(invariant) + `\s+1/1`).MatchString(text) {
			t.Errorf("invariants table lacks %q passed in 1/1 runs:\n%s", invariant, text)
		}
	}
	if len(failed) > 0 {
		t.Errorf("checks failed: %q\n%s", failed, text)
	}
}
