package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/routing"
)

// fakeRails keeps rails, calendars, rules and cut-off rules in memory,
// checked as the stores check them (but for what needs the database:
// configs and calendars named are taken to exist). It starts as a fresh
// database does: rail DEFAULT and a rule routing everything to it.
type fakeRails struct {
	mu      sync.Mutex
	rails   map[string]routing.Rail
	cals    map[string]calendar.Calendar
	rules   []routing.Rule
	cutoffs map[string]routing.TenantCutoffRule
	flushed int
}

func newFakeRails() *fakeRails {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &fakeRails{
		rails:   map[string]routing.Rail{"DEFAULT": {Name: "DEFAULT", Type: routing.TypeSEPAJSON, TimeZone: "UTC", Active: true, Version: 1, CreatedAt: at, UpdatedAt: at}},
		cals:    map[string]calendar.Calendar{},
		rules:   []routing.Rule{{Rail: "DEFAULT"}},
		cutoffs: map[string]routing.TenantCutoffRule{},
	}
}

func (f *fakeRails) PutRail(_ context.Context, _ pgx.Tx, r routing.Rail) (routing.Rail, error) {
	if err := r.Validate(); err != nil {
		return routing.Rail{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	r.Version, r.CreatedAt, r.UpdatedAt = 1, now, now
	if old, ok := f.rails[r.Name]; ok {
		r.Version, r.CreatedAt = old.Version+1, old.CreatedAt
	}
	if r.TimeZone == "" {
		r.TimeZone = "UTC"
	}
	f.rails[r.Name] = r
	return r, nil
}

func (f *fakeRails) ListRails(context.Context) ([]routing.Rail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []routing.Rail
	for _, r := range f.rails {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b routing.Rail) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *fakeRails) RailStatus(_ context.Context, name string) (httpapi.RailStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rails[name]
	if !ok {
		return httpapi.RailStatus{}, routing.ErrNotFound
	}
	day, err := r.DayFor(time.Now(), nil)
	if err != nil {
		return httpapi.RailStatus{}, err
	}
	st := httpapi.RailStatus{RailJSON: httpapi.RailJSONOf(r), Backlog: payment.Backlog{Waiting: 0, Held: 0},
		BusinessDay: &httpapi.RailDay{Date: day.Date.String(), Opens: day.Opens.UTC()}}
	return st, nil
}

func (f *fakeRails) PutCalendar(_ context.Context, _ pgx.Tx, c calendar.Calendar) (calendar.Calendar, error) {
	if _, builtIn := calendar.BuiltIn(strings.ToUpper(c.Name)); builtIn {
		return calendar.Calendar{}, calendar.ErrBuiltIn
	}
	if err := c.Validate(); err != nil {
		return calendar.Calendar{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	c.CreatedAt, c.UpdatedAt = now, now
	if old, ok := f.cals[c.Name]; ok {
		c.CreatedAt = old.CreatedAt
	}
	f.cals[c.Name] = c
	return c, nil
}

func (f *fakeRails) Calendar(_ context.Context, name string) (calendar.Calendar, error) {
	if c, ok := calendar.BuiltIn(name); ok {
		return c, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.cals[name]
	if !ok {
		return calendar.Calendar{}, calendar.ErrNotFound
	}
	return c, nil
}

func (f *fakeRails) ListCalendars(context.Context) ([]calendar.Calendar, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := calendar.BuiltIns()
	for _, c := range f.cals {
		out = append(out, c)
	}
	return out, nil
}

func (f *fakeRails) PutRules(_ context.Context, _ pgx.Tx, rules []routing.Rule) ([]routing.Rule, error) {
	if err := routing.ValidateRules(rules); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = slices.Clone(rules)
	return rules, nil
}

func (f *fakeRails) ListRules(context.Context) ([]routing.Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rules), nil
}

func (f *fakeRails) SetCutoffRule(_ context.Context, _ pgx.Tx, tenant string, rule routing.CutoffRule) (routing.TenantCutoffRule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := routing.TenantCutoffRule{TenantID: tenant, Rule: rule, UpdatedAt: time.Now()}
	f.cutoffs[tenant] = c
	return c, nil
}

func (f *fakeRails) ListCutoffRules(context.Context) ([]routing.TenantCutoffRule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []routing.TenantCutoffRule
	for _, c := range f.cutoffs {
		out = append(out, c)
	}
	return out, nil
}

// SetControlSettings and ListControlSettings keep nothing: the routes'
// tests run on the real store (TestControlSettingsRoutes).
func (f *fakeRails) SetControlSettings(_ context.Context, _ pgx.Tx, c payment.ControlSettingsChange) (payment.ControlSettings, error) {
	return payment.ControlSettings{TenantID: c.TenantID}, nil
}

func (f *fakeRails) ListControlSettings(context.Context) ([]payment.ControlSettings, error) {
	return nil, nil
}

func (f *fakeRails) Flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed++
}

// Release and the projections make the fake payments a service on
// rails: every held payment of the tenant is released, and each payment
// is projected onto the rail it names (DEFAULT when none).
func (f *fakePayments) Release(ctx context.Context, filter payment.HeldFilter, record payment.Record) (payment.Released, error) {
	if filter.BatchID != "" && filter.BatchID != "b" {
		return payment.Released{}, payment.ErrNotFound
	}
	n := 0
	for _, r := range f.byID {
		if filter.TenantID == "" || r.TenantID == filter.TenantID {
			n++
		}
	}
	if record != nil && n > 0 {
		if err := record(ctx, nil, n); err != nil {
			return payment.Released{}, err
		}
	}
	at := time.Now().Add(time.Minute).UTC()
	return payment.Released{Released: n, FirstSlot: &at, LastSlot: &at}, nil
}

// RejectHeld rejects the tenant's payments named that the fake knows.
func (f *fakePayments) RejectHeld(ctx context.Context, tenantID string, ids []string, _, _ string, record payment.Record) (int, error) {
	n := 0
	for _, id := range ids {
		if r, ok := f.byID[id]; ok && r.TenantID == tenantID {
			n++
		}
	}
	if record != nil && n > 0 {
		if err := record(ctx, nil, n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// take is the fakes' intake, the real one's policy (payment.Service.Take)
// made small: check (nil: every payment passes), the rejected lines
// dropped (all of them when whole), the rest stored by id, a file's as
// batch "b", and projected.
func (f *fakePayments) take(ctx context.Context, in payment.Intake, check func([]payment.Request, []int) ([]payment.LineError, error)) (payment.Taken, error) {
	lines := in.Lines
	if lines == nil {
		lines = make([]int, len(in.Requests))
		for i := range lines {
			lines[i] = i + 1
		}
	}
	if in.Source == routing.SourceAPI {
		for i := range in.Requests {
			if in.Requests[i].PaymentID == "" {
				in.Requests[i].PaymentID = fmt.Sprintf("pay-%d", len(f.byID)+1)
			}
		}
	}
	rejections := slices.Clone(in.Rejected)
	if check != nil {
		checked, err := check(in.Requests, lines)
		if err != nil {
			return payment.Taken{}, fmt.Errorf("%w: %w", payment.ErrNotChecked, err)
		}
		rejections = append(rejections, checked...)
	}
	slices.SortStableFunc(rejections, func(a, b payment.LineError) int { return a.Line - b.Line })
	var merged []payment.LineError
	for _, le := range rejections {
		if n := len(merged); n > 0 && merged[n-1].Line == le.Line {
			merged[n-1].Fields = append(merged[n-1].Fields, le.Fields...)
			continue
		}
		merged = append(merged, le)
	}
	t := payment.Taken{Rejections: merged}
	bad := map[int]bool{}
	for _, le := range merged {
		bad[le.Line] = true
	}
	for i, r := range in.Requests {
		if !bad[lines[i]] && !(in.Whole && len(merged) > 0) {
			t.Started, t.Lines = append(t.Started, r), append(t.Lines, lines[i])
		}
	}
	if len(t.Started) == 0 {
		return t, nil
	}
	for _, r := range t.Started {
		f.byID[r.PaymentID] = r
	}
	t.Payments = len(t.Started)
	if in.Source != routing.SourceAPI {
		t.BatchID, t.Chunks = "b", 1
	}
	if in.Project {
		t.Projection, _ = f.Project(ctx, t.Started)
	}
	return t, nil
}

func (f *fakePayments) Project(_ context.Context, rs []payment.Request) ([]payment.RailProjection, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	at := rs[0].RequestedExecutionTime.UTC()
	rail := rs[0].Rail
	if rail == "" {
		rail = routing.DefaultRail
	}
	return []payment.RailProjection{{Rail: rail, Payments: len(rs), ExecutionDate: at.Format(time.DateOnly),
		FirstSlot: &at, LastSlot: &at, BeforeCutoff: len(rs)}}, nil
}
