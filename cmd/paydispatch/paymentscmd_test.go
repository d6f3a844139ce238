package main

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// TestPaymentsCommand: payments cancel and reject refuse what they cannot
// act on (exit 2, one line naming the flag); cancel counts with
// --dry-run, and each prints what it did.
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
		{[]string{"payments", "reject", "--ids", "p-1", "--reason", "no"}, `--tenant "": want a tenant id`},
		{[]string{"payments", "reject", "--tenant", "acme", "--reason", "no"}, "--ids: name the held payments to reject by id"},
		{[]string{"payments", "reject", "--tenant", "acme", "--ids", "p 1", "--reason", "no"}, `--ids: "p 1" is no payment id`},
		{[]string{"payments", "reject", "--tenant", "acme", "--ids", "p-1"}, "--reason: say why they are rejected"},
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
	if code, out, stderr := runCLI([]string{"payments", "reject", "--tenant", "acme", "--ids", "p-1", "--reason", "sanctions match"}, env); code != 0 || out != "rejected: 0\n" {
		t.Fatalf("reject: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
