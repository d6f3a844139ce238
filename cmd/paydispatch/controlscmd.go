package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/postgres"
)

// approvalRuleKeys are the keys of an approval RULE, in the order
// approval-rules list prints them, by the rule's field (its JSON name, as
// a refusal names it) each sets.
var approvalRuleKeys = []struct{ key, field string }{
	{"name", "name"}, {"approvals", "approvals"}, {"min", "minAmount"}, {"currency", "currency"}, {"source", "source"},
	{"debtor", "debtorAccount"}, {"rail", "rail"}, {"file-min-total", "fileMinTotal"}, {"file-min-count", "fileMinCount"},
}

// approvalRuleKey is the key of a RULE by the field it sets.
var approvalRuleKey = func() map[string]string {
	m := map[string]string{}
	for _, k := range approvalRuleKeys {
		m[k.field] = k.key
	}
	return m
}()

// parseApprovalRule reads an approval RULE: key=value pairs,
// comma-separated. It only reads; payment.ValidateApprovalRules judges.
func parseApprovalRule(s string) (payment.ApprovalRule, error) {
	var r payment.ApprovalRule
	fields, err := ruleFields(s)
	if err != nil {
		return r, err
	}
	for _, f := range fields {
		k, v := f[0], f[1]
		switch k {
		case "name":
			r.Name = v
		case "currency":
			r.Currency = strings.ToUpper(v)
		case "source":
			r.Source = strings.ToUpper(v)
		case "debtor":
			r.DebtorAccount = v
		case "rail":
			r.Rail = v
		case "min":
			r.MinAmount = v
		case "file-min-total":
			r.FileMinTotal = v
		case "approvals", "file-min-count":
			n, err := strconv.Atoi(v)
			if err != nil {
				return r, fmt.Errorf("%s %q: want a whole number, e.g. %s=2", k, plaintext.Clip(v, 16), k)
			}
			if k == "approvals" {
				r.Approvals = n
			} else {
				r.FileMinCount = n
			}
		default:
			keys := make([]string, len(approvalRuleKeys))
			for i, a := range approvalRuleKeys {
				keys[i] = a.key
			}
			return r, fmt.Errorf("unknown key %q: want %s", plaintext.Clip(k, 32), strings.Join(keys, ", "))
		}
	}
	return r, nil
}

