package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// GetConfig reads an item type's dispatch configuration.
func (q *Queue) GetConfig(ctx context.Context, itemType string) (Config, error) {
	r, err := q.q.GetConfig(ctx, itemType)
	if errors.Is(err, pgx.ErrNoRows) {
		return Config{}, fmt.Errorf("queue: config for item type %q: %w", itemType, ErrNotFound)
	}
	if err != nil {
		return Config{}, fmt.Errorf("queue: read config %s: %w", itemType, err)
	}
	return configFromRow(r), nil
}

// ListConfigs reads every item type's dispatch configuration.
func (q *Queue) ListConfigs(ctx context.Context) ([]Config, error) {
	rows, err := q.q.ListConfigs(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: list configs: %w", err)
	}
	out := make([]Config, len(rows))
	for i, r := range rows {
		out[i] = configFromRow(r)
	}
	return out, nil
}

func configFromRow(r dbsqlc.ExecRateConfig) Config {
	return Config{
		ItemType:                 r.ItemType,
		Enabled:                  r.Enabled,
		BatchSize:                int(r.BatchSize),
		DispatchInterval:         time.Duration(r.DispatchIntervalSecs) * time.Second,
		JitterWindow:             time.Duration(r.JitterWindowMs) * time.Millisecond,
		PreStartBuffer:           time.Duration(r.PreStartBufferSecs) * time.Second,
		MaxDispatchRetries:       int(r.MaxDispatchRetries),
		StaleClaimThreshold:      time.Duration(r.StaleClaimThresholdSecs) * time.Second,
		MaxStaleRecoveryPerCycle: int(r.MaxStaleRecoveryPerCycle),
		ExecWorkflowType:         r.ExecWorkflowType,
		ExecTaskQueue:            r.ExecTaskQueue,
		CreatedAt:                r.CreatedAt,
		UpdatedAt:                r.UpdatedAt,
	}
}

// ClaimParams returns the claim parameters this configuration asks for.
func (c Config) ClaimParams() ClaimParams {
	return ClaimParams{
		ItemType:       c.ItemType,
		BatchSize:      c.BatchSize,
		PreStartBuffer: c.PreStartBuffer,
		MaxRetries:     c.MaxDispatchRetries,
	}
}
