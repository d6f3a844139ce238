package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/routing"
)

// ruleKeys are the keys of a RULE, in the order routing list prints them.
var ruleKeys = []string{"rail", "tenant", "currency", "min", "max", "source"}

// parseRule reads a RULE: key=value pairs, comma-separated (rail
// required; tenant, currency, min, max and source match, none: any).
func parseRule(s string) (routing.Rule, error) {
	var r routing.Rule
	fields, err := ruleFields(s)
	if err != nil {
		return r, err
	}
	for _, f := range fields {
		k, v := f[0], f[1]
		switch k {
		case "rail":
			r.Rail = v
		case "tenant":
			r.TenantID = v
		case "currency":
			r.Currency = strings.ToUpper(v)
		case "source":
			r.Source = strings.ToUpper(v)
		case "min", "max":
			d, err := money.ParseDecimal(v, money.Unsigned)
			if err != nil {
				return r, fmt.Errorf("%s: %v", k, err)
			}
			if k == "min" {
				r.MinAmount = &d
			} else {
				r.MaxAmount = &d
			}
		default:
			return r, fmt.Errorf("unknown key %q: want %s", plaintext.Clip(k, 32), strings.Join(ruleKeys, ", "))
		}
	}
	if r.Rail == "" {
		return r, errors.New("rail=NAME is required: the rail the payments it matches leave by")
	}
	return r, nil
}

// ruleFields reads a RULE's key=value pairs, comma-separated, in order,
// each key once (routing's and approval rules' alike).
func ruleFields(s string) ([][2]string, error) {
	var out [][2]string
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%q: want key=value", plaintext.Clip(kv, 32))
		case seen[k]:
			return nil, fmt.Errorf("%s appears twice", plaintext.Clip(k, 32))
		}
		seen[k] = true
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// formatRule writes a rule as a RULE routing set takes.
func formatRule(r routing.Rule) string {
	parts := []string{"rail=" + r.Rail}
	for _, kv := range [][2]string{{"tenant", r.TenantID}, {"currency", r.Currency}, {"min", decString(r.MinAmount)},
		{"max", decString(r.MaxAmount)}, {"source", r.Source}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

func decString(d *decimal.Decimal) string {
	if d == nil {
		return ""
	}
	return d.String()
}

func printRules(w io.Writer, rules []routing.Rule) {
	for i, r := range rules {
		fmt.Fprintf(w, "%d %s\n", i+1, formatRule(r))
	}
}

// ruleWord names the RULE a refusal's field (rules[i].x) is of, and x
// by the key that set it when keys names one.
func ruleWord(words []string, keys map[string]string) func(string) string {
	return func(field string) string {
		rest, ok := strings.CutPrefix(field, "rules[")
		i, after, found := strings.Cut(rest, "].")
		n, err := strconv.Atoi(i)
		if !ok || !found || err != nil || n < 0 || n >= len(words) {
			return field
		}
		if k, ok := keys[after]; ok {
			after = k
		}
		return fmt.Sprintf("RULE %d (%s): %s", n+1, plaintext.Clip(words[n], 64), after)
	}
}

func runRouting(ctx context.Context, env *environment, args []string) error {
	const usage = "set RULE... [--empty] | list"
	about := "set replaces the routing table with the RULEs, in order: the first that matches a payment naming no rail\n" +
		"chooses its rail at intake. A RULE is key=value pairs, comma-separated: rail (required; it must exist and be\n" +
		"active), and the matchers tenant, currency, min and max (the amount's bounds, included, in its currency) and\n" +
		"source (API, FILE or KAFKA); a matcher left out matches anything. Example:\n" +
		"  paydispatch routing set rail=SEPA,tenant=acme,currency=EUR,min=0,max=99999.99,source=FILE rail=DEFAULT\n" +
		"No RULE refuses every payment that names no rail: say so with --empty. list prints the table as set takes it.\n" +
		"A change is in the audit log; a running serve routes by it within 5 s."
	sub, err := subcommand(ctx, env, "routing", usage, about, args, "set", "list")
	switch sub {
	case "":
		return err
	case "list":
		return ledgerCommand(ctx, env, "routing list", "", about, args[1:], nil, exactly(0), nil,
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				rules, err := routing.ListRules(ctx, db.Pool)
				printRules(env.stdout, rules)
				return err
			})
	}
	var (
		empty bool
		rules []routing.Rule
	)
	extra := func(f *flag.FlagSet) {
		f.BoolVar(&empty, "empty", false, "set an empty table: every payment that names no rail is refused")
	}
	check := func(w []string) error {
		switch {
		case len(w) == 0 && !empty:
			return errors.New("want at least one RULE, e.g. rail=DEFAULT; an empty table refuses every payment that names no rail: say so with --empty")
		case len(w) > 0 && empty:
			return errors.New("--empty sets a table without rules: give no RULE with it")
		}
		rules = make([]routing.Rule, len(w))
		for i, s := range w {
			r, err := parseRule(s)
			if err != nil {
				return fmt.Errorf("RULE %d (%s): %v", i+1, plaintext.Clip(s, 64), err)
			}
			rules[i] = r
		}
		return refusal(routing.ValidateRules(rules), ruleWord(w, nil))
	}
	return ledgerCommand(ctx, env, "routing set", "RULE... [--empty]", about, args[1:], extra, func(int) bool { return true }, check,
		func(ctx context.Context, db *postgres.DB, w []string) error {
			var saved []routing.Rule
			err := changeAudited(ctx, env, db, "routing set", "routing table", func(tx pgx.Tx) (any, error) {
				var err error
				saved, err = routing.PutRules(ctx, tx, rules)
				return map[string]any{"rules": w}, err
			})
			if err != nil {
				return refusal(err, ruleWord(w, nil))
			}
			printRules(env.stdout, saved)
			return nil
		})
}
