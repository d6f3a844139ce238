package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/cmd/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/outbox"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/postgres"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// configAction is one 'paydispatch config' subcommand.
type configAction struct {
	name, args string
	// nargs tells whether n words after the name are acceptable.
	nargs func(n int) bool
	// settings is where its key=value words start (0: none): they are
	// checked before any database is opened.
	settings int
	// run makes a change in tx, the transaction it commits in with its
	// audit entry (see changes), or reads from db (tx nil).
	run func(ctx context.Context, env *environment, db *postgres.DB, tx pgx.Tx, words []string) error
}

// changes reports whether the action, with these words, changes a
// setting (what the audit log records) rather than reading one.
func (a configAction) changes(words []string) bool {
	switch a.name {
	case "get", "tenants":
		return false
	case "delivery-order", "tenant-cutoff":
		return len(words) == 2
	}
	return true
}

func exactly(k int) func(int) bool { return func(n int) bool { return n == k } }
func atLeast(k int) func(int) bool { return func(n int) bool { return n >= k } }

var configActions = []configAction{
	{"get", "[ITEM_TYPE]", func(n int) bool { return n <= 1 }, 0, configGet},
	{"set", "ITEM_TYPE key=value...", atLeast(2), 1, configSet},
	{"tenants", "ITEM_TYPE", exactly(1), 0, configTenants},
	{"tenant", "ITEM_TYPE TENANT max_in_flight=N [tier=NAME]", atLeast(3), 2, configTenant},
	{"tenant-delete", "ITEM_TYPE TENANT", exactly(2), 0, func(ctx context.Context, _ *environment, _ *postgres.DB, tx pgx.Tx, w []string) error {
		return queue.New(tx).DeleteTenantCapacity(ctx, w[0], w[1])
	}},
	{"tenant-pacing", "ITEM_TYPE TENANT CONFIG", exactly(3), 0, configTenantPacing},
	{"tenant-pacing-delete", "ITEM_TYPE TENANT", exactly(2), 0, func(ctx context.Context, _ *environment, db *postgres.DB, tx pgx.Tx, w []string) error {
		return pacing.New(pacing.Config{Pool: db.Pool}).DeleteTenantConfigTx(ctx, tx, w[0], w[1])
	}},
	{"delivery-order", "TENANT [STRICT|THROUGHPUT]", func(n int) bool { return n == 1 || n == 2 }, 0, configDeliveryOrder},
	{"tenant-cutoff", "TENANT [ROLL|HOLD|REJECT]", func(n int) bool { return n == 1 || n == 2 }, 0, configTenantCutoff},
	{"delivery-order-delete", "TENANT", exactly(1), 0, func(ctx context.Context, _ *environment, _ *postgres.DB, tx pgx.Tx, w []string) error {
		if err := outbox.ResetOrdering(ctx, tx, w[0]); errors.Is(err, outbox.ErrNotFound) {
			return usageError{fmt.Errorf("delivery-order-delete: tenant %q has no delivery order of its own", w[0])}
		} else if err != nil {
			return err
		}
		return nil
	}},
}

// configDeliveryOrder shows or sets the order in which a tenant's rail
// instructions are delivered (the tenant is the outbox's participant).
func configDeliveryOrder(ctx context.Context, env *environment, db *postgres.DB, tx pgx.Tx, w []string) error {
	var read outbox.DBTX = db.Pool
	if len(w) == 2 {
		mode := outbox.Ordering(strings.ToUpper(w[1]))
		if mode != outbox.Strict && mode != outbox.Throughput {
			return usageError{fmt.Errorf("delivery-order %s %q: want STRICT (sequence N+1 waits for N) or THROUGHPUT", w[0], w[1])}
		}
		if err := outbox.SetOrdering(ctx, tx, w[0], mode); err != nil {
			return err
		}
		read = tx
	}
	mode, err := outbox.OrderingOf(ctx, read, w[0])
	if err == nil {
		fmt.Fprintf(env.stdout, "%s delivery_order=%s\n", w[0], mode)
	}
	return err
}

// configTenantCutoff shows or sets what becomes of a tenant's payments
// that cannot reach their rail before its cut-off.
func configTenantCutoff(ctx context.Context, env *environment, db *postgres.DB, tx pgx.Tx, w []string) error {
	if !field.ValidID(w[0]) {
		return usageError{fmt.Errorf("tenant-cutoff %q: want a tenant id: %s", plaintext.Clip(w[0], 64), field.IDRule)}
	}
	var read routing.DBTX = db.Pool
	if len(w) == 2 {
		rule, err := routing.ParseCutoffRule(w[1])
		if err != nil {
			return usageError{fmt.Errorf("tenant-cutoff %s %q: want ROLL (a slot from the next business day's opening), HOLD (held for an operator to release or cancel) or REJECT", w[0], plaintext.Clip(w[1], 16))}
		}
		if _, err := routing.SetTenantCutoffRule(ctx, tx, w[0], rule); err != nil {
			return err
		}
		read = tx
	}
	rules, err := routing.ListTenantCutoffRules(ctx, read)
	if err != nil {
		return err
	}
	rule := routing.DefaultCutoffRule
	for _, r := range rules {
		if r.TenantID == w[0] {
			rule = r.Rule
		}
	}
	fmt.Fprintf(env.stdout, "%s cutoff_rule=%s\n", w[0], rule)
	return nil
}

