package routing

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// ResolverConfig configures a Resolver.
type ResolverConfig struct {
	// TTL is how long the rails, rules and tenants' cut-off rules read
	// are trusted (default 5 s): a change made through another process
	// applies within it; one made through this resolver's Flush at once.
	TTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Resolver answers the hot path's questions (which rail, which cut-off
// rule, which calendar) from a snapshot of the routing tables, read
// again when older than its TTL: one read of three small tables every few
// seconds, however many payments come in.
type Resolver struct {
	db   DBTX
	cfg  ResolverConfig
	cals *calendar.Cache

	mu   sync.Mutex
	snap *snapshot
	// forced is when a miss last read the tables again before the TTL.
	forced time.Time
}

// missRefresh bounds how often a name the snapshot lacks reads the
// tables again: a rail created a moment ago is found at once, and a
// stream of unknown names costs a read a second, not one each.
const missRefresh = time.Second

type snapshot struct {
	at      time.Time
	rails   map[string]Rail
	rules   []Rule
	cutoffs map[string]CutoffRule
}

// NewResolver reads from db (a pool).
func NewResolver(db DBTX, cfg ResolverConfig) *Resolver {
	if cfg.TTL <= 0 {
		cfg.TTL = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Resolver{db: db, cfg: cfg, cals: calendar.NewCache(db, calendar.CacheConfig{TTL: cfg.TTL})}
}

// Flush forgets the snapshot and the calendars: the next question reads
// them again (after a change made through this process).
func (r *Resolver) Flush() {
	r.mu.Lock()
	r.snap = nil
	r.mu.Unlock()
	r.cals.Flush()
}

func (r *Resolver) current(ctx context.Context) (*snapshot, error) {
	r.mu.Lock()
	s := r.snap
	r.mu.Unlock()
	if s != nil && r.cfg.Now().Sub(s.at) < r.cfg.TTL {
		return s, nil
	}
	return r.read(ctx)
}

// onMiss is the snapshot read again when the one at hand lacks a name it
// was asked for, at most once a missRefresh; else the one at hand.
func (r *Resolver) onMiss(ctx context.Context, s *snapshot) (*snapshot, error) {
	r.mu.Lock()
	now := r.cfg.Now()
	if now.Sub(r.forced) < missRefresh || now.Sub(s.at) < missRefresh {
		r.mu.Unlock()
		return s, nil
	}
	r.forced = now
	r.mu.Unlock()
	return r.read(ctx)
}

// read reads the three tables into a new snapshot.
func (r *Resolver) read(ctx context.Context) (*snapshot, error) {
	rails, err := ListRails(ctx, r.db)
	if err != nil {
		return nil, err
	}
	rules, err := ListRules(ctx, r.db)
	if err != nil {
		return nil, err
	}
	cutoffs, err := ListTenantCutoffRules(ctx, r.db)
	if err != nil {
		return nil, err
	}
	s := &snapshot{at: r.cfg.Now(), rails: make(map[string]Rail, len(rails)), rules: rules, cutoffs: make(map[string]CutoffRule, len(cutoffs))}
	for _, x := range rails {
		s.rails[x.Name] = x
	}
	for _, c := range cutoffs {
		s.cutoffs[c.TenantID] = c.Rule
	}
	r.mu.Lock()
	r.snap = s
	r.mu.Unlock()
	return s, nil
}

// Route is the rail a payment leaves by: the active rail it names, or
// the rail of the first rule that matches it. A named rail that is
// missing or inactive is a *field.Invalid on "rail"; no rule matching,
// or the matching one's rail inactive, is ErrNoRoute.
func (r *Resolver) Route(ctx context.Context, p Payment) (Rail, error) {
	s, err := r.current(ctx)
	if err != nil {
		return Rail{}, err
	}
	if p.Rail != "" {
		rail, ok := s.rails[p.Rail]
		if !ok {
			if s, err = r.onMiss(ctx, s); err != nil {
				return Rail{}, err
			}
			rail, ok = s.rails[p.Rail]
		}
		switch {
		case !ok:
			return Rail{}, invalid(field.Error{Field: "rail", Detail: fmt.Sprintf("no rail %q", plaintext.Clip(p.Rail, 64))})
		case !rail.Active:
			return Rail{}, invalid(field.Error{Field: "rail", Detail: fmt.Sprintf("rail %s is inactive", rail.Name)})
		}
		return rail, nil
	}
	for _, rule := range s.rules {
		if !rule.Matches(p) {
			continue
		}
		rail, ok := s.rails[rule.Rail]
		if !ok || !rail.Active {
			return Rail{}, fmt.Errorf("routing: the rule for %s routes to rail %s, which is missing or inactive: %w", p.TenantID, rule.Rail, ErrNoRoute)
		}
		return rail, nil
	}
	return Rail{}, fmt.Errorf("routing: no rule routes a %s payment of %s from %s: %w", p.Currency, p.TenantID, p.Source, ErrNoRoute)
}

// Rail is the rail of that name as last read, active or not.
func (r *Resolver) Rail(ctx context.Context, name string) (Rail, error) {
	s, err := r.current(ctx)
	if err != nil {
		return Rail{}, err
	}
	rail, ok := s.rails[name]
	if !ok {
		if s, err = r.onMiss(ctx, s); err != nil {
			return Rail{}, err
		}
		if rail, ok = s.rails[name]; !ok {
			return Rail{}, fmt.Errorf("routing: rail %q: %w", name, ErrNotFound)
		}
	}
	return rail, nil
}

// Rails is every rail as last read.
func (r *Resolver) Rails(ctx context.Context) ([]Rail, error) {
	s, err := r.current(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Rail, 0, len(s.rails))
	for _, x := range s.rails {
		out = append(out, x)
	}
	return out, nil
}

// CutoffRule is the tenant's rule (DefaultCutoffRule when none was set).
func (r *Resolver) CutoffRule(ctx context.Context, tenant string) (CutoffRule, error) {
	s, err := r.current(ctx)
	if err != nil {
		return "", err
	}
	if rule, ok := s.cutoffs[tenant]; ok {
		return rule, nil
	}
	return DefaultCutoffRule, nil
}

// Calendar is the rail's calendar, nil when it has none (every day open).
func (r *Resolver) Calendar(ctx context.Context, rail Rail) (*calendar.Calendar, error) {
	if rail.Calendar == "" {
		return nil, nil
	}
	c, err := r.cals.Get(ctx, rail.Calendar)
	if err != nil {
		return nil, fmt.Errorf("routing: rail %s's calendar: %w", rail.Name, err)
	}
	return &c, nil
}

// DayFor is Rail.DayFor with the rail's calendar.
func (r *Resolver) DayFor(ctx context.Context, rail Rail, t time.Time) (Day, error) {
	cal, err := r.Calendar(ctx, rail)
	if err != nil {
		return Day{}, err
	}
	return rail.DayFor(t, cal)
}

// NextDay is Rail.NextDay with the rail's calendar.
func (r *Resolver) NextDay(ctx context.Context, rail Rail, d Day) (Day, error) {
	cal, err := r.Calendar(ctx, rail)
	if err != nil {
		return Day{}, err
	}
	return rail.NextDay(d, cal)
}