// formatApprovalRule writes a rule as a RULE approval-rules set takes.
func formatApprovalRule(r payment.ApprovalRule) string {
	count := ""
	if r.FileMinCount > 0 {
		count = strconv.Itoa(r.FileMinCount)
	}
	parts := []string{"name=" + r.Name, "approvals=" + strconv.Itoa(r.Approvals)}
	for _, kv := range [][2]string{{"min", r.MinAmount}, {"currency", r.Currency}, {"source", r.Source}, {"debtor", r.DebtorAccount},
		{"rail", r.Rail}, {"file-min-total", r.FileMinTotal}, {"file-min-count", count}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

func printApprovalRules(w io.Writer, rules []payment.ApprovalRule) {
	for i, r := range rules {
		fmt.Fprintf(w, "%d %s\n", i+1, formatApprovalRule(r))
	}
}

// approvalRuleWord names, for a refusal of approval rules, the RULE and
// key (or flag) each field is of.
func approvalRuleWord(words []string) func(string) string {
	rule := ruleWord(words, approvalRuleKey)
	return func(f string) string {
		switch f {
		case "tenantId":
			return "--tenant"
		case "rules":
			return "RULE..."
		}
		return rule(f)
	}
}

// checkRulesTenant refuses a --tenant no tenant can have, before the database
// is opened.
func checkRulesTenant(tenant string) error {
	switch {
	case tenant == "":
		return errors.New("--tenant: required, the tenant whose approval rules they are, e.g. --tenant acme")
	case !field.ValidID(tenant):
		return fmt.Errorf("--tenant %q: want a tenant id: %s", plaintext.Clip(tenant, 64), field.IDRule)
	}
	return nil
}

func runApprovalRules(ctx context.Context, env *environment, args []string) error {
	const usage = "set --tenant T RULE... [--empty] | list --tenant T"
	about := "set replaces a tenant's approval rules (four eyes) with the RULEs, in order: the first that matches a\n" +
		"payment taken in decides how many approvals, from principals other than its submitter, it needs before it\n" +
		"takes a slot. A RULE is key=value pairs, comma-separated: name and approvals (1 to 10) required, and the\n" +
		"matchers min (the amount's least, in its currency), currency, source (API, FILE or KAFKA), debtor (the\n" +
		"debtor account), rail, file-min-total and file-min-count (a file's payments of the tenant, in total or in\n" +
		"number; files only); a matcher left out matches anything. Example:\n" +
		"  paydispatch approval-rules set --tenant acme name=big-usd,approvals=3,min=500.00,currency=USD name=big,approvals=2,min=10000\n" +
		"--empty clears the tenant's rules: no payment of its needs approvals. list prints them as set takes them.\n" +
		"A change is in the audit log and applies to the payments taken in from then. POST /admin/approval-rules\n" +
		"does the same over HTTP."
	sub, err := subcommand(ctx, env, "approval-rules", usage, about, args, "set", "list")
	if sub == "" {
		return err
	}
	var tenant string
	tenantFlag := func(f *flag.FlagSet) {
		f.StringVar(&tenant, "tenant", "", "the tenant whose approval rules they are (required)")
	}
	if sub == "list" {
		return ledgerCommand(ctx, env, "approval-rules list", "--tenant T", about, args[1:], tenantFlag, exactly(0),
			func([]string) error { return checkRulesTenant(tenant) },
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				rules, err := payment.NewStore(db.Pool).ApprovalRules(ctx, tenant)
				printApprovalRules(env.stdout, rules)
				return err
			})
	}
	var (
		empty bool
		rules []payment.ApprovalRule
	)
	extra := func(f *flag.FlagSet) {
		tenantFlag(f)
		f.BoolVar(&empty, "empty", false, "clear the tenant's rules: no payment of its needs approvals")
	}
	check := func(w []string) error {
		if err := checkRulesTenant(tenant); err != nil {
			return err
		}
		switch {
		case len(w) == 0 && !empty:
			return errors.New("want at least one RULE, e.g. name=big,approvals=2,min=10000; to clear the tenant's rules, say so with --empty")
		case len(w) > 0 && empty:
			return errors.New("--empty clears the tenant's rules: give no RULE with it")
		}
		rules = make([]payment.ApprovalRule, len(w))
		for i, s := range w {
			r, err := parseApprovalRule(s)
			if err != nil {
				return fmt.Errorf("RULE %d (%s): %v", i+1, plaintext.Clip(s, 64), err)
			}
			rules[i] = r
		}
		return refusal(payment.ValidateApprovalRules(rules), approvalRuleWord(w))
	}
	return ledgerCommand(ctx, env, "approval-rules set", "--tenant T RULE... [--empty]", about, args[1:], extra, func(int) bool { return true }, check,
		func(ctx context.Context, db *postgres.DB, w []string) error {
			var saved []payment.ApprovalRule
			err := changeAudited(ctx, env, db, "approval-rules set", tenant, func(tx pgx.Tx) (any, error) {
				store := payment.NewStore(tx)
				if err := store.PutApprovalRules(ctx, tx, tenant, rules); err != nil {
					return nil, err
				}
				var err error
				saved, err = store.ApprovalRules(ctx, tenant)
				if saved == nil {
					saved = []payment.ApprovalRule{}
				}
				return map[string]any{"rules": saved}, err
			})
			if err != nil {
				return refusal(err, approvalRuleWord(w))
			}
			printApprovalRules(env.stdout, saved)
			return nil
		})
}

// controlSettingsFlags are the flags of 'control-settings set' by the
// field each sets, as a refusal names it.
var controlSettingsFlags = map[string]string{
	"tenantId": "--tenant", "duplicateAction": "--duplicate-action", "duplicateWindowDays": "--duplicate-window-days",
	"screeningOnError": "--screening-on-error",
}

func controlSettingsFlag(field string) string {
	if f, ok := controlSettingsFlags[field]; ok {
		return f
	}
	return field
}

// printControlSettings prints a tenant's settings on one line, under
// the flags 'control-settings set' takes; the defaults are tenant '*'.
func printControlSettings(w io.Writer, s payment.ControlSettings) {
	tenant, updated := s.TenantID, ""
	if tenant == "" {
		tenant = "*"
	}
	if !s.UpdatedAt.IsZero() {
		updated = " updated-at=" + s.UpdatedAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%s duplicate-action=%s duplicate-window-days=%d screening-on-error=%s%s\n",
		tenant, s.DuplicateAction, s.DuplicateWindowDays, s.ScreeningOnError, updated)
}

func runControlSettings(ctx context.Context, env *environment, args []string) error {
	const usage = "set --tenant T [--duplicate-action A] [--duplicate-window-days N] [--screening-on-error R] | list"
	about := "set changes what Phase A's controls do with a tenant's payments, from the next ones it takes in: the\n" +
		"settings its flags name are set, the others kept (a tenant without settings starts from the defaults).\n" +
		"--duplicate-action: what a suspected duplicate gets, WARN (the default), HOLD, REJECT or OFF;\n" +
		"--duplicate-window-days: 1 to 90 (default 7); --screening-on-error: what a payment gets when the\n" +
		"screening service cannot answer, HOLD (the default), REJECT or ALLOW. list prints the defaults (tenant '*')\n" +
		"and each tenant's own, one a line. A change is in the audit log. POST /admin/control-settings does the\n" +
		"same over HTTP. Example: paydispatch control-settings set --tenant acme --duplicate-action HOLD"
	sub, err := subcommand(ctx, env, "control-settings", usage, about, args, "set", "list")
	if sub == "" {
		return err
	}
	if sub == "list" {
		return ledgerCommand(ctx, env, "control-settings list", "", about, args[1:], nil, exactly(0), nil,
			func(ctx context.Context, db *postgres.DB, _ []string) error {
				all, err := payment.ListControlSettings(ctx, db.Pool)
				if err != nil {
					return err
				}
				printControlSettings(env.stdout, payment.DefaultControlSettings)
				for _, s := range all {
					printControlSettings(env.stdout, s)
				}
				return nil
			})
	}
	var (
		fs                                  *flag.FlagSet
		tenant, action, onError, windowFlag string
		windowDays                          int
		change                              payment.ControlSettingsChange
	)
	extra := func(f *flag.FlagSet) {
		fs = f
		f.StringVar(&tenant, "tenant", "", "the tenant whose settings they are (required)")
		f.StringVar(&action, "duplicate-action", "", "what a suspected duplicate gets: WARN, HOLD, REJECT or OFF")
		f.StringVar(&windowFlag, "duplicate-window-days", "", "the days a payment is remembered to match duplicates against, 1 to 90")
		f.StringVar(&onError, "screening-on-error", "", "what a payment gets when screening cannot answer: HOLD, REJECT or ALLOW")
	}
	check := func([]string) error {
		change = payment.ControlSettingsChange{TenantID: tenant}
		// Read here, not by the flag package, so that a bad number is one
		// line naming the flag.
		var notNumber error
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "duplicate-action":
				change.DuplicateAction = &action
			case "duplicate-window-days":
				var err error
				if windowDays, err = strconv.Atoi(windowFlag); err != nil {
					notNumber = fmt.Errorf("--duplicate-window-days %q: want a whole number of days, e.g. 14", plaintext.Clip(windowFlag, 16))
				}
				change.DuplicateWindowDays = &windowDays
			case "screening-on-error":
				change.ScreeningOnError = &onError
			}
		})
		if notNumber != nil {
			return notNumber
		}
		if change.DuplicateAction == nil && change.DuplicateWindowDays == nil && change.ScreeningOnError == nil {
			return errors.New("want --duplicate-action, --duplicate-window-days or --screening-on-error: the settings to change (the others are kept)")
		}
		return refusal(change.Validate(), controlSettingsFlag)
	}
	return ledgerCommand(ctx, env, "control-settings set", usage[len("set "):strings.Index(usage, " | list")], about, args[1:], extra, exactly(0), check,
		func(ctx context.Context, db *postgres.DB, _ []string) error {
			var saved payment.ControlSettings
			err := changeAudited(ctx, env, db, "control-settings set", tenant, func(tx pgx.Tx) (any, error) {
				var err error
				saved, err = payment.SetControlSettings(ctx, tx, change)
				return map[string]any{"duplicateAction": saved.DuplicateAction, "duplicateWindowDays": saved.DuplicateWindowDays,
					"screeningOnError": saved.ScreeningOnError}, err
			})
			if err != nil {
				return refusal(err, controlSettingsFlag)
			}
			printControlSettings(env.stdout, saved)
			return nil
		})
}
