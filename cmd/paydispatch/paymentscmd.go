package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
)

// runPayments acts on payments: cancel a selection before it executes.
func runPayments(ctx context.Context, env *environment, args []string) error {
	const usage = "cancel (--tenant T | --batch B) [--status RECEIVED,SCHEDULED] [--from TIME] [--to TIME] [--dry-run]"
	about := "cancel cancels the payments a filter selects whose execution has not begun: a tenant's, a file's, or a\n" +
		"tenant's in a file, requested in [--from, --to) (RFC 3339), in the statuses named (default: any they wait in).\n" +
		"It prints how many it cancelled and, of the others, how many are in each status and why. --dry-run counts and\n" +
		"changes nothing. Example: paydispatch payments cancel --tenant acme --from 2030-01-01T16:00:00Z --to 2030-01-01T16:05:00Z"
	if sub, err := subcommand(ctx, env, "payments", usage, about, args, "cancel"); sub == "" {
		return err
	}
	var (
		f                  payment.CancelFilter
		statuses, from, to string
		dryRun             bool
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&f.TenantID, "tenant", "", "the tenant whose payments to cancel")
		fs.StringVar(&f.BatchID, "batch", "", "the file (batch id) whose payments to cancel")
		fs.StringVar(&statuses, "status", "", "only payments in these statuses: RECEIVED, SCHEDULED (comma-separated; default both)")
		fs.StringVar(&from, "from", "", "only payments requested at or after this time (RFC 3339)")
		fs.StringVar(&to, "to", "", "only payments requested before this time (RFC 3339)")
		fs.BoolVar(&dryRun, "dry-run", false, "count what would be cancelled; change nothing")
	}
	check := func([]string) error {
		if f.TenantID == "" && f.BatchID == "" {
			return errors.New("--tenant or --batch: name a tenant, a file, or both; a cancel never spans every tenant")
		}
		for _, s := range strings.Split(statuses, ",") {
			switch st := payment.Status(strings.ToUpper(strings.TrimSpace(s))); st {
			case "":
			case payment.StatusReceived, payment.StatusScheduled:
				f.Statuses = append(f.Statuses, st)
			default:
				return fmt.Errorf("--status %q: want RECEIVED or SCHEDULED, the statuses a payment waits in", plaintext.Clip(s, 32))
			}
		}
		for _, t := range []struct {
			flag, value string
			at          *time.Time
		}{{"--from", from, &f.RequestedFrom}, {"--to", to, &f.RequestedTo}} {
			if t.value == "" {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, t.value)
			if err != nil {
				return fmt.Errorf("%s %q: want an RFC 3339 time such as 2030-01-01T16:00:00Z", t.flag, plaintext.Clip(t.value, 40))
			}
			*t.at = at
		}
		if !f.RequestedFrom.IsZero() && !f.RequestedTo.IsZero() && !f.RequestedFrom.Before(f.RequestedTo) {
			return errors.New("--to must be after --from")
		}
		return nil
	}
	return ledgerCommand(ctx, env, "payments cancel", usage[len("cancel "):], about, args[1:], extra, func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			svc := &payment.Service{Store: payment.NewStore(db.Pool), Queue: queue.New(db.Pool)}
			res, err := svc.CancelWhere(ctx, f, dryRun, func(ctx context.Context, tx pgx.Tx, cancelled int) error {
				return cliRecord(ctx, tx, actor, "payments cancel", f.TenantID+"/"+f.BatchID, map[string]any{"filter": f, "cancelled": cancelled})
			})
			if errors.Is(err, payment.ErrNotFound) {
				return usageError{fmt.Errorf("--batch %q: no such file", plaintext.Clip(f.BatchID, 64))}
			}
			if err != nil {
				return err
			}
			verb := "cancelled"
			if dryRun {
				verb = "would cancel (dry run, nothing changed)"
			}
			fmt.Fprintf(env.stdout, "%s: %d\n", verb, res.Cancelled)
			for _, n := range res.NotCancelled {
				fmt.Fprintf(env.stdout, "not cancelled: %d %s (%s)\n", n.Count, n.Status, n.Reason)
			}
			return nil
		})
}
