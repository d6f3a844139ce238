package main

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestBenchHistory: `bench history` loads a past run's rows into
// DATABASE_URL's database, and `verify` finds them consistent.
func TestBenchHistory(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t)}
	code, stdout, stderr := runCLI([]string{"bench", "history", "--payments", "3000", "--tenants", "4", "--days", "3"}, env)
	if code != 0 {
		t.Fatalf("bench history: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"into DATABASE_URL", "history: 3,000 payments", "payments/s", "account_transaction", "database size"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in\n%s", want, stdout)
		}
	}
	if code, stdout, stderr := runCLI([]string{"verify"}, env); code != 0 {
		t.Fatalf("verify after the history: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The history goes first: on accounts with transactions, none is loaded.
	if code, _, stderr := runCLI([]string{"bench", "history", "--payments", "10", "--tenants", "4"}, env); code == 0 || !strings.Contains(stderr, "history goes first") {
		t.Errorf("a second load: exit %d, %s", code, stderr)
	}
}
