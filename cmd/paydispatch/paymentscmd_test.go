package main

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestPaymentsCommand: payments cancel refuses a filter it cannot act on
// (exit 2, one line naming the flag), counts with --dry-run, and prints
// what it cancelled.
func TestPaymentsCommand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t)}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"payments", "cancel"}, "--tenant or --batch"},
		{[]string{"payments", "cancel", "--tenant", "acme", "--status", "DELIVERED"}, `--status "DELIVERED": want RECEIVED, SCHEDULED, HELD or AWAITING_APPROVAL`},
		{[]string{"payments", "cancel", "--tenant", "acme", "--from", "yesterday"}, `--from "yesterday": want an RFC 3339 time`},
		{[]string{"payments", "cancel", "--tenant", "acme", "--from", "2030-01-01T16:00:00Z", "--to", "2030-01-01T15:00:00Z"}, "--to must be after --from"},
		{[]string{"payments", "cancel", "--batch", "batch-nope"}, `--batch "batch-nope": no such file`},
		{[]string{"payments", "refund"}, `unknown subcommand "refund"`},
	} {
		if code, out, stderr := runCLI(bad.args, env); code != 2 || out != "" || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", bad.args, code, out, stderr, bad.want)
		}
	}
	if code, out, stderr := runCLI([]string{"payments", "cancel", "--tenant", "acme", "--dry-run"}, env); code != 0 || out != "would cancel (dry run, nothing changed): 0\n" {
		t.Fatalf("dry run: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, stderr := runCLI([]string{"payments", "cancel", "--tenant", "acme", "--status", "scheduled"}, env); code != 0 || out != "cancelled: 0\n" {
		t.Fatalf("cancel: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
