package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/paydispatch/paydispatch/internal/config"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

func runConfig(ctx context.Context, env *environment, args []string) error {
	usage := "get [ITEM_TYPE] | set ITEM_TYPE key=value... | tenants ITEM_TYPE | tenant ITEM_TYPE TENANT max_in_flight=N [tier=NAME] | tenant-delete ITEM_TYPE TENANT | tenant-pacing ITEM_TYPE TENANT CONFIG | tenant-pacing-delete ITEM_TYPE TENANT [flags]"
	fs := newFlagSet(env, "config", usage,
		"Reads or changes an item type's dispatch settings (exec_rate_config). The dispatcher reads them\n"+
			"every cycle, so a change takes effect within one cycle, with no restart. Keys:\n  "+
			strings.Join(queue.ConfigKeys(), ", ")+"\n"+
			"Example: paydispatch config set PAYMENT enabled=false   (the kill switch)\n\n"+
			"Tenant caps bound each tenant's items in flight (claimed or dispatched); TENANT '*' is the\n"+
			"default for tenants without their own. Example: paydispatch config tenant PAYMENT acme max_in_flight=5 tier=STANDARD\n\n"+
			"A tenant's pacing config (a rate-limit config) paces its items in place of the item type's\n"+
			"pacing_config, from the next payments Phase A initializes. Example: paydispatch config tenant-pacing PAYMENT acme acme-rail")
	var (
		db config.Database
		lg config.Log
	)
	set := config.NewSet(fs, env.getenv, append(config.DatabaseSettings(&db), config.LogSettings(&lg)...)...)
	// Flags may come before or after the positional words.
	var words, flags []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags = append(flags, args[i])
			if !strings.Contains(args[i], "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !isHelp(args[i]) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		words = append(words, args[i])
	}
	if err := parse(set, flags); err != nil {
		return err
	}
	if len(words) == 0 {
		return usageError{fmt.Errorf("want a subcommand: get, set, tenants, tenant, tenant-delete, tenant-pacing or tenant-pacing-delete")}
	}
	changes := map[string]string{}
	switch words[0] {
	case "get":
	case "set", "tenant":
		min := 3
		if words[0] == "tenant" {
			min = 4
		}
		if len(words) < min {
			return usageError{fmt.Errorf("want 'config set ITEM_TYPE key=value...' or 'config tenant ITEM_TYPE TENANT max_in_flight=N', e.g. 'config set PAYMENT batch_size=1000'")}
		}
		for _, kv := range words[min-1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usageError{fmt.Errorf("%q: want key=value, e.g. batch_size=1000", kv)}
			}
			changes[k] = v
		}
	case "tenants":
		if len(words) != 2 {
			return usageError{fmt.Errorf("want 'config tenants ITEM_TYPE'")}
		}
	case "tenant-delete", "tenant-pacing-delete":
		if len(words) != 3 {
			return usageError{fmt.Errorf("want 'config %s ITEM_TYPE TENANT'", words[0])}
		}
	case "tenant-pacing":
		if len(words) != 4 {
			return usageError{fmt.Errorf("want 'config tenant-pacing ITEM_TYPE TENANT CONFIG', e.g. 'config tenant-pacing PAYMENT acme acme-rail'")}
		}
	default:
		return usageError{fmt.Errorf("unknown subcommand %q: want get, set, tenants, tenant, tenant-delete, tenant-pacing or tenant-pacing-delete", words[0])}
	}

	store, err := openDatabase(ctx, db, newLogger(env, lg))
	if err != nil {
		return err
	}
	defer store.Close()
	if err := requireCurrentSchema(ctx, store); err != nil {
		return err
	}
	q := queue.New(store.Pool)
	switch words[0] {
	case "tenants":
		caps, err := q.ListTenantCapacity(ctx, words[1])
		if err != nil {
			return err
		}
		for _, c := range caps {
			fmt.Fprintf(env.stdout, "%s %s max_in_flight=%d tier=%s\n", c.ItemType, c.TenantID, c.MaxInFlight, c.Tier)
		}
		paced, err := q.ListTenantPacing(ctx, words[1])
		if err != nil {
			return err
		}
		for _, p := range paced {
			fmt.Fprintf(env.stdout, "%s %s pacing_config=%s\n", p.ItemType, p.TenantID, p.PacingConfig)
		}
		return nil
	case "tenant-delete":
		return q.DeleteTenantCapacity(ctx, words[1], words[2])
	case "tenant-pacing-delete":
		return q.DeleteTenantPacing(ctx, words[1], words[2])
	case "tenant-pacing":
		// A typo would leave the tenant on the item type's config, silently:
		// the config must exist (it may be inactive; Phase A then falls back).
		pc, err := pacing.New(store.Pool).GetConfig(ctx, words[3])
		if errors.Is(err, pacing.ErrConfigNotFound) {
			return usageError{fmt.Errorf("tenant-pacing: no rate-limit config %q: create it first (POST /admin/rate-limit/config)", words[3])}
		}
		if err != nil {
			return err
		}
		if !pc.Active {
			fmt.Fprintf(env.stderr, "warning: rate-limit config %q is inactive: the tenant's payments fall back to %s's pacing_config until it is active\n", words[3], words[1])
		}
		saved, err := q.SetTenantPacing(ctx, queue.TenantPacing{ItemType: words[1], TenantID: words[2], PacingConfig: words[3]})
		if errors.Is(err, queue.ErrInvalidConfig) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "%s %s pacing_config=%s\n", saved.ItemType, saved.TenantID, saved.PacingConfig)
		return nil
	case "tenant":
		c := queue.TenantCapacity{ItemType: words[1], TenantID: words[2], Tier: changes["tier"]}
		for k, v := range changes {
			switch k {
			case "max_in_flight":
				n, err := strconv.Atoi(v)
				if err != nil {
					return usageError{fmt.Errorf("max_in_flight=%s: want a whole number from 1 to 1000000", v)}
				}
				c.MaxInFlight = n
			case "tier":
			default:
				return usageError{fmt.Errorf("unknown setting %q: a tenant takes max_in_flight and tier", k)}
			}
		}
		saved, err := q.SetTenantCapacity(ctx, c)
		if errors.Is(err, queue.ErrInvalidConfig) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "%s %s max_in_flight=%d tier=%s\n", saved.ItemType, saved.TenantID, saved.MaxInFlight, saved.Tier)
		return nil
	}
	if words[0] == "set" {
		cfg, err := q.UpdateConfig(ctx, words[1], changes)
		if errors.Is(err, queue.ErrInvalidConfig) {
			return usageError{err}
		}
		if err != nil {
			return err
		}
		printConfig(env.stdout, cfg)
		return nil
	}
	configs, err := q.ListConfigs(ctx)
	if err != nil {
		return err
	}
	found := false
	for _, c := range configs {
		if len(words) > 1 && c.ItemType != words[1] {
			continue
		}
		found = true
		printConfig(env.stdout, c)
	}
	if !found && len(words) > 1 {
		return fmt.Errorf("no config for item type %q", words[1])
	}
	return nil
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

