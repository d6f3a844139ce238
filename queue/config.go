package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
		MaxInFlight:              int(r.MaxInFlight),
		PacingConfig:             deref(r.PacingConfig),
		PacedLead:                time.Duration(r.PacedLeadMs) * time.Millisecond,
		CreatedAt:                r.CreatedAt,
		UpdatedAt:                r.UpdatedAt,
	}
}

// ClaimParams returns the claim parameters this configuration asks for:
// a fair claim, within the tenants' caps.
func (c Config) ClaimParams() ClaimParams {
	return ClaimParams{
		ItemType:       c.ItemType,
		BatchSize:      c.BatchSize,
		PreStartBuffer: c.PreStartBuffer,
		MaxRetries:     c.MaxDispatchRetries,
		Fair:           true,
		MaxInFlight:    c.MaxInFlight,
	}
}

// configKeys are the settings UpdateConfig takes, with the ranges the
// table's CHECK constraints enforce.
type configKey struct {
	name   string
	lo, hi int // for whole numbers
	kind   string
}

var configKeys = []configKey{
	{"enabled", 0, 0, "bool"},
	{"batch_size", 1, MaxBatchSize, "int"},
	{"dispatch_interval_secs", 1, 3600, "int"},
	{"jitter_window_ms", 0, 3_600_000, "int"},
	{"pre_start_buffer_secs", 0, 86_400, "int"},
	{"max_dispatch_retries", 1, 1000, "int"},
	{"stale_claim_threshold_secs", 1, 86_400, "int"},
	{"max_stale_recovery_per_cycle", 0, 100_000, "int"},
	{"max_in_flight", 0, 1_000_000, "int"},
	{"paced_lead_ms", 0, 60_000, "int"},
	{"exec_workflow_type", 0, 0, "text"},
	{"exec_task_queue", 0, 0, "text"},
	{"pacing_config", 0, 0, "text"},
}

// ErrInvalidConfig: a setting or its value is not accepted; nothing changed.
var ErrInvalidConfig = errors.New("invalid setting")

// ConfigKeys lists the settings UpdateConfig accepts.
func ConfigKeys() []string {
	out := make([]string, len(configKeys))
	for i, k := range configKeys {
		out[i] = k.name
	}
	return out
}

// UpdateConfig changes some of an item type's settings (key → value, keys
// as in exec_rate_config) in one statement; a bad key or value changes
// nothing and is reported naming the key and what it takes. The dispatcher
// picks the change up at its next cycle.
func (q *Queue) UpdateConfig(ctx context.Context, itemType string, changes map[string]string) (Config, error) {
	if len(changes) == 0 {
		return Config{}, fmt.Errorf("%w: no settings given: pass key=value, keys: %s", ErrInvalidConfig, strings.Join(ConfigKeys(), ", "))
	}
	p := dbsqlc.UpdateConfigParams{ItemType: itemType}
	ints := map[string]**int32{
		"batch_size": &p.BatchSize, "dispatch_interval_secs": &p.DispatchIntervalSecs, "jitter_window_ms": &p.JitterWindowMs,
		"pre_start_buffer_secs": &p.PreStartBufferSecs, "max_dispatch_retries": &p.MaxDispatchRetries,
		"stale_claim_threshold_secs": &p.StaleClaimThresholdSecs, "max_stale_recovery_per_cycle": &p.MaxStaleRecoveryPerCycle,
		"max_in_flight": &p.MaxInFlight, "paced_lead_ms": &p.PacedLeadMs,
	}
	texts := map[string]**string{"exec_workflow_type": &p.ExecWorkflowType, "exec_task_queue": &p.ExecTaskQueue, "pacing_config": &p.PacingConfig}
	for key, value := range changes {
		i := slices.IndexFunc(configKeys, func(k configKey) bool { return k.name == key })
		if i < 0 {
			return Config{}, fmt.Errorf("%w: unknown setting %q: use one of %s", ErrInvalidConfig, key, strings.Join(ConfigKeys(), ", "))
		}
		k := configKeys[i]
		switch k.kind {
		case "bool":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return Config{}, fmt.Errorf("%w: %s=%s: want true or false", ErrInvalidConfig, key, value)
			}
			p.Enabled = &b
		case "int":
			n, err := strconv.Atoi(value)
			if err != nil || n < k.lo || n > k.hi {
				return Config{}, fmt.Errorf("%w: %s=%s: want a whole number from %d to %d", ErrInvalidConfig, key, value, k.lo, k.hi)
			}
			v := int32(n)
			*ints[key] = &v
		case "text":
			if strings.TrimSpace(value) == "" && key != "pacing_config" { // pacing_config= turns pacing off
				return Config{}, fmt.Errorf("%w: %s=: want a non-empty name", ErrInvalidConfig, key)
			}
			v := value
			*texts[key] = &v
		}
	}
	r, err := q.q.UpdateConfig(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return Config{}, fmt.Errorf("queue: no config for item type %q: %w", itemType, ErrNotFound)
	}
	if err != nil {
		return Config{}, fmt.Errorf("queue: update config %s: %w", itemType, err)
	}
	return configFromRow(r), nil
}

