package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// railFlags are the flags of 'rail set' by the rail's field each sets,
// as a refusal names it.
var railFlags = map[string]string{
	"name": "NAME", "type": "--type", "endpoint": "--endpoint", "rateLimitConfig": "--rate-limit-config",
	"timeZone": "--time-zone", "opens": "--opens", "cutoff": "--cutoff", "calendar": "--calendar",
}

// refusal is a usage error naming, for each field of a routing or
// calendar refusal, the flag (or word) that set it.
func refusal(err error, names func(field string) string) error {
	var bad *field.Invalid
	if !errors.As(err, &bad) {
		return err
	}
	parts := make([]string, len(bad.Fields))
	for i, f := range bad.Fields {
		parts[i] = names(f.Field) + ": " + f.Detail
	}
	return usageError{errors.New(strings.Join(parts, "; "))}
}

func railFlag(field string) string {
	if f, ok := railFlags[field]; ok {
		return f
	}
	return field
}

func runRail(ctx context.Context, env *environment, args []string) error {
	const usage = "set NAME [--type T] [--endpoint URL] [--rate-limit-config C] [--time-zone Z] [--opens HH:MM:SS] [--cutoff HH:MM:SS] [--calendar C] [--active=true|false] | list | show NAME"
	about := "set creates a rail or changes the fields its flags name (the others keep their values; a new rail needs\n" +
		"--type, the rest default: the process's rail endpoint, PAYMENT's rate-limit config, UTC, opening 00:00:00, no\n" +
		"cut-off, every day open, active). An empty value (--cutoff '') sets a field back to its default. list prints\n" +
		"every rail, one a line; show prints a rail as GET /admin/rails/{name} does: what waits for it, its rate and\n" +
		"its business day's cut-off, with the margin. A change is in the audit log; a running serve routes by it\n" +
		"within 5 s. Example: paydispatch rail set SEPA --type SEPA_JSON --rate-limit-config sepa --time-zone Europe/Berlin\n" +
		"--opens 07:00 --cutoff 16:00 --calendar TARGET2"
	sub, err := subcommand(ctx, env, "rail", usage, about, args, "set", "list", "show")
	switch sub {
	case "":
		return err
	case "list":
		return ledgerCommand(ctx, env, "rail list", "", about, args[1:], nil, exactly(0), nil,
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				rails, err := routing.ListRails(ctx, db.Pool)
				for _, r := range rails {
					printRail(env.stdout, r)
				}
				return err
			})
	case "show":
		return ledgerCommand(ctx, env, "rail show", "NAME", about, args[1:], nil, exactly(1), checkRailName,
			func(ctx context.Context, db *postgres.DB, w []string) error {
				st, err := railStore(db).RailStatus(ctx, w[0])
				if errors.Is(err, routing.ErrNotFound) {
					return usageError{fmt.Errorf("no rail %q: 'paydispatch rail list' lists them", w[0])}
				}
				if err != nil {
					return err
				}
				return printJSON(env, st)
			})
	}
	var (
		fs                                                      *flag.FlagSet
		typ, endpoint, config, zone, opens, cutoff, calendarStr string
		active                                                  bool
		opensAt, cutoffAt                                       time.Duration
	)
	extra := func(f *flag.FlagSet) {
		fs = f
		f.StringVar(&typ, "type", "", "how its instructions are written and sent: SEPA_JSON or PACS008 (a new rail needs it)")
		f.StringVar(&endpoint, "endpoint", "", "its root URL (http or https); empty: the process's rail endpoint")
		f.StringVar(&config, "rate-limit-config", "", "the rate-limit config that is its connection's limit; empty: PAYMENT's")
		f.StringVar(&zone, "time-zone", "", "an IANA time zone name, e.g. Europe/Berlin; empty: UTC")
		f.StringVar(&opens, "opens", "", "when payments begin to execute on a business day, HH:MM:SS in its zone")
		f.StringVar(&cutoff, "cutoff", "", "the time of day by which a payment must reach it, HH:MM:SS; empty: none")
		f.StringVar(&calendarStr, "calendar", "", "the calendar of its business days (TARGET2, WEEKDAYS or an operator's); empty: every day")
		f.BoolVar(&active, "active", true, "false: no payment is routed to it or may name it")
	}
	check := func(w []string) error {
		if err := checkRailName(w); err != nil {
			return err
		}
		var bad error
		fs.Visit(func(f *flag.Flag) {
			if v := f.Value.String(); bad == nil && !plaintext.Valid(v) {
				bad = fmt.Errorf("--%s: text without control characters", f.Name)
			}
		})
		if bad != nil {
			return bad
		}
		for _, t := range []struct {
			flag, value string
			into        *time.Duration
		}{{"--opens", opens, &opensAt}, {"--cutoff", cutoff, &cutoffAt}} {
			if t.value == "" {
				continue
			}
			d, err := routing.ParseTimeOfDay(t.value)
			if err != nil {
				return fmt.Errorf("%s %q: want a time of day HH:MM:SS (or HH:MM), e.g. 16:00:00", t.flag, plaintext.Clip(t.value, 16))
			}
			*t.into = d
		}
		return nil
	}
	return ledgerCommand(ctx, env, "rail set", usage[len("set "):strings.Index(usage, " | list")], about, args[1:], extra, exactly(1), check,
		func(ctx context.Context, db *postgres.DB, w []string) error {
			var saved routing.Rail
			err := changeAudited(ctx, env, db, "rail set", w[0], func(tx pgx.Tx) (any, error) {
				r, err := routing.GetRail(ctx, tx, w[0])
				switch {
				case errors.Is(err, routing.ErrNotFound):
					if typ == "" {
						return nil, usageError{fmt.Errorf("--type: rail %s is new: name its type, SEPA_JSON or PACS008", w[0])}
					}
					r = routing.Rail{Name: w[0], Active: true}
				case err != nil:
					return nil, err
				}
				fs.Visit(func(f *flag.Flag) {
					switch f.Name {
					case "type":
						r.Type = typ
					case "endpoint":
						r.Endpoint = endpoint
					case "rate-limit-config":
						r.PacingConfig = config
					case "time-zone":
						r.TimeZone = zone
					case "opens":
						r.Opens = opensAt
					case "cutoff":
						r.Cutoff = cutoffAt
					case "calendar":
						r.Calendar = calendarStr
					case "active":
						r.Active = active
					}
				})
				saved, err = routing.PutRail(ctx, tx, r)
				return map[string]any{"rail": httpapi.RailJSONOf(saved)}, err
			})
			if err != nil {
				return refusal(err, railFlag)
			}
			printRail(env.stdout, saved)
			return nil
		})
}

