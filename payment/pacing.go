package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
)

// Pacer gives payments their execution slots: package pacing's Limiter.
type Pacer interface {
	Assign(ctx context.Context, configName, eventID string, requested time.Time) (pacing.Slot, error)
	AssignBulk(ctx context.Context, configName string, events []pacing.Event) ([]pacing.Slot, error)
	TenantConfigs(ctx context.Context, itemType string, tenants []string) (map[string]string, error)
	Release(ctx context.Context, db pacing.DBTX, configName string, eventIDs []string) ([]string, error)
	ReleaseEvents(ctx context.Context, db pacing.DBTX, eventIDs []string) ([]string, error)
	Reslot(ctx context.Context, tx pacing.DBTX, configName string, events []pacing.Event) ([]pacing.Slot, error)
	Project(ctx context.Context, configName string, demands ...pacing.Demand) ([]pacing.Projection, error)
}

// ExecSlot is when a payment is to execute, and whether pacing chose it:
// Config names the rate-limit config whose slot it is.
type ExecSlot struct {
	At     time.Time
	Paced  bool
	Config string `json:",omitempty"`
}

// pacingConfigs are the rate-limit configs pacing payments: PAYMENT's
// (exec_rate_config pacing_config, "" when payments are not paced) and
// the tenants' own (tenant_pacing) for the given tenants.
type pacingConfigs struct {
	def      string
	byTenant map[string]string
}

// forTenant is the config pacing the tenant's payments, "" for none.
func (c pacingConfigs) forTenant(tenant string) string {
	if name, ok := c.byTenant[tenant]; ok {
		return name
	}
	return c.def
}

func (a *InitActivities) pacingConfigs(ctx context.Context, tenants []string) (pacingConfigs, error) {
	if a.cfg.Pacer == nil {
		return pacingConfigs{}, nil
	}
	cfg, err := a.cfg.Queue.GetConfig(ctx, ItemType)
	if err != nil {
		return pacingConfigs{}, fmt.Errorf("payment: pacing config: %w", err)
	}
	byTenant, err := a.cfg.Pacer.TenantConfigs(ctx, ItemType, tenants)
	if err != nil {
		return pacingConfigs{}, fmt.Errorf("payment: tenants' pacing configs: %w", err)
	}
	return pacingConfigs{def: cfg.PacingConfig, byTenant: byTenant}, nil
}

// unpaced reports whether err means "the config names no usable
// rate-limit config": then payments run at their requested time with the
// dispatcher's jitter, and the operator is told.
func (a *InitActivities) unpaced(name string, err error) bool {
	if errors.Is(err, pacing.ErrConfigNotFound) || errors.Is(err, pacing.ErrConfigInactive) {
		a.log().Warn("payments are not paced: their rate-limit config is missing or inactive", "pacing_config", name, "error", err)
		return true
	}
	return false
}

// assignUnder runs assign under the config name and, when that is a
// tenant's config and missing or inactive, again under PAYMENT's. paced is
// false when neither could pace: the payments then run at their requested
// time.
func (a *InitActivities) assignUnder(cfgs pacingConfigs, name string, assign func(name string) error) (used string, paced bool, err error) {
	err = assign(name)
	if !a.unpaced(name, err) {
		return name, true, err
	}
	if name == cfgs.def || cfgs.def == "" {
		return name, false, nil
	}
	err = assign(cfgs.def)
	if a.unpaced(cfgs.def, err) {
		return cfgs.def, false, nil
	}
	return cfgs.def, true, err
}

func (a *InitActivities) log() *slog.Logger {
	if a.cfg.Log != nil {
		return a.cfg.Log
	}
	return slog.Default()
}

// execTimes is Phase A's "determine the execution time" for some
// payments: each one's slot under its pacing config — its tenant's own,
// else PAYMENT's — (the payment's key is the event id, so a retry gets the
// same slots back), or its requested time when payments are not paced.
// One call to the limiter per pacing config (one round trip per config,
// instant and 5,000 payments); a single payment goes through Assign, which
// coalesces concurrent single requests for one instant into shared calls.
// A tenant whose own config is missing or inactive falls back to
// PAYMENT's: one tenant's config switched off must not let its payments
// past the flood guard. EXHAUSTED is an error: the step is retried.
func (a *InitActivities) execTimes(ctx context.Context, keys []string, rs []Request) (map[string]ExecSlot, error) {
	out := make(map[string]ExecSlot, len(rs))
	tenants := make([]string, len(rs))
	for i, r := range rs {
		out[keys[i]] = ExecSlot{At: r.RequestedExecutionTime}
		tenants[i] = r.TenantID
	}
	if len(rs) == 0 {
		return out, nil
	}
	cfgs, err := a.pacingConfigs(ctx, tenants)
	if err != nil {
		return nil, err
	}
	groups := map[string][]pacing.Event{}
	var order []string // configs in order of first use: deterministic calls
	for i, r := range rs {
		name := cfgs.forTenant(r.TenantID)
		if name == "" {
			continue
		}
		if _, ok := groups[name]; !ok {
			order = append(order, name)
		}
		groups[name] = append(groups[name], pacing.Event{ID: keys[i], RequestedTime: r.RequestedExecutionTime})
	}
	for _, name := range order {
		events := groups[name]
		var slots []pacing.Slot
		used, paced, err := a.assignUnder(cfgs, name, func(cfg string) (err error) {
			if len(events) == 1 {
				var s pacing.Slot
				s, err = a.cfg.Pacer.Assign(ctx, cfg, events[0].ID, events[0].RequestedTime)
				slots = []pacing.Slot{s}
				return err
			}
			slots, err = a.cfg.Pacer.AssignBulk(ctx, cfg, events)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("payment: slots for %d payments under %s: %w", len(events), used, err)
		}
		if !paced {
			continue
		}
		for _, s := range slots {
			if s.Status == pacing.StatusExhausted {
				return nil, fmt.Errorf("payment %s: slot under %s: %w", s.EventID, used, pacing.ErrExhausted)
			}
			out[s.EventID] = ExecSlot{At: s.ScheduledTime, Paced: true, Config: used}
		}
	}
	return out, nil
}