// TenantCapacity caps a tenant's items in flight (CLAIMED or DISPATCHED)
// for an item type; TenantID "*" is the default for tenants without a row.
type TenantCapacity struct {
	ItemType    string
	TenantID    string
	MaxInFlight int
	Tier        string
	UpdatedAt   time.Time
}

// DefaultTenant is the tenant id of the default capacity.
const DefaultTenant = "*"

// SetTenantCapacity creates or changes a tenant's cap; the next claim
// applies it.
func (q *Queue) SetTenantCapacity(ctx context.Context, c TenantCapacity) (TenantCapacity, error) {
	if c.ItemType == "" || c.TenantID == "" {
		return TenantCapacity{}, fmt.Errorf("%w: item type and tenant are required", ErrInvalidConfig)
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > 1_000_000 {
		return TenantCapacity{}, fmt.Errorf("%w: max_in_flight=%d: want a whole number from 1 to 1000000", ErrInvalidConfig, c.MaxInFlight)
	}
	var tier *string
	if c.Tier != "" {
		tier = &c.Tier
	}
	r, err := q.q.SetTenantCapacity(ctx, dbsqlc.SetTenantCapacityParams{
		ItemType: c.ItemType, TenantID: c.TenantID, MaxInFlight: int32(c.MaxInFlight), Tier: tier,
	})
	if err != nil {
		return TenantCapacity{}, fmt.Errorf("queue: set tenant capacity: %w", err)
	}
	return TenantCapacity{ItemType: r.ItemType, TenantID: r.TenantID, MaxInFlight: int(r.MaxInFlight), Tier: deref(r.Tier), UpdatedAt: r.UpdatedAt}, nil
}

// DeleteTenantCapacity removes a tenant's cap (the default applies again).
func (q *Queue) DeleteTenantCapacity(ctx context.Context, itemType, tenantID string) error {
	n, err := q.q.DeleteTenantCapacity(ctx, dbsqlc.DeleteTenantCapacityParams{ItemType: itemType, TenantID: tenantID})
	if err != nil {
		return fmt.Errorf("queue: delete tenant capacity: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("queue: no capacity for tenant %q of %s: %w", tenantID, itemType, ErrNotFound)
	}
	return nil
}

// ListTenantCapacity lists an item type's tenant caps.
func (q *Queue) ListTenantCapacity(ctx context.Context, itemType string) ([]TenantCapacity, error) {
	rows, err := q.q.ListTenantCapacity(ctx, itemType)
	if err != nil {
		return nil, fmt.Errorf("queue: list tenant capacity: %w", err)
	}
	out := make([]TenantCapacity, len(rows))
	for i, r := range rows {
		out[i] = TenantCapacity{ItemType: r.ItemType, TenantID: r.TenantID, MaxInFlight: int(r.MaxInFlight), Tier: deref(r.Tier), UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// TenantPacing gives a tenant's items of an item type their own rate-limit
// config (package pacing), in place of the item type's PacingConfig.
type TenantPacing struct {
	ItemType     string
	TenantID     string
	PacingConfig string
	UpdatedAt    time.Time
}

// SetTenantPacing creates or changes a tenant's pacing config; Phase A
// applies it to the payments it initializes from then on (slots already
// given stay).
func (q *Queue) SetTenantPacing(ctx context.Context, p TenantPacing) (TenantPacing, error) {
	if p.ItemType == "" || p.TenantID == "" {
		return TenantPacing{}, fmt.Errorf("%w: item type and tenant are required", ErrInvalidConfig)
	}
	if p.TenantID == DefaultTenant {
		return TenantPacing{}, fmt.Errorf("%w: tenant %q: the default pacing config is the item type's pacing_config (config set %s pacing_config=NAME)", ErrInvalidConfig, p.TenantID, p.ItemType)
	}
	if strings.TrimSpace(p.PacingConfig) == "" {
		return TenantPacing{}, fmt.Errorf("%w: pacing_config is empty: name a rate-limit config (to remove the tenant's, use tenant-pacing-delete)", ErrInvalidConfig)
	}
	r, err := q.q.SetTenantPacing(ctx, dbsqlc.SetTenantPacingParams{ItemType: p.ItemType, TenantID: p.TenantID, PacingConfig: p.PacingConfig})
	if err != nil {
		return TenantPacing{}, fmt.Errorf("queue: set tenant pacing: %w", err)
	}
	return TenantPacing{ItemType: r.ItemType, TenantID: r.TenantID, PacingConfig: r.PacingConfig, UpdatedAt: r.UpdatedAt}, nil
}

// DeleteTenantPacing removes a tenant's pacing config (the item type's
// applies again).
func (q *Queue) DeleteTenantPacing(ctx context.Context, itemType, tenantID string) error {
	n, err := q.q.DeleteTenantPacing(ctx, dbsqlc.DeleteTenantPacingParams{ItemType: itemType, TenantID: tenantID})
	if err != nil {
		return fmt.Errorf("queue: delete tenant pacing: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("queue: no pacing config for tenant %q of %s: %w", tenantID, itemType, ErrNotFound)
	}
	return nil
}

// ListTenantPacing lists an item type's tenant pacing configs.
func (q *Queue) ListTenantPacing(ctx context.Context, itemType string) ([]TenantPacing, error) {
	rows, err := q.q.ListTenantPacing(ctx, itemType)
	if err != nil {
		return nil, fmt.Errorf("queue: list tenant pacing: %w", err)
	}
	out := make([]TenantPacing, len(rows))
	for i, r := range rows {
		out[i] = TenantPacing{ItemType: r.ItemType, TenantID: r.TenantID, PacingConfig: r.PacingConfig, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// PacingConfigs returns, in one round trip, the item type's pacing config
// ("" when not paced) and those of the given tenants that have their own.
func (q *Queue) PacingConfigs(ctx context.Context, itemType string, tenants []string) (def string, byTenant map[string]string, err error) {
	rows, err := q.q.PacingConfigsFor(ctx, dbsqlc.PacingConfigsForParams{ItemType: itemType, TenantIds: uniq(tenants)})
	if err != nil {
		return "", nil, fmt.Errorf("queue: pacing configs of %s: %w", itemType, err)
	}
	found := false
	for _, r := range rows {
		if r.TenantID == nil {
			def, found = deref(r.PacingConfig), true
			continue
		}
		if byTenant == nil {
			byTenant = map[string]string{}
		}
		byTenant[*r.TenantID] = deref(r.PacingConfig)
	}
	if !found {
		return "", nil, fmt.Errorf("queue: pacing configs: item type %s: %w", itemType, ErrNotFound)
	}
	return def, byTenant, nil
}
