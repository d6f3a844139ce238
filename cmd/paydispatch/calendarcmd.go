package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/postgres"
)

func runCalendar(ctx context.Context, env *environment, args []string) error {
	const usage = "set NAME [--weekend SAT,SUN] [--closing 2026-12-24,2026-12-31] | list | show NAME"
	about := "set creates an operator's calendar or replaces it whole: the days of the week closed every week (--weekend,\n" +
		"by name or its first three letters; none: every day of the week open) and the other days closed (--closing,\n" +
		"YYYY-MM-DD). TARGET2 and WEEKDAYS are built in and cannot be set. list prints every calendar, one a line;\n" +
		"show prints one as GET /admin/calendars/{name} does (a built-in's closing days of this year and the next).\n" +
		"A change is in the audit log; a rail reads it within 5 s."
	sub, err := subcommand(ctx, env, "calendar", usage, about, args, "set", "list", "show")
	switch sub {
	case "":
		return err
	case "list":
		return ledgerCommand(ctx, env, "calendar list", "", about, args[1:], nil, exactly(0), nil,
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				cals, err := calendar.List(ctx, db.Pool)
				for _, c := range cals {
					kind := "operator's"
					if c.BuiltIn {
						kind = "built-in"
					}
					fmt.Fprintf(env.stdout, "%s %s weekend=%s closing-days=%d\n", c.Name, kind, weekendFlag(c.Weekend),
						len(httpapi.CalendarJSONOf(c, time.Now().UTC().Year()).ClosingDays))
				}
				return err
			})
	case "show":
		return ledgerCommand(ctx, env, "calendar show", "NAME", about, args[1:], nil, exactly(1), nil,
			func(ctx context.Context, db *postgres.DB, w []string) error {
				c, err := calendar.Get(ctx, db.Pool, w[0])
				if errors.Is(err, calendar.ErrNotFound) {
					return usageError{fmt.Errorf("no calendar %q: 'paydispatch calendar list' lists them", plaintext.Clip(w[0], 100))}
				}
				if err != nil {
					return err
				}
				return printJSON(env, httpapi.CalendarJSONOf(c, time.Now().UTC().Year()))
			})
	}
	var (
		weekend, closing string
		c                calendar.Calendar
	)
	extra := func(f *flag.FlagSet) {
		f.StringVar(&weekend, "weekend", "", "the days of the week closed every week, comma-separated: SAT,SUN (none: every day open)")
		f.StringVar(&closing, "closing", "", "the other days closed, comma-separated: 2026-12-24,2026-12-31")
	}
	check := func(w []string) error {
		c = calendar.Calendar{Name: w[0]}
		for _, s := range splitList(weekend) {
			d, ok := httpapi.ParseWeekday(s)
			if !ok {
				return fmt.Errorf("--weekend %q: want days of the week by name or their first three letters, e.g. SAT,SUN", plaintext.Clip(s, 16))
			}
			c.Weekend = append(c.Weekend, d)
		}
		for _, s := range splitList(closing) {
			d, err := calendar.ParseDate(s)
			if err != nil {
				return fmt.Errorf("--closing %q: want dates YYYY-MM-DD, e.g. 2026-12-24,2026-12-31", plaintext.Clip(s, 16))
			}
			c.ClosingDays = append(c.ClosingDays, d)
		}
		return refusal(c.Validate(), calendarFlag)
	}
	return ledgerCommand(ctx, env, "calendar set", "NAME [--weekend SAT,SUN] [--closing 2026-12-24,2026-12-31]", about, args[1:], extra, exactly(1), check,
		func(ctx context.Context, db *postgres.DB, w []string) error {
			var saved calendar.Calendar
			err := changeAudited(ctx, env, db, "calendar set", w[0], func(tx pgx.Tx) (any, error) {
				var err error
				saved, err = calendar.Put(ctx, tx, c)
				return map[string]any{"weekend": weekendFlag(saved.Weekend), "closingDays": len(saved.ClosingDays)}, err
			})
			if errors.Is(err, calendar.ErrBuiltIn) {
				return usageError{fmt.Errorf("NAME %q: TARGET2 and WEEKDAYS are built in and cannot be changed: choose another name", w[0])}
			}
			if err != nil {
				return refusal(err, calendarFlag)
			}
			fmt.Fprintf(env.stdout, "%s weekend=%s closing-days=%d\n", saved.Name, weekendFlag(saved.Weekend), len(saved.ClosingDays))
			return nil
		})
}

func calendarFlag(field string) string {
	switch {
	case field == "name":
		return "NAME"
	case strings.HasPrefix(field, "weekend"):
		return "--weekend"
	case strings.HasPrefix(field, "closingDays"):
		return "--closing"
	}
	return field
}

// weekendFlag writes weekend days as --weekend takes them, Monday first.
func weekendFlag(days []time.Weekday) string {
	names := httpapi.CalendarJSONOf(calendar.Calendar{Weekend: days}, 0).Weekend
	for i, n := range names {
		names[i] = n[:3]
	}
	return strings.Join(names, ",")
}
