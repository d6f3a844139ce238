package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/routing/internal/dbsqlc"
)

// DBTX is what the store needs of a pool or a transaction: the admin API
// commits a change and its audit row together.
type DBTX interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// PutRail creates or changes a rail (a change bumps its version) and
// returns it as stored. Besides Validate, the rail's rate-limit config and
// calendar must exist, and no other active rail may pace by the same
// config: two rails' payments never share one limit.
func PutRail(ctx context.Context, db DBTX, r Rail) (Rail, error) {
	if err := r.Validate(); err != nil {
		return Rail{}, err
	}
	q := dbsqlc.New(db)
	var errs []field.Error
	if r.PacingConfig != "" {
		ok, err := q.PacingConfigExists(ctx, r.PacingConfig)
		if err != nil {
			return Rail{}, fmt.Errorf("routing: rail %s: its rate-limit config: %w", r.Name, err)
		}
		if !ok {
			errs = append(errs, field.Error{Field: "rateLimitConfig", Detail: "no rate-limit config of that name: create it first"})
		}
	}
	if r.Calendar != "" {
		if _, err := calendar.Get(ctx, db, r.Calendar); errors.Is(err, calendar.ErrNotFound) {
			errs = append(errs, field.Error{Field: "calendar", Detail: "no calendar of that name: create it first, or use TARGET2 or WEEKDAYS"})
		} else if err != nil {
			return Rail{}, fmt.Errorf("routing: rail %s: its calendar: %w", r.Name, err)
		}
	}
	if r.Active {
		others, err := q.RailsSharingConfig(ctx, dbsqlc.RailsSharingConfigParams{PacingConfig: r.PacingConfig, RailName: r.Name})
		if err != nil {
			return Rail{}, fmt.Errorf("routing: rail %s: rails sharing its config: %w", r.Name, err)
		}
		if len(others) > 0 {
			errs = append(errs, field.Error{Field: "rateLimitConfig",
				Detail: fmt.Sprintf("rail %s paces by it already: each rail needs a limit of its own", others[0])})
		}
	}
	if len(errs) > 0 {
		return Rail{}, invalid(errs...)
	}
	row, err := q.PutRail(ctx, dbsqlc.PutRailParams{
		RailName: r.Name, RailType: r.Type, Endpoint: r.Endpoint, PacingConfig: r.PacingConfig, TimeZone: timeZoneOrUTC(r.TimeZone),
		OpensAt: timeOfDay(r.Opens), CutoffAt: cutoffOrNull(r.Cutoff), CalendarName: r.Calendar, Active: r.Active,
	})
	if err != nil {
		return Rail{}, fmt.Errorf("routing: put rail %s: %w", r.Name, err)
	}
	return railOf(row), nil
}