func runConfig(ctx context.Context, env *environment, args []string) error {
	var names, usage []string
	for _, a := range configActions {
		names = append(names, a.name)
		usage = append(usage, a.name+" "+a.args)
	}
	fs := newFlagSet(env, "config", strings.Join(usage, " | ")+" [flags]",
		"Reads or changes an item type's dispatch settings (exec_rate_config). The dispatcher reads them\n"+
			"every cycle, so a change takes effect within one cycle, with no restart. Keys:\n  "+
			strings.Join(queue.ConfigKeys(), ", ")+"\n"+
			"Example: paydispatch config set PAYMENT enabled=false   (the kill switch)\n\n"+
			"Tenant caps bound each tenant's items in flight (claimed or dispatched); TENANT '*' is the\n"+
			"default for tenants without their own. Example: paydispatch config tenant PAYMENT acme max_in_flight=5 tier=STANDARD\n\n"+
			"A tenant's pacing config (a rate-limit config) paces its items in place of the item type's\n"+
			"pacing_config, from the next payments initialized. Example: paydispatch config tenant-pacing PAYMENT acme acme-rail\n\n"+
			"A tenant's delivery order: THROUGHPUT (the default; '*' changes it) sends its rail instructions as\n"+
			"soon as due; STRICT sends sequence N+1 only after N is delivered or dead, from the next payments\n"+
			"booked. Example: paydispatch config delivery-order acme STRICT\n\n"+
			"A tenant's cut-off rule: what becomes of its payments that cannot reach their rail before the cut-off:\n"+
			"ROLL (the default: a slot from the next business day's opening), HOLD (HELD, for an operator to release\n"+
			"with 'paydispatch payments release' or cancel) or REJECT (REJECTED, CUTOFF_MISSED), from the next payments\n"+
			"Phase A paces. Example: paydispatch config tenant-cutoff acme HOLD")
	var (
		db config.Database
		lg config.Log
	)
	set := config.NewSet(fs, env.getenv, append(config.DatabaseSettings(&db), config.LogSettings(&lg)...)...)
	words, err := parseWords(set, args)
	if err != nil {
		return err
	}
	if len(words) == 0 {
		return usageError{fmt.Errorf("want a subcommand: %s", strings.Join(names, ", "))}
	}
	var action *configAction
	for i := range configActions {
		if configActions[i].name == words[0] {
			action = &configActions[i]
		}
	}
	if action == nil {
		return usageError{fmt.Errorf("unknown subcommand %q: want %s", words[0], strings.Join(names, ", "))}
	}
	if !action.nargs(len(words) - 1) {
		return usageError{fmt.Errorf("want 'config %s %s'", action.name, action.args)}
	}
	if action.settings > 0 {
		if _, err := keyValues(words[1+action.settings:]); err != nil {
			return err
		}
	}
	store, err := openCurrentDatabase(ctx, db, newLogger(env, lg))
	if err != nil {
		return err
	}
	defer store.Close()
	if !action.changes(words[1:]) {
		err = action.run(ctx, env, store, nil, words[1:])
	} else {
		// What the change prints is printed once it has committed.
		var out bytes.Buffer
		held := *env
		held.stdout = &out
		err = changeAudited(ctx, env, store, "config "+action.name, strings.Join(words[1:], " "), func(tx pgx.Tx) (any, error) {
			return map[string]any{"args": words[1:]}, action.run(ctx, &held, store, tx, words[1:])
		})
		if err == nil {
			_, err = env.stdout.Write(out.Bytes())
		}
	}
	if errors.Is(err, queue.ErrInvalidConfig) || errors.Is(err, pacing.ErrInvalid) {
		return usageError{err}
	}
	return err
}

// keyValues parses key=value words.
func keyValues(words []string) (map[string]string, error) {
	out := make(map[string]string, len(words))
	for _, kv := range words {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageError{fmt.Errorf("%q: want key=value, e.g. batch_size=1000", kv)}
		}
		out[k] = v
	}
	return out, nil
}

