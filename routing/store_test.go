package routing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/routing"
)

// TestStoreAndResolver: rails, the routing table and tenants' cut-off
// rules as stored, checked against the rest of the configuration, and
// the resolver's answers from them.
func TestStoreAndResolver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	lim := pacing.New(pacing.Config{Pool: pool})
	for _, name := range []string{"sepa", "hv"} {
		if _, err := lim.PutConfig(ctx, pacing.Limit{Name: name, MaxPerWindow: 100, Window: 4 * time.Second, Headroom: 100}); err != nil {
			t.Fatal(err)
		}
	}
	// A fresh database routes everything to DEFAULT.
	res := routing.NewResolver(pool, routing.ResolverConfig{})
	got, err := res.Route(ctx, routing.Payment{TenantID: "acme", Currency: "EUR", Amount: decimal.NewFromInt(5), Source: routing.SourceAPI})
	if err != nil || got.Name != routing.DefaultRail || got.Type != routing.TypeSEPAJSON || got.Cutoff != 0 {
		t.Fatalf("a fresh database: %+v, %v", got, err)
	}

	sepa := routing.Rail{Name: "SEPA", Type: routing.TypeSEPAJSON, PacingConfig: "sepa", TimeZone: "Europe/Berlin",
		Opens: 7 * time.Hour, Cutoff: 16 * time.Hour, Calendar: "TARGET2", Active: true}
	stored, err := routing.PutRail(ctx, pool, sepa)
	if err != nil || stored.Version != 1 || stored.Cutoff != 16*time.Hour || stored.Opens != 7*time.Hour || stored.Calendar != "TARGET2" {
		t.Fatalf("put SEPA: %+v, %v", stored, err)
	}
	sepa.Cutoff = 16*time.Hour + 30*time.Minute
	if stored, err = routing.PutRail(ctx, pool, sepa); err != nil || stored.Version != 2 || stored.Cutoff != sepa.Cutoff {
		t.Fatalf("change SEPA: %+v, %v", stored, err)
	}
	// Checked against the rest: the config and calendar exist, and no two
	// active rails pace by one config.
	for _, tc := range []struct {
		rail  routing.Rail
		field string
	}{
		{routing.Rail{Name: "X", Type: routing.TypeSEPAJSON, PacingConfig: "nope", Active: true}, "rateLimitConfig"},
		{routing.Rail{Name: "X", Type: routing.TypeSEPAJSON, Calendar: "NOPE", Active: true}, "calendar"},
		{routing.Rail{Name: "X", Type: routing.TypePACS008, PacingConfig: "sepa", Active: true}, "rateLimitConfig"},
		{routing.Rail{Name: "X", Type: routing.TypePACS008, Active: true}, "rateLimitConfig"}, // DEFAULT's
	} {
		var ve *field.Invalid
		if _, err := routing.PutRail(ctx, pool, tc.rail); !errors.As(err, &ve) || ve.Fields[0].Field != tc.field {
			t.Errorf("%+v: %v, want an error on %s", tc.rail, err, tc.field)
		}
	}
	hv := routing.Rail{Name: "HV", Type: routing.TypePACS008, PacingConfig: "hv", TimeZone: "Europe/Berlin", Opens: 7 * time.Hour, Cutoff: 17 * time.Hour, Active: true}
	if _, err := routing.PutRail(ctx, pool, hv); err != nil {
		t.Fatal(err)
	}
	// The routing table, in order, in one transaction with whatever else
	// the caller commits (here: rolled back, and nothing changed).
	hundredK := decimal.NewFromInt(100_000)
	rules := []routing.Rule{
		{Currency: "EUR", MinAmount: &hundredK, Rail: "HV"},
		{TenantID: "acme", Rail: "SEPA"},
		{Rail: routing.DefaultRail},
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := routing.PutRules(ctx, tx, rules); err != nil {
			return err
		}
		return errors.New("rolled back")
	})
	if before, _ := routing.ListRules(ctx, pool); err == nil || len(before) != 1 {
		t.Fatalf("rules after a rolled-back change: %+v", before)
	}
	if _, err := routing.PutRules(ctx, pool, rules); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRules(ctx, pool, []routing.Rule{{Rail: "GHOST"}}); !errors.Is(err, routing.ErrInvalid) {
		t.Errorf("a rule naming no rail: %v", err)
	}
	res.Flush()
	for _, tc := range []struct {
		p    routing.Payment
		want string
	}{
		{routing.Payment{TenantID: "beta", Currency: "EUR", Amount: decimal.NewFromInt(250_000)}, "HV"},
		{routing.Payment{TenantID: "acme", Currency: "EUR", Amount: decimal.NewFromInt(50)}, "SEPA"},
		{routing.Payment{TenantID: "beta", Currency: "CHF", Amount: decimal.NewFromInt(50)}, routing.DefaultRail},
		{routing.Payment{TenantID: "beta", Currency: "CHF", Amount: decimal.NewFromInt(50), Rail: "SEPA"}, "SEPA"},
	} {
		if got, err := res.Route(ctx, tc.p); err != nil || got.Name != tc.want {
			t.Errorf("%+v: %s, %v; want %s", tc.p, got.Name, err, tc.want)
		}
	}
	if _, err := res.Route(ctx, routing.Payment{TenantID: "beta", Currency: "EUR", Rail: "GHOST"}); !errors.Is(err, routing.ErrInvalid) {
		t.Errorf("a payment naming no rail: %v", err)
	}
	// A rail switched off: the rule routing to it refuses, not skips.
	hv.Active = false
	if _, err := routing.PutRail(ctx, pool, hv); err != nil {
		t.Fatal(err)
	}
	res.Flush()
	if _, err := res.Route(ctx, routing.Payment{TenantID: "beta", Currency: "EUR", Amount: decimal.NewFromInt(250_000)}); !errors.Is(err, routing.ErrNoRoute) {
		t.Errorf("routed to an inactive rail: %v", err)
	}
	// Cut-off rules: ROLL until set.
	if r, err := res.CutoffRule(ctx, "acme"); err != nil || r != routing.Roll {
		t.Errorf("acme's rule before any: %v, %v", r, err)
	}
	if _, err := routing.SetTenantCutoffRule(ctx, pool, "acme", routing.Hold); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.SetTenantCutoffRule(ctx, pool, "<img>", routing.Hold); !errors.Is(err, routing.ErrInvalid) {
		t.Errorf("a tenant id refused everywhere else: %v", err)
	}
	res.Flush()
	if r, err := res.CutoffRule(ctx, "acme"); err != nil || r != routing.Hold {
		t.Errorf("acme's rule: %v, %v", r, err)
	}
	cal, err := res.Calendar(ctx, sepa)
	if err != nil || cal == nil || cal.Name != "TARGET2" {
		t.Errorf("SEPA's calendar: %+v, %v", cal, err)
	}
}