func printConfig(w io.Writer, c queue.Config) {
	fmt.Fprintf(w, "%s\n", c.ItemType)
	fmt.Fprintf(w, "  enabled=%t\n  batch_size=%d\n  dispatch_interval_secs=%d\n  jitter_window_ms=%d\n",
		c.Enabled, c.BatchSize, int(c.DispatchInterval.Seconds()), c.JitterWindow.Milliseconds())
	fmt.Fprintf(w, "  pre_start_buffer_secs=%d\n  max_dispatch_retries=%d\n  stale_claim_threshold_secs=%d\n  max_stale_recovery_per_cycle=%d\n",
		int(c.PreStartBuffer.Seconds()), c.MaxDispatchRetries, int(c.StaleClaimThreshold.Seconds()), c.MaxStaleRecoveryPerCycle)
	fmt.Fprintf(w, "  max_in_flight=%d\n  pacing_config=%s\n  paced_lead_ms=%d\n", c.MaxInFlight, c.PacingConfig, c.PacedLead.Milliseconds())
	fmt.Fprintf(w, "  exec_workflow_type=%s\n  exec_task_queue=%s\n  updated_at=%s\n",
		c.ExecWorkflowType, c.ExecTaskQueue, c.UpdatedAt.Format("2006-01-02T15:04:05Z07:00"))
}
