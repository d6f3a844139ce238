package pacing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/pacing/internal/dbsqlc"
)

// TenantConfig gives a tenant's events of one kind (a dispatch queue item
// type) their own rate-limit config, in place of the kind's default.
type TenantConfig struct {
	ItemType   string
	TenantID   string
	ConfigName string
	UpdatedAt  time.Time
}

// ErrTenantConfigNotFound: the tenant has no config of its own.
var ErrTenantConfigNotFound = errors.New("pacing: tenant config not found")

// SetTenantConfig creates or changes a tenant's config, which must exist
// (an inactive one is accepted: while it is inactive the tenant's events
// fall back to the kind's default). It applies to the events assigned
// from then on; slots already given stay. The returned Limit is the
// named one, for the caller to warn about an inactive config.
func (l *Limiter) SetTenantConfig(ctx context.Context, t TenantConfig) (TenantConfig, Limit, error) {
	return setTenantConfig(ctx, l.q, t)
}

// SetTenantConfigTx is SetTenantConfig inside the caller's transaction:
// the change commits with the caller's other writes (an admin change's
// audit entry), or not at all.
func (l *Limiter) SetTenantConfigTx(ctx context.Context, tx pgx.Tx, t TenantConfig) (TenantConfig, Limit, error) {
	return setTenantConfig(ctx, dbsqlc.New(tx), t)
}

func setTenantConfig(ctx context.Context, q *dbsqlc.Queries, t TenantConfig) (TenantConfig, Limit, error) {
	switch {
	case t.ItemType == "" || t.TenantID == "":
		return TenantConfig{}, Limit{}, invalid("tenant", "an item type and a tenant are required")
	case t.TenantID == "*":
		return TenantConfig{}, Limit{}, invalid("tenant", "'*' is not a tenant: the default pacing config is the item type's pacing_config")
	case !field.ValidID(t.TenantID):
		return TenantConfig{}, Limit{}, invalid("tenant", "a tenant id: "+field.IDRule)
	case strings.TrimSpace(t.ConfigName) == "":
		return TenantConfig{}, Limit{}, invalid("config", "name a rate-limit config (to remove the tenant's own, delete it)")
	}
	cfg, err := getConfig(ctx, q, t.ConfigName)
	if err != nil {
		return TenantConfig{}, Limit{}, err
	}
	r, err := q.SetTenantConfig(ctx, dbsqlc.SetTenantConfigParams{ItemType: t.ItemType, TenantID: t.TenantID, ConfigName: t.ConfigName})
	if err != nil {
		return TenantConfig{}, Limit{}, fmt.Errorf("pacing: set tenant config: %w", err)
	}
	return TenantConfig{ItemType: r.ItemType, TenantID: r.TenantID, ConfigName: r.ConfigName, UpdatedAt: r.UpdatedAt}, cfg, nil
}

// DeleteTenantConfig removes a tenant's own config: the kind's default
// paces its events again.
func (l *Limiter) DeleteTenantConfig(ctx context.Context, itemType, tenantID string) error {
	return deleteTenantConfig(ctx, l.q, itemType, tenantID)
}

// DeleteTenantConfigTx is DeleteTenantConfig inside the caller's
// transaction.
func (l *Limiter) DeleteTenantConfigTx(ctx context.Context, tx pgx.Tx, itemType, tenantID string) error {
	return deleteTenantConfig(ctx, dbsqlc.New(tx), itemType, tenantID)
}

func deleteTenantConfig(ctx context.Context, q *dbsqlc.Queries, itemType, tenantID string) error {
	n, err := q.DeleteTenantConfig(ctx, dbsqlc.DeleteTenantConfigParams{ItemType: itemType, TenantID: tenantID})
	if err != nil {
		return fmt.Errorf("pacing: delete tenant config: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("pacing: no pacing config for tenant %q of %s: %w", tenantID, itemType, ErrTenantConfigNotFound)
	}
	return nil
}

// ListTenantConfigs lists the tenants of a kind that have their own config.
func (l *Limiter) ListTenantConfigs(ctx context.Context, itemType string) ([]TenantConfig, error) {
	rows, err := l.q.ListTenantConfigs(ctx, itemType)
	if err != nil {
		return nil, fmt.Errorf("pacing: list tenant configs: %w", err)
	}
	out := make([]TenantConfig, len(rows))
	for i, r := range rows {
		out[i] = TenantConfig{ItemType: r.ItemType, TenantID: r.TenantID, ConfigName: r.ConfigName, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// TenantConfigs returns, in one round trip, the config names of those of
// the given tenants that have their own.
func (l *Limiter) TenantConfigs(ctx context.Context, itemType string, tenants []string) (map[string]string, error) {
	ids := slices.Clone(tenants)
	slices.Sort(ids)
	rows, err := l.q.TenantConfigsFor(ctx, dbsqlc.TenantConfigsForParams{ItemType: itemType, TenantIds: slices.Compact(ids)})
	if err != nil {
		return nil, fmt.Errorf("pacing: tenant configs of %s: %w", itemType, err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.TenantID] = r.ConfigName
	}
	return out, nil
}
