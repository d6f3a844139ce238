package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// runPayments acts on payments: cancel a selection before it executes,
// release those held at their rail's cut-off, pause and resume a
// tenant's, a file's or a rail's, or change the priority of those
// waiting.
func runPayments(ctx context.Context, env *environment, args []string) error {
	const usage = "cancel (--tenant T | --batch B) [--status RECEIVED,SCHEDULED,HELD,AWAITING_APPROVAL] [--from TIME] [--to TIME] [--dry-run] | " +
		"release (--tenant T [--ids ID,...] | --batch B | --rail R)... | " + rejectUsage + " | " + pauseUsage + " | " + resumeUsage + " | " + pausesUsage + " | " + priorityUsage
	about := "cancel cancels the payments a filter selects whose execution has not begun: a tenant's, a file's, or a\n" +
		"tenant's in a file, requested in [--from, --to) (RFC 3339), in the statuses named (default: any they wait in,\n" +
		"HELD among them). It prints how many it cancelled and, of the others, how many are in each status and why.\n" +
		"--dry-run counts and changes nothing. Example: paydispatch payments cancel --tenant acme --from 2030-01-01T16:00:00Z --to 2030-01-01T16:05:00Z\n\n" +
		"release lets payments HELD at their rail's cut-off (their tenant's rule HOLD) go again: a tenant's (with\n" +
		"--ids, those of its ids), a file's, a rail's, each flag narrowing the others, at most 10,000 a call. Each is\n" +
		"paced again from now on its rail, before its business day's cut-off or from a later day's opening, never sent\n" +
		"late. It prints how many were released, how many stay held, and their slots. Example: paydispatch payments release --rail SEPA\n\n" +
		"reject ends a tenant's HELD payments named by id (a screening hit, a suspected duplicate, a cut-off's hold)\n" +
		"REJECTED, with the reason given ('REJECTED by <actor>: <reason>'); those not HELD are left. It prints how many\n" +
		"it rejected. Example: paydispatch payments reject --tenant acme --ids p-1,p-2 --reason 'sanctions match confirmed'\n\n" +
		leversAbout
	sub, err := subcommand(ctx, env, "payments", usage, about, args, "cancel", "release", "reject", "pause", "resume", "pauses", "priority")
	switch sub {
	case "":
		return err
	case "release":
		return runRelease(ctx, env, about, args[1:])
	case "reject":
		return runRejectHeld(ctx, env, about, args[1:])
	case "pause":
		return runPause(ctx, env, args[1:])
	case "resume":
		return runResume(ctx, env, args[1:])
	case "pauses":
		return runPauses(ctx, env, args[1:])
	case "priority":
		return runPriority(ctx, env, args[1:])
	}
	var (
		f                  payment.CancelFilter
		statuses, from, to string
		dryRun             bool
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&f.TenantID, "tenant", "", "the tenant whose payments to cancel")
		fs.StringVar(&f.BatchID, "batch", "", "the file (batch id) whose payments to cancel")
		fs.StringVar(&statuses, "status", "", "only payments in these statuses: RECEIVED, SCHEDULED, HELD, AWAITING_APPROVAL (comma-separated; default all four)")
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
			case payment.StatusReceived, payment.StatusScheduled, payment.StatusHeld, payment.StatusAwaitingApproval:
				f.Statuses = append(f.Statuses, st)
			default:
				return fmt.Errorf("--status %q: want RECEIVED, SCHEDULED, HELD or AWAITING_APPROVAL, the statuses a payment waits in", plaintext.Clip(s, 32))
			}
		}
		if err := parseWindow(from, to, &f.RequestedFrom, &f.RequestedTo); err != nil {
			return err
		}
		if !f.RequestedFrom.IsZero() && !f.RequestedTo.IsZero() && !f.RequestedFrom.Before(f.RequestedTo) {
			return errors.New("--to must be after --from")
		}
		return nil
	}
	return ledgerCommand(ctx, env, "payments cancel", usage[len("cancel "):strings.Index(usage, " | release")], about, args[1:], extra, func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(db.Pool), Queue: queue.New(db.Pool), Pacer: pacing.New(pacing.Config{Pool: db.Pool})})
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