func configGet(ctx context.Context, env *environment, db *postgres.DB, _ pgx.Tx, w []string) error {
	q := queue.New(db.Pool)
	if len(w) == 1 {
		c, err := q.GetConfig(ctx, w[0])
		if errors.Is(err, queue.ErrNotFound) {
			return fmt.Errorf("no config for item type %q", w[0])
		}
		if err == nil {
			printConfig(env.stdout, c)
		}
		return err
	}
	configs, err := q.ListConfigs(ctx)
	for _, c := range configs {
		printConfig(env.stdout, c)
	}
	return err
}

func configSet(ctx context.Context, env *environment, _ *postgres.DB, tx pgx.Tx, w []string) error {
	changes, err := keyValues(w[1:])
	if err != nil {
		return err
	}
	c, err := queue.New(tx).UpdateConfig(ctx, w[0], changes)
	if err == nil {
		printConfig(env.stdout, c)
	}
	return err
}

func configTenants(ctx context.Context, env *environment, db *postgres.DB, _ pgx.Tx, w []string) error {
	caps, err := queue.New(db.Pool).ListTenantCapacity(ctx, w[0])
	if err != nil {
		return err
	}
	for _, c := range caps {
		fmt.Fprintf(env.stdout, "%s %s max_in_flight=%d tier=%s\n", c.ItemType, c.TenantID, c.MaxInFlight, c.Tier)
	}
	paced, err := pacing.New(pacing.Config{Pool: db.Pool}).ListTenantConfigs(ctx, w[0])
	for _, p := range paced {
		fmt.Fprintf(env.stdout, "%s %s pacing_config=%s\n", p.ItemType, p.TenantID, p.ConfigName)
	}
	return err
}

func configTenant(ctx context.Context, env *environment, _ *postgres.DB, tx pgx.Tx, w []string) error {
	kv, err := keyValues(w[2:])
	if err != nil {
		return err
	}
	c := queue.TenantCapacity{ItemType: w[0], TenantID: w[1], Tier: kv["tier"]}
	for k, v := range kv {
		switch k {
		case "max_in_flight":
			if c.MaxInFlight, err = strconv.Atoi(v); err != nil {
				return usageError{fmt.Errorf("max_in_flight=%s: want a whole number from 1 to 1000000", v)}
			}
		case "tier":
		default:
			return usageError{fmt.Errorf("unknown setting %q: a tenant takes max_in_flight and tier", k)}
		}
	}
	saved, err := queue.New(tx).SetTenantCapacity(ctx, c)
	if err == nil {
		fmt.Fprintf(env.stdout, "%s %s max_in_flight=%d tier=%s\n", saved.ItemType, saved.TenantID, saved.MaxInFlight, saved.Tier)
	}
	return err
}

func configTenantPacing(ctx context.Context, env *environment, db *postgres.DB, tx pgx.Tx, w []string) error {
	saved, cfg, err := pacing.New(pacing.Config{Pool: db.Pool}).SetTenantConfigTx(ctx, tx, pacing.TenantConfig{ItemType: w[0], TenantID: w[1], ConfigName: w[2]})
	if errors.Is(err, pacing.ErrConfigNotFound) {
		return usageError{fmt.Errorf("tenant-pacing: no rate-limit config %q: create it first (POST /admin/rate-limit/config)", w[2])}
	}
	if err != nil {
		return err
	}
	if !cfg.Active {
		fmt.Fprintf(env.stderr, "warning: rate-limit config %q is inactive: the tenant's items fall back to %s's pacing_config until it is active\n", cfg.Name, w[0])
	}
	fmt.Fprintf(env.stdout, "%s %s pacing_config=%s\n", saved.ItemType, saved.TenantID, saved.ConfigName)
	return nil
}

func printConfig(w io.Writer, c queue.Settings) {
	fmt.Fprintf(w, "%s\n", c.ItemType)
	fmt.Fprintf(w, "  enabled=%t\n  batch_size=%d\n  dispatch_interval_secs=%d\n  jitter_window_ms=%d\n",
		c.Enabled, c.BatchSize, int(c.DispatchInterval.Seconds()), c.JitterWindow.Milliseconds())
	fmt.Fprintf(w, "  pre_start_buffer_secs=%d\n  max_dispatch_retries=%d\n  stale_claim_threshold_secs=%d\n  max_stale_recovery_per_cycle=%d\n",
		int(c.PreStartBuffer.Seconds()), c.MaxDispatchRetries, int(c.StaleClaimThreshold.Seconds()), c.MaxStaleRecoveryPerCycle)
	fmt.Fprintf(w, "  max_in_flight=%d\n  pacing_config=%s\n  paced_lead_ms=%d\n", c.MaxInFlight, c.PacingConfig, c.PacedLead.Milliseconds())
	fmt.Fprintf(w, "  exec_mode=%s\n  exec_workflow_type=%s\n  exec_task_queue=%s\n  updated_at=%s\n",
		c.ExecMode, c.ExecWorkflowType, c.ExecTaskQueue, c.UpdatedAt.Format("2006-01-02T15:04:05Z07:00"))
}
