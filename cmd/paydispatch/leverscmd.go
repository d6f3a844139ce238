package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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

// The levers' usages, after 'payments'.
const (
	pauseUsage    = "pause (--tenant T | --batch B | --rail R)"
	resumeUsage   = "resume (--tenant T | --batch B | --rail R)"
	pausesUsage   = "pauses"
	priorityUsage = "priority --priority HIGH|NORMAL|LOW (--tenant T --id ID | --batch B [--tenant T])"
)

// leversAbout describes the levers in 'payments --help'.
const leversAbout = "pause holds a tenant's, a file's or a rail's waiting payments: they stay SCHEDULED in their order and do\n" +
	"not execute (their slots go to the others); an execution that has begun finishes. Pausing a paused scope again\n" +
	"pauses what came since. resume paces them again from now at their configs' rates, in their order, never a burst\n" +
	"(one that can no longer make its rail's cut-off meets its tenant's rule). pauses lists the scopes paused.\n" +
	"Example: paydispatch payments pause --tenant acme; paydispatch payments resume --tenant acme\n\n" +
	"priority changes the priority of a tenant's waiting payment (--tenant, --id) or of a file's waiting payments\n" +
	"(--batch; --tenant: only that tenant's): HIGH goes ahead of NORMAL, NORMAL ahead of LOW; the payments waiting on\n" +
	"their rails take their slots in the new order. Example: paydispatch payments priority --batch batch-1f2e --priority HIGH"

// leverService is the payment service a lever works through.
func leverService(db *postgres.DB) *payment.Service {
	return payment.NewService(payment.ServiceConfig{Store: payment.NewStore(db.Pool), Queue: queue.New(db.Pool), Pacer: pacing.New(pacing.Config{Pool: db.Pool}),
		Rails: routing.NewResolver(db.Pool, routing.ResolverConfig{})})
}

// scopeFlags are a pause's scope as flags: one of --tenant, --batch and
// --rail.
type scopeFlags struct{ tenant, batch, rail string }

func (s *scopeFlags) add(fs *flag.FlagSet, verb string) {
	fs.StringVar(&s.tenant, "tenant", "", "the tenant whose waiting payments to "+verb)
	fs.StringVar(&s.batch, "batch", "", "the file (batch id) whose waiting payments to "+verb)
	fs.StringVar(&s.rail, "rail", "", "the rail whose waiting payments to "+verb)
}

// scope is the scope the flags name, or why they name none.
func (s scopeFlags) scope(verb string) (payment.PauseScope, string, error) {
	var out payment.PauseScope
	var flagName string
	n := 0
	for _, f := range []struct{ name, kind, value string }{{"--tenant", payment.PauseTenant, s.tenant},
		{"--batch", payment.PauseBatch, s.batch}, {"--rail", payment.PauseRail, s.rail}} {
		if f.value != "" {
			n++
			out, flagName = payment.PauseScope{Kind: f.kind, ID: f.value}, f.name
		}
	}
	switch {
	case n == 0:
		return out, "", fmt.Errorf("--tenant, --batch or --rail: name the tenant, the file or the rail to %s", verb)
	case n > 1:
		return out, "", fmt.Errorf("--tenant, --batch and --rail: name one of them; a %s holds one scope", verb)
	}
	if err := out.Validate(); err != nil {
		switch out.Kind {
		case payment.PauseTenant:
			return out, "", fmt.Errorf("--tenant %q: want a tenant id: %s", plaintext.Clip(out.ID, 64), field.IDRule)
		case payment.PauseRail:
			return out, "", fmt.Errorf("--rail %q: a rail's name is 1 to 64 letters, digits, '_', '.', ':' or '-'", plaintext.Clip(out.ID, 64))
		}
		return out, "", fmt.Errorf("--batch %q: a file's batch id, at most 100 characters of text", plaintext.Clip(out.ID, 64))
	}
	return out, flagName, nil
}

// runPause pauses a scope ('payments pause').
func runPause(ctx context.Context, env *environment, args []string) error {
	var flags scopeFlags
	var scope payment.PauseScope
	var flagName string
	check := func([]string) (err error) {
		scope, flagName, err = flags.scope("pause")
		return err
	}
	return ledgerCommand(ctx, env, "payments pause", pauseUsage[len("pause "):], leversAbout, args, func(fs *flag.FlagSet) { flags.add(fs, "pause") },
		func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			res, err := leverService(db).Pause(ctx, scope, func(ctx context.Context, tx pgx.Tx, n int) error {
				return cliRecord(ctx, tx, actor, "payments pause", scope.Kind+":"+scope.ID, map[string]any{"pause": scope, "payments": n})
			})
			if errors.Is(err, payment.ErrNotFound) {
				return usageError{fmt.Errorf("%s %q: no such file", flagName, plaintext.Clip(scope.ID, 64))}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "paused: %s %s\npayments: %d\nparked: %d\n", scope.Kind, scope.ID, res.Payments, res.Parked)
			return nil
		})
}