// runRelease releases held payments ('payments release').
func runRelease(ctx context.Context, env *environment, about string, args []string) error {
	var (
		f            payment.HeldFilter
		ids, reasons string
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&f.TenantID, "tenant", "", "the tenant whose held payments to release")
		fs.StringVar(&ids, "ids", "", "only these of the tenant's payment ids, comma-separated (needs --tenant)")
		fs.StringVar(&f.BatchID, "batch", "", "the file (batch id) whose held payments to release")
		fs.StringVar(&f.Rail, "rail", "", "the rail whose held payments to release")
		fs.StringVar(&reasons, "reasons", "", "the holds to release, comma-separated: CUTOFF, DUPLICATE, SCREENING (default CUTOFF,DUPLICATE; SCREENING only with --tenant and --ids)")
	}
	check := func([]string) error {
		f.PaymentIDs, f.Reasons = splitList(ids), splitList(reasons)
		for _, r := range f.Reasons {
			switch {
			case !slices.Contains(payment.HeldReasons, r):
				return fmt.Errorf("--reasons: %q is no hold: want CUTOFF, DUPLICATE or SCREENING", plaintext.Clip(r, 64))
			case r == payment.HoldScreening && (len(f.PaymentIDs) == 0 || f.BatchID != "" || f.Rail != ""):
				return errors.New("--reasons SCREENING: a screening hit is released only by its payment's id: name them with --tenant and --ids")
			}
		}
		switch {
		case len(f.PaymentIDs) > 0 && f.TenantID == "":
			return errors.New("--ids: ids are a tenant's own: name the tenant with --tenant")
		case f.TenantID == "" && f.BatchID == "" && f.Rail == "":
			return errors.New("--tenant, --batch or --rail: name whose held payments to release; a release never spans everything")
		case f.TenantID != "" && !field.ValidID(f.TenantID):
			return fmt.Errorf("--tenant %q: want a tenant id: %s", plaintext.Clip(f.TenantID, 64), field.IDRule)
		case f.Rail != "" && !routing.ValidName(f.Rail):
			return fmt.Errorf("--rail %q: a rail's name is 1 to 64 letters, digits, '_', '.', ':' or '-'", plaintext.Clip(f.Rail, 64))
		case len(f.BatchID) > 128 || !plaintext.Valid(f.BatchID):
			return errors.New("--batch: a file's batch id, at most 128 characters of text")
		case len(f.PaymentIDs) > payment.MaxRelease:
			return fmt.Errorf("--ids: at most %d ids a release", payment.MaxRelease)
		}
		for _, id := range f.PaymentIDs {
			if !field.ValidID(id) {
				return fmt.Errorf("--ids: %q is no payment id: %s", plaintext.Clip(id, 64), field.IDRule)
			}
		}
		return nil
	}
	return ledgerCommand(ctx, env, "payments release", "(--tenant T [--ids ID,...] | --batch B | --rail R)... [--reasons R,...]", about, args, extra, func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(db.Pool), Queue: queue.New(db.Pool), Pacer: pacing.New(pacing.Config{Pool: db.Pool}),
				Rails: routing.NewResolver(db.Pool, routing.ResolverConfig{})})
			res, err := svc.Release(ctx, f, func(ctx context.Context, tx pgx.Tx, released int) error {
				return cliRecord(ctx, tx, actor, "payments release", f.TenantID+"/"+f.BatchID+"/"+f.Rail, map[string]any{"filter": f, "released": released})
			})
			if errors.Is(err, payment.ErrNotFound) {
				return usageError{fmt.Errorf("--batch %q: no such file", plaintext.Clip(f.BatchID, 64))}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "released: %d\nstill held: %d\n", res.Released, res.Held)
			if res.Paused > 0 {
				fmt.Fprintf(env.stdout, "paused: %d (released, held by a pause until its resume)\n", res.Paused)
			}
			if res.FirstSlot != nil {
				fmt.Fprintf(env.stdout, "slots: %s to %s\n", res.FirstSlot.Format(time.RFC3339Nano), res.LastSlot.Format(time.RFC3339Nano))
			}
			return nil
		})
}

const rejectUsage = "reject --tenant T --ids ID,... --reason TEXT"

// runRejectHeld rejects held payments ('payments reject').
func runRejectHeld(ctx context.Context, env *environment, about string, args []string) error {
	var tenant, ids, reason string
	var paymentIDs []string
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&tenant, "tenant", "", "the tenant whose held payments to reject")
		fs.StringVar(&ids, "ids", "", "the tenant's payment ids, comma-separated")
		fs.StringVar(&reason, "reason", "", "why they are not to go (in each payment's status reason and the audit log)")
	}
	check := func([]string) error {
		paymentIDs = splitList(ids)
		switch {
		case !field.ValidID(tenant):
			return fmt.Errorf("--tenant %q: want a tenant id: %s", plaintext.Clip(tenant, 64), field.IDRule)
		case len(paymentIDs) == 0:
			return errors.New("--ids: name the held payments to reject by id: a rejection is a decision on each")
		case len(paymentIDs) > payment.MaxReject:
			return fmt.Errorf("--ids: at most %d ids a rejection", payment.MaxReject)
		case strings.TrimSpace(reason) == "" || len(reason) > payment.MaxRejectReason || !plaintext.Valid(reason):
			return fmt.Errorf("--reason: say why they are rejected, 1 to %d characters of text", payment.MaxRejectReason)
		}
		for _, id := range paymentIDs {
			if !field.ValidID(id) {
				return fmt.Errorf("--ids: %q is no payment id: %s", plaintext.Clip(id, 64), field.IDRule)
			}
		}
		return nil
	}
	return ledgerCommand(ctx, env, "payments reject", rejectUsage[len("reject "):], about, args, extra, func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(db.Pool), Queue: queue.New(db.Pool)})
			n, err := svc.RejectHeld(ctx, tenant, paymentIDs, actor, reason, func(ctx context.Context, tx pgx.Tx, n int) error {
				return cliRecord(ctx, tx, actor, "payments reject", tenant, map[string]any{"tenantId": tenant, "paymentIds": paymentIDs, "reason": reason, "rejected": n})
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "rejected: %d\n", n)
			return nil
		})
}
