package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/queue/internal/dbsqlc"
)

// GetConfig reads an item type's dispatch configuration.
func (q *Queue) GetConfig(ctx context.Context, itemType string) (Settings, error) {
	r, err := q.q.GetConfig(ctx, itemType)
	if errors.Is(err, pgx.ErrNoRows) {
		return Settings{}, fmt.Errorf("queue: config for item type %q: %w", itemType, ErrNotFound)
	}
	if err != nil {
		return Settings{}, fmt.Errorf("queue: read config %s: %w", itemType, err)
	}
	return configFromRow(r), nil
}

// ListConfigs reads every item type's dispatch configuration.
func (q *Queue) ListConfigs(ctx context.Context) ([]Settings, error) {
	rows, err := q.q.ListConfigs(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: list configs: %w", err)
	}
	out := make([]Settings, len(rows))
	for i, r := range rows {
		out[i] = configFromRow(r)
	}
	return out, nil
}

func configFromRow(r dbsqlc.ExecRateConfig) Settings {
	return Settings{
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
		PacingConfig:             ptr.Deref(r.PacingConfig),
		PacedLead:                time.Duration(r.PacedLeadMs) * time.Millisecond,
		ExecMode:                 ExecMode(r.ExecMode),
		CreatedAt:                r.CreatedAt,
		UpdatedAt:                r.UpdatedAt,
	}
}

// ClaimParams returns the claim parameters this configuration asks for.
func (c Settings) ClaimParams() ClaimParams {
	return ClaimParams{
		ItemType:       c.ItemType,
		BatchSize:      c.BatchSize,
		PreStartBuffer: c.PreStartBuffer,
		MaxRetries:     c.MaxDispatchRetries,
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
	{"exec_mode", 0, 0, "mode"},
}

// ErrInvalidConfig: a setting or its value is not accepted; nothing changed.
// The error is a *field.Invalid naming the setting (errors.As), which
// errors.Is matches with ErrInvalidConfig.
var ErrInvalidConfig = errors.New("invalid setting")

// invalidSetting refuses the setting name (as in exec_rate_config).
func invalidSetting(name, detail string) error {
	return &field.Invalid{What: "invalid setting", Fields: []field.Error{{Field: name, Detail: detail}}, Kind: ErrInvalidConfig}
}

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
func (q *Queue) UpdateConfig(ctx context.Context, itemType string, changes map[string]string) (Settings, error) {
	if len(changes) == 0 {
		return Settings{}, fmt.Errorf("%w: no settings given: pass key=value, keys: %s", ErrInvalidConfig, strings.Join(ConfigKeys(), ", "))
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
			return Settings{}, invalidSetting(key, "unknown setting: use one of "+strings.Join(ConfigKeys(), ", "))
		}
		k := configKeys[i]
		switch k.kind {
		case "bool":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return Settings{}, invalidSetting(key, fmt.Sprintf("%q: want true or false", value))
			}
			p.Enabled = &b
		case "int":
			n, err := strconv.Atoi(value)
			if err != nil || n < k.lo || n > k.hi {
				return Settings{}, invalidSetting(key, fmt.Sprintf("%q: want a whole number from %d to %d", value, k.lo, k.hi))
			}
			v := int32(n)
			*ints[key] = &v
		case "mode":
			if m := ExecMode(value); m != ExecPerItem && m != ExecBatch {
				return Settings{}, invalidSetting(key, fmt.Sprintf("%q: want %s or %s", value, ExecPerItem, ExecBatch))
			}
			v := value
			p.ExecMode = &v
		case "text":
			if strings.TrimSpace(value) == "" && key != "pacing_config" { // pacing_config= turns pacing off
				return Settings{}, invalidSetting(key, "want a non-empty name")
			}
			v := value
			*texts[key] = &v
		}
	}
	r, err := q.q.UpdateConfig(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return Settings{}, fmt.Errorf("queue: no config for item type %q: %w", itemType, ErrNotFound)
	}
	if err != nil {
		return Settings{}, fmt.Errorf("queue: update config %s: %w", itemType, err)
	}
	return configFromRow(r), nil
}