// runResume resumes a paused scope ('payments resume').
func runResume(ctx context.Context, env *environment, args []string) error {
	var flags scopeFlags
	var scope payment.PauseScope
	var flagName string
	check := func([]string) (err error) {
		scope, flagName, err = flags.scope("resume")
		return err
	}
	return ledgerCommand(ctx, env, "payments resume", resumeUsage[len("resume "):], leversAbout, args, func(fs *flag.FlagSet) { flags.add(fs, "resume") },
		func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			res, err := leverService(db).Resume(ctx, scope, func(ctx context.Context, tx pgx.Tx, n int) error {
				return cliRecord(ctx, tx, actor, "payments resume", scope.Kind+":"+scope.ID, map[string]any{"resume": scope, "moved": n})
			})
			if errors.Is(err, payment.ErrNotFound) {
				return usageError{fmt.Errorf("%s %q: not paused ('paydispatch payments pauses' lists the pauses)", flagName, plaintext.Clip(scope.ID, 64))}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "resumed: %s %s\n", scope.Kind, scope.ID)
			printRepaced(env, res)
			return nil
		})
}

// printRepaced prints how a lever moved the waiting payments.
func printRepaced(env *environment, r payment.Repaced) {
	fmt.Fprintf(env.stdout, "moved: %d\nrolled: %d\nheld: %d\nrejected: %d\nclaimed: %d\n", r.Moved, r.Rolled, r.Held, r.Rejected, r.Claimed)
	if r.Paused > 0 {
		fmt.Fprintf(env.stdout, "paused: %d (another pause holds them)\n", r.Paused)
	}
	if r.FirstSlot != nil {
		fmt.Fprintf(env.stdout, "slots: %s to %s\n", r.FirstSlot.Format(time.RFC3339Nano), r.LastSlot.Format(time.RFC3339Nano))
	}
}

// runPauses lists the pauses ('payments pauses').
func runPauses(ctx context.Context, env *environment, args []string) error {
	return ledgerCommand(ctx, env, "payments pauses", "", leversAbout, args, nil, func(n int) bool { return n == 0 }, nil,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			ps, err := leverService(db).Pauses(ctx)
			for _, p := range ps {
				fmt.Fprintf(env.stdout, "%s %s paused_at=%s\n", p.Kind, p.ID, p.PausedAt.Format(time.RFC3339Nano))
			}
			return err
		})
}

// runPriority changes the priority of waiting payments ('payments
// priority').
func runPriority(ctx context.Context, env *environment, args []string) error {
	var tenant, id, batch, priority string
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&priority, "priority", "", "the new priority: HIGH, NORMAL or LOW")
		fs.StringVar(&tenant, "tenant", "", "the payment's tenant (with --id); with --batch, only this tenant's payments")
		fs.StringVar(&id, "id", "", "the payment's id, its tenant's own (needs --tenant)")
		fs.StringVar(&batch, "batch", "", "the file (batch id) whose waiting payments to change")
	}
	var p payment.Priority
	check := func([]string) error {
		p = payment.Priority(strings.ToUpper(strings.TrimSpace(priority)))
		switch {
		case priority == "":
			return errors.New("--priority: name the new priority: HIGH, NORMAL or LOW")
		case !p.Valid():
			return fmt.Errorf("--priority %q: want HIGH, NORMAL or LOW", plaintext.Clip(priority, 32))
		case id == "" && batch == "":
			return errors.New("--id or --batch: name a payment (--tenant and --id) or a file (--batch)")
		case id != "" && batch != "":
			return errors.New("--id and --batch: name a payment or a file, not both")
		case id != "" && tenant == "":
			return errors.New("--id: ids are a tenant's own: name the tenant with --tenant")
		case tenant != "" && !field.ValidID(tenant):
			return fmt.Errorf("--tenant %q: want a tenant id: %s", plaintext.Clip(tenant, 64), field.IDRule)
		case id != "" && !field.ValidID(id):
			return fmt.Errorf("--id %q: want a payment id: %s", plaintext.Clip(id, 64), field.IDRule)
		case len(batch) > 128 || !plaintext.Valid(batch):
			return errors.New("--batch: a file's batch id, at most 128 characters of text")
		}
		return nil
	}
	return ledgerCommand(ctx, env, "payments priority", priorityUsage[len("priority "):], leversAbout, args, extra, func(n int) bool { return n == 0 }, check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			target := tenant + "/" + id
			if batch != "" {
				target = batch
			}
			record := func(ctx context.Context, tx pgx.Tx, n int) error {
				return cliRecord(ctx, tx, actor, "payments priority", target,
					map[string]any{"tenantId": tenant, "payment": id, "batch": batch, "priority": p, "changed": n})
			}
			svc := leverService(db)
			var res payment.Reprioritized
			if batch != "" {
				res, err = svc.SetBatchPriority(ctx, batch, tenant, p, record)
			} else {
				res, err = svc.SetPriority(ctx, tenant, id, p, record)
			}
			switch {
			case errors.Is(err, payment.ErrNotFound) && batch != "":
				return usageError{fmt.Errorf("--batch %q: no such file", plaintext.Clip(batch, 64))}
			case errors.Is(err, payment.ErrNotFound):
				return usageError{fmt.Errorf("--id %q: tenant %s has no such payment", plaintext.Clip(id, 64), tenant)}
			case errors.Is(err, payment.ErrNotWaiting):
				return fmt.Errorf("payment %s of %s no longer waits (its execution began, or it ended): its priority no longer counts; nothing changed", id, tenant)
			case err != nil:
				return err
			}
			fmt.Fprintf(env.stdout, "changed: %d\n", res.Changed)
			printRepaced(env, res.Repaced)
			return nil
		})
}