// checkRailName refuses a NAME no rail can have, before the database is
// opened.
func checkRailName(w []string) error {
	if !routing.ValidName(w[0]) {
		return fmt.Errorf("NAME %q: a rail's name is 1 to 64 letters, digits, '_', '.', ':' or '-'", plaintext.Clip(w[0], 64))
	}
	return nil
}

// railStore reads rails with what waits for them, as GET /admin/rails/{name}.
func railStore(db *postgres.DB) httpapi.RailStore {
	return httpapi.RailStore{DB: db.Pool, Payments: payment.NewStore(db.Pool), Pacing: pacing.New(pacing.Config{Pool: db.Pool}), Queue: queue.New(db.Pool)}
}

// printRail prints a rail on one line, under the flags 'rail set' takes.
func printRail(w io.Writer, r routing.Rail) {
	j := httpapi.RailJSONOf(r)
	fmt.Fprintf(w, "%s type=%s endpoint=%s rate-limit-config=%s time-zone=%s opens=%s cutoff=%s calendar=%s active=%t version=%d\n",
		j.Name, j.Type, j.Endpoint, j.RateLimitConfig, j.TimeZone, j.Opens, j.Cutoff, j.Calendar, j.Active, j.Version)
}

// splitList splits a comma-separated flag value, leaving out empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