// TestResolverFindsANewRail: a rail created after the snapshot was read
// is found at once (a miss reads the tables again, at most once a
// second), not after the snapshot's TTL.
func TestResolverFindsANewRail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	res := routing.NewResolver(pool, routing.ResolverConfig{TTL: time.Hour})
	if _, err := res.Rail(ctx, routing.DefaultRail); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRail(ctx, pool, routing.Rail{Name: "NEW", Type: routing.TypeSEPAJSON, PacingConfig: "own", Active: true}); err == nil {
		t.Fatal("a rail naming no config was taken")
	}
	if _, err := pacing.New(pacing.Config{Pool: pool}).PutConfig(ctx, pacing.Limit{Name: "own", MaxPerWindow: 1, Window: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRail(ctx, pool, routing.Rail{Name: "NEW", Type: routing.TypeSEPAJSON, PacingConfig: "own", Active: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past the read's own second
	if r, err := res.Rail(ctx, "NEW"); err != nil || r.Name != "NEW" {
		t.Fatalf("a new rail: %+v, %v", r, err)
	}
	if r, err := res.Route(ctx, routing.Payment{TenantID: "acme", Currency: "EUR", Rail: "NEW"}); err != nil || r.Name != "NEW" {
		t.Fatalf("a payment naming a new rail: %+v, %v", r, err)
	}
	if _, err := res.Rail(ctx, "NEVER"); !errors.Is(err, routing.ErrNotFound) {
		t.Fatalf("an unknown rail: %v", err)
	}
}
