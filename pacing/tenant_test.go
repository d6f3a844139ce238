package pacing_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
)

// TestTenantConfigs: a tenant's own config is set, changed, listed,
// returned for the tenants asked about, and removed; bad input — an
// unknown config among it — changes nothing.
func TestTenantConfigs(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, 10, time.Second, 5)
	ctx := context.Background()
	for _, name := range []string{"acme-rail", "slow", "globex-rail"} {
		if _, err := l.PutConfig(ctx, pacing.Limit{Name: name, MaxPerWindow: 5, Window: time.Second, Headroom: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Deactivate(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	const kind = "TASK"
	for _, tc := range []pacing.TenantConfig{
		{ItemType: kind, TenantID: "acme", ConfigName: "acme-rail"},
		{ItemType: kind, TenantID: "globex", ConfigName: "slow"}, // inactive: accepted, reported
		{ItemType: kind, TenantID: "globex", ConfigName: "globex-rail"},
	} {
		_, cfg, err := l.SetTenantConfig(ctx, tc)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Name != tc.ConfigName || cfg.Active != (tc.ConfigName != "slow") {
			t.Fatalf("%+v: returned config %+v", tc, cfg)
		}
	}
	bad := []struct {
		name string
		tc   pacing.TenantConfig
		want error
	}{
		{"default tenant", pacing.TenantConfig{ItemType: kind, TenantID: "*", ConfigName: "acme-rail"}, pacing.ErrInvalid},
		{"no config", pacing.TenantConfig{ItemType: kind, TenantID: "initech", ConfigName: " "}, pacing.ErrInvalid},
		{"no tenant", pacing.TenantConfig{ItemType: kind, ConfigName: "acme-rail"}, pacing.ErrInvalid},
		{"unknown config", pacing.TenantConfig{ItemType: kind, TenantID: "initech", ConfigName: "acme-rial"}, pacing.ErrConfigNotFound},
	}
	for _, tt := range bad {
		if _, _, err := l.SetTenantConfig(ctx, tt.tc); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	list, err := l.ListTenantConfigs(ctx, kind)
	if err != nil || len(list) != 2 || list[0].TenantID != "acme" || list[1].ConfigName != "globex-rail" {
		t.Fatalf("list: %+v %v", list, err)
	}
	byTenant, err := l.TenantConfigs(ctx, kind, []string{"acme", "initech", "acme"})
	if err != nil || !reflect.DeepEqual(byTenant, map[string]string{"acme": "acme-rail"}) {
		t.Fatalf("configs: %v %v", byTenant, err)
	}
	if got, err := l.TenantConfigs(ctx, "NOPE", []string{"acme"}); err != nil || len(got) != 0 {
		t.Fatalf("another item type: %v %v", got, err)
	}
	if err := l.DeleteTenantConfig(ctx, kind, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteTenantConfig(ctx, kind, "acme"); !errors.Is(err, pacing.ErrTenantConfigNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if byTenant, _ := l.TenantConfigs(ctx, kind, []string{"acme"}); len(byTenant) != 0 {
		t.Fatalf("deleted tenant still has %v", byTenant)
	}
}