// GetRail is the rail of that name (ErrNotFound when there is none).
func GetRail(ctx context.Context, db DBTX, name string) (Rail, error) {
	row, err := dbsqlc.New(db).GetRail(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Rail{}, fmt.Errorf("routing: rail %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Rail{}, fmt.Errorf("routing: rail %q: %w", name, err)
	}
	return railOf(row), nil
}

// ListRails is every rail, by name.
func ListRails(ctx context.Context, db DBTX) ([]Rail, error) {
	rows, err := dbsqlc.New(db).ListRails(ctx)
	if err != nil {
		return nil, fmt.Errorf("routing: list rails: %w", err)
	}
	out := make([]Rail, len(rows))
	for i, r := range rows {
		out[i] = railOf(r)
	}
	return out, nil
}

// PutRules replaces the routing table with rules, in their order, once
// each names a rail that exists and is active (an empty table refuses
// every payment: allowed, as an operator's stop).
func PutRules(ctx context.Context, db DBTX, rules []Rule) ([]Rule, error) {
	if err := ValidateRules(rules); err != nil {
		return nil, err
	}
	q := dbsqlc.New(db)
	var errs []field.Error
	for i, r := range rules {
		rail, err := GetRail(ctx, db, r.Rail)
		switch {
		case errors.Is(err, ErrNotFound):
			errs = append(errs, field.Error{Field: fmt.Sprintf("rules[%d].rail", i), Detail: "no rail of that name"})
		case err != nil:
			return nil, err
		case !rail.Active:
			errs = append(errs, field.Error{Field: fmt.Sprintf("rules[%d].rail", i), Detail: "the rail is inactive"})
		}
	}
	if len(errs) > 0 {
		return nil, invalid(errs...)
	}
	type row struct {
		Position  int     `json:"position"`
		TenantID  string  `json:"tenant_id"`
		Currency  string  `json:"currency"`
		MinAmount *string `json:"min_amount"`
		MaxAmount *string `json:"max_amount"`
		Source    string  `json:"source"`
		RailName  string  `json:"rail_name"`
	}
	rows := make([]row, len(rules))
	for i, r := range rules {
		rows[i] = row{Position: i + 1, TenantID: r.TenantID, Currency: r.Currency, Source: r.Source, RailName: r.Rail}
		if r.MinAmount != nil {
			s := r.MinAmount.String()
			rows[i].MinAmount = &s
		}
		if r.MaxAmount != nil {
			s := r.MaxAmount.String()
			rows[i].MaxAmount = &s
		}
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("routing: put rules: %w", err)
	}
	if err := q.DeleteRules(ctx); err != nil {
		return nil, fmt.Errorf("routing: put rules: %w", err)
	}
	if err := q.InsertRules(ctx, raw); err != nil {
		return nil, fmt.Errorf("routing: put rules: %w", err)
	}
	return ListRules(ctx, db)
}

// ListRules is the routing table, in order.
func ListRules(ctx context.Context, db DBTX) ([]Rule, error) {
	rows, err := dbsqlc.New(db).ListRules(ctx)
	if err != nil {
		return nil, fmt.Errorf("routing: list rules: %w", err)
	}
	out := make([]Rule, len(rows))
	for i, r := range rows {
		out[i] = Rule{TenantID: r.TenantID, Currency: r.Currency, MinAmount: r.MinAmount, MaxAmount: r.MaxAmount, Source: r.Source, Rail: r.RailName}
	}
	return out, nil
}

// TenantCutoffRule is a tenant's rule for payments that cannot make
// their cut-off.
type TenantCutoffRule struct {
	TenantID  string
	Rule      CutoffRule
	UpdatedAt time.Time
}

// SetTenantCutoffRule sets a tenant's rule.
func SetTenantCutoffRule(ctx context.Context, db DBTX, tenant string, rule CutoffRule) (TenantCutoffRule, error) {
	if !field.ValidID(tenant) {
		return TenantCutoffRule{}, invalid(field.Error{Field: "tenantId", Detail: "want a tenant id: 1 to 64 letters, digits, '-', '_' or '.'"})
	}
	if _, err := ParseCutoffRule(string(rule)); err != nil {
		return TenantCutoffRule{}, err
	}
	row, err := dbsqlc.New(db).SetTenantCutoffRule(ctx, dbsqlc.SetTenantCutoffRuleParams{TenantID: tenant, CutoffRule: string(rule)})
	if err != nil {
		return TenantCutoffRule{}, fmt.Errorf("routing: tenant %s's cut-off rule: %w", tenant, err)
	}
	return TenantCutoffRule{TenantID: row.TenantID, Rule: CutoffRule(row.CutoffRule), UpdatedAt: row.UpdatedAt}, nil
}

// ListTenantCutoffRules is every tenant's rule that was set (the others
// have DefaultCutoffRule).
func ListTenantCutoffRules(ctx context.Context, db DBTX) ([]TenantCutoffRule, error) {
	rows, err := dbsqlc.New(db).ListTenantCutoffRules(ctx)
	if err != nil {
		return nil, fmt.Errorf("routing: list cut-off rules: %w", err)
	}
	out := make([]TenantCutoffRule, len(rows))
	for i, r := range rows {
		out[i] = TenantCutoffRule{TenantID: r.TenantID, Rule: CutoffRule(r.CutoffRule), UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

func railOf(r dbsqlc.Rail) Rail {
	out := Rail{
		Name: r.RailName, Type: r.RailType, Endpoint: r.Endpoint, PacingConfig: r.PacingConfig, TimeZone: r.TimeZone,
		Opens: durationOf(r.OpensAt), Calendar: r.CalendarName, Active: r.Active, Version: int(r.Version),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.CutoffAt.Valid {
		out.Cutoff = durationOf(r.CutoffAt)
	}
	return out
}

func timeZoneOrUTC(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

func timeOfDay(d time.Duration) pgtype.Time {
	return pgtype.Time{Microseconds: d.Microseconds(), Valid: true}
}

func cutoffOrNull(d time.Duration) pgtype.Time {
	if d == 0 {
		return pgtype.Time{}
	}
	return timeOfDay(d)
}

func durationOf(t pgtype.Time) time.Duration {
	return time.Duration(t.Microseconds) * time.Microsecond
}
