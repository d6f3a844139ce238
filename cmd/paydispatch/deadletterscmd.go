package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/app"
	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/postgres"
)

// runDeadLetters lists and requeues the dispatch queue's and the outbox's
// dead letters.
func runDeadLetters(ctx context.Context, env *environment, args []string) error {
	const usage = "list|requeue [ID...] [--source S] [--item-type T] [--tenant T] [--reason R] [--from TIME] [--to TIME] [--all] [--config NAME]"
	about := "list prints the dead letters a filter selects, oldest first (--limit, default 100). requeue sends again the ones\n" +
		"named by id (as listed), or with --all every one the filter selects, each at a new slot from a rate-limit config\n" +
		"(--config; default the item type's own), so a large requeue goes out at that rate, not in one burst. A returned\n" +
		"payment is debited again before it is sent. Example: paydispatch dead-letters requeue --all --reason AC04 --config redrive-50"
	sub, err := subcommand(ctx, env, "dead-letters", usage, about, args, "list", "requeue")
	if sub == "" {
		return err
	}
	var (
		f                      deadletter.Filter
		from, to, cfg, because string
		all                    bool
		limit                  int
	)
	extra := func(fs *flag.FlagSet) {
		fs.StringVar(&f.Source, "source", "", "only dead letters of this source: dispatch (the queue) or outbox (the rail's)")
		fs.StringVar(&f.ItemType, "item-type", "", "only this item type (the queue's, e.g. PAYMENT) or rail type (the outbox's, e.g. SEPA_JSON)")
		fs.StringVar(&f.TenantID, "tenant", "", "only this tenant's")
		fs.StringVar(&f.Reason, "reason", "", "only those whose reason contains this text (any case), e.g. AC04")
		fs.StringVar(&from, "from", "", "only those dead at or after this time (RFC 3339)")
		fs.StringVar(&to, "to", "", "only those dead before this time (RFC 3339)")
		if sub == "list" {
			fs.IntVar(&limit, "limit", 100, "print at most this many")
		} else {
			fs.BoolVar(&all, "all", false, "requeue every dead letter the filter selects (no ids)")
			fs.StringVar(&cfg, "config", "", "the rate-limit config the requeued items take new slots from (default: the item type's own)")
			fs.StringVar(&because, "why", "", "why they are sent again (kept with each item)")
		}
	}
	filtered := func() bool { return f != (deadletter.Filter{}) }
	check := func(ids []string) error {
		if err := parseWindow(from, to, &f.DiedFrom, &f.DiedTo); err != nil {
			return err
		}
		if err := f.Validate(); err != nil {
			var bad *field.Invalid
			if errors.As(err, &bad) && len(bad.Fields) == 1 {
				return fmt.Errorf("--%s: %s", flagOf(bad.Fields[0].Field), bad.Fields[0].Detail)
			}
			return err
		}
		switch {
		case sub == "list" && len(ids) > 0:
			return errors.New("list takes no ids: filter with --source, --item-type, --tenant, --reason, --from, --to")
		case sub == "list" && (limit < 1 || limit > 100000):
			return errors.New("--limit: want a whole number from 1 to 100000")
		case sub == "requeue" && len(ids) == 0 && !all:
			return errors.New("name the dead letters to requeue (their ids, as listed), or --all with a filter")
		case sub == "requeue" && len(ids) > 0 && (all || filtered()):
			return errors.New("either ids or --all with a filter, not both")
		}
		return nil
	}
	return ledgerCommand(ctx, env, "dead-letters "+sub, usage, about, args[1:], extra, func(int) bool { return true }, check,
		func(ctx context.Context, db *postgres.DB, ids []string) error {
			svc := app.DeadLetters(db)
			if sub == "list" {
				return printDeadLetters(ctx, env, svc, f, limit)
			}
			actor, err := cliActor(env)
			if err != nil {
				return err
			}
			req := deadletter.Request{IDs: ids, Config: cfg, Reason: because}
			if all {
				req.IDs, req.Filter = nil, &f
			}
			req.Record = func(ctx context.Context, tx pgx.Tx, page deadletter.Result) error {
				return cliRecord(ctx, tx, actor, "dead-letters requeue", strings.Join(page.Configs, ","), map[string]any{
					"ids": len(ids), "filter": req.Filter, "requeued": page.Requeued, "refused": len(page.Refused), "reason": because})
			}
			started := time.Now()
			res, err := svc.Requeue(ctx, req)
			var notDead *deadletter.NotDeadError
			var noConfig *deadletter.NoConfigError
			switch {
			case errors.As(err, &notDead):
				return usageError{fmt.Errorf("nothing requeued: %s", notDead.Error())}
			case errors.As(err, &noConfig):
				return usageError{fmt.Errorf("--config: %s", noConfig.Detail)}
			case errors.Is(err, deadletter.ErrInvalid):
				return usageError{err}
			case err != nil:
				return fmt.Errorf("requeued %d before: %w", res.Requeued, err)
			}
			fmt.Fprintf(env.stdout, "requeued: %d under %s in %s", res.Requeued, strings.Join(res.Configs, ", "), time.Since(started).Round(time.Millisecond))
			if res.Requeued > 0 {
				fmt.Fprintf(env.stdout, ", slots %s to %s", res.FirstSlot.UTC().Format(time.RFC3339Nano), res.LastSlot.UTC().Format(time.RFC3339Nano))
			}
			fmt.Fprintln(env.stdout)
			if res.Unslotted > 0 {
				fmt.Fprintf(env.stdout, "still dead, no slot within the config's headroom: %d (requeue them again later)\n", res.Unslotted)
			}
			for id, why := range res.Refused {
				fmt.Fprintf(env.stdout, "refused: %s: %s\n", id, why)
			}
			return nil
		})
}

// flagOf names the flag of a filter field.
func flagOf(field string) string {
	switch field {
	case "itemType":
		return "item-type"
	case "tenantId":
		return "tenant"
	case "diedTo":
		return "to"
	}
	return field
}

func printDeadLetters(ctx context.Context, env *environment, svc *deadletter.Service, f deadletter.Filter, limit int) error {
	var after *deadletter.Position
	printed := 0
	for printed < limit {
		page, err := svc.List(ctx, f, after, min(limit-printed, 1000))
		if err != nil {
			return err
		}
		for _, l := range page.Letters {
			fmt.Fprintf(env.stdout, "%s\t%s\t%s\t%s\t%d\t%s\n", l.ID, l.TenantID, l.ItemID, l.DiedAt.UTC().Format(time.RFC3339), l.Attempts,
				plaintext.Clip(l.Reason, 200))
		}
		printed += len(page.Letters)
		if page.Next == nil {
			break
		}
		after = page.Next
	}
	if printed == 0 {
		fmt.Fprintln(env.stdout, "no dead letters")
	}
	return nil
}