// UpdateConfigTx is UpdateConfig inside the caller's transaction: the
// change commits with the caller's other writes (an admin change's audit
// entry), or not at all.
func (q *Queue) UpdateConfigTx(ctx context.Context, tx pgx.Tx, itemType string, changes map[string]string) (Settings, error) {
	return New(tx).UpdateConfig(ctx, itemType, changes)
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
	bad := field.Invalid{What: "invalid setting", Kind: ErrInvalidConfig}
	if c.ItemType == "" {
		bad.Add("item_type", "required")
	}
	if c.TenantID == "" {
		bad.Add("tenant_id", "required")
	}
	if c.MaxInFlight < 1 || c.MaxInFlight > 1_000_000 {
		bad.Add("max_in_flight", fmt.Sprintf("%d: want a whole number from 1 to 1000000", c.MaxInFlight))
	}
	if err := bad.Err(); err != nil {
		return TenantCapacity{}, err
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
	return TenantCapacity{ItemType: r.ItemType, TenantID: r.TenantID, MaxInFlight: int(r.MaxInFlight), Tier: ptr.Deref(r.Tier), UpdatedAt: r.UpdatedAt}, nil
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
		out[i] = TenantCapacity{ItemType: r.ItemType, TenantID: r.TenantID, MaxInFlight: int(r.MaxInFlight), Tier: ptr.Deref(r.Tier), UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// DefaultSettings is a new item type's settings with the table's
// defaults: what a domain starts from when it registers its type.
func DefaultSettings(itemType, execWorkflowType, execTaskQueue string) Settings {
	return Settings{
		ItemType: itemType, Enabled: true, BatchSize: 500, DispatchInterval: 5 * time.Second,
		JitterWindow: 4 * time.Second, PreStartBuffer: 30 * time.Second, MaxDispatchRetries: 3,
		StaleClaimThreshold: 2 * time.Minute, MaxStaleRecoveryPerCycle: 100,
		ExecWorkflowType: execWorkflowType, ExecTaskQueue: execTaskQueue, ExecMode: ExecPerItem,
	}
}

// RegisterItemType adds an item type with its configuration, once: a type
// already registered keeps its settings, whatever c says (an operator may
// have changed them). Each domain registers its own types (their workflow
// names and task queues are its constants); the queue seeds none.
func (q *Queue) RegisterItemType(ctx context.Context, c Settings) (created bool, err error) {
	bad := field.Invalid{What: "invalid setting", Kind: ErrInvalidConfig}
	for _, required := range []struct{ name, value string }{
		{"item_type", c.ItemType}, {"exec_workflow_type", c.ExecWorkflowType}, {"exec_task_queue", c.ExecTaskQueue},
	} {
		if required.value == "" {
			bad.Add(required.name, "required: an item type needs a name, an exec workflow type and a task queue")
		}
	}
	if err := bad.Err(); err != nil {
		return false, err
	}
	ms := func(d time.Duration) int32 { return int32(d.Milliseconds()) }
	secs := func(d time.Duration) int32 { return int32(d / time.Second) }
	n, err := q.q.RegisterItemType(ctx, dbsqlc.RegisterItemTypeParams{
		ItemType: c.ItemType, Enabled: c.Enabled, BatchSize: int32(c.BatchSize),
		DispatchIntervalSecs: secs(c.DispatchInterval), JitterWindowMs: ms(c.JitterWindow),
		PreStartBufferSecs: secs(c.PreStartBuffer), MaxDispatchRetries: int32(c.MaxDispatchRetries),
		StaleClaimThresholdSecs: secs(c.StaleClaimThreshold), MaxStaleRecoveryPerCycle: int32(c.MaxStaleRecoveryPerCycle),
		ExecWorkflowType: c.ExecWorkflowType, ExecTaskQueue: c.ExecTaskQueue, MaxInFlight: int32(c.MaxInFlight),
		PacingConfig: ptr.Optional(c.PacingConfig), PacedLeadMs: ms(c.PacedLead), ExecMode: string(cmp.Or(c.ExecMode, ExecPerItem)),
	})
	if err != nil {
		return false, fmt.Errorf("queue: register item type %s: %w", c.ItemType, err)
	}
	return n == 1, nil
}
