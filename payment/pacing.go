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
}

// ExecSlot is when a payment is to execute, and whether pacing chose it.
type ExecSlot struct {
	At    time.Time
	Paced bool
}

// pacingConfig is the rate-limit config pacing payments (exec_rate_config
// pacing_config of PAYMENT), or "" when payments are not paced.
func (a *InitActivities) pacingConfig(ctx context.Context) (string, error) {
	if a.Pacer == nil {
		return "", nil
	}
	cfg, err := a.Queue.GetConfig(ctx, ItemType)
	if err != nil {
		return "", fmt.Errorf("payment: pacing config: %w", err)
	}
	return cfg.PacingConfig, nil
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

func (a *InitActivities) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// ExecTime is Phase A's "determine the execution time": the payment's slot
// under PAYMENT's pacing config (the payment id is the event id, so a
// retried init gets the same slot back), or the requested time when
// payments are not paced. EXHAUSTED is an error: the activity is retried.
func (a *InitActivities) ExecTime(ctx context.Context, r Request) (ExecSlot, error) {
	name, err := a.pacingConfig(ctx)
	if err != nil || name == "" {
		return ExecSlot{At: r.RequestedExecutionTime}, err
	}
	s, err := a.Pacer.Assign(ctx, name, r.PaymentID, r.RequestedExecutionTime)
	if a.unpaced(name, err) {
		return ExecSlot{At: r.RequestedExecutionTime}, nil
	}
	if err != nil {
		return ExecSlot{}, fmt.Errorf("payment %s: slot: %w", r.PaymentID, err)
	}
	return ExecSlot{At: s.ScheduledTime, Paced: true}, nil
}

// execTimes is ExecTime for a chunk, in one call to the limiter (one round
// trip per instant and 5,000 payments).
func (a *InitActivities) execTimes(ctx context.Context, rs []Request) (map[string]ExecSlot, error) {
	out := make(map[string]ExecSlot, len(rs))
	for _, r := range rs {
		out[r.PaymentID] = ExecSlot{At: r.RequestedExecutionTime}
	}
	name, err := a.pacingConfig(ctx)
	if err != nil || name == "" || len(rs) == 0 {
		return out, err
	}
	events := make([]pacing.Event, len(rs))
	for i, r := range rs {
		events[i] = pacing.Event{ID: r.PaymentID, RequestedTime: r.RequestedExecutionTime}
	}
	slots, err := a.Pacer.AssignBulk(ctx, name, events)
	if a.unpaced(name, err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("payment: slots for %d payments: %w", len(rs), err)
	}
	for _, s := range slots {
		if s.Status == pacing.StatusExhausted {
			return nil, fmt.Errorf("payment %s: slot: %w", s.EventID, pacing.ErrExhausted)
		}
		out[s.EventID] = ExecSlot{At: s.ScheduledTime, Paced: true}
	}
	return out, nil
}
