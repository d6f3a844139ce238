package payment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/routing"
)

// RailProjection is where the payments a call took in are projected to
// go on one rail, before any of them runs: from the rail's pacing
// schedule as it stands (the slots others took, this rail's rate), its
// business day and its cut-off.
type RailProjection struct {
	Rail string `json:"rail"`
	// Payments counts the payments on the rail; ExecutionDate is their
	// business day (the first, when they ask for several).
	Payments      int    `json:"payments"`
	ExecutionDate string `json:"executionDate"`
	// Cutoff is that day's cut-off (none: the rail has none).
	Cutoff *time.Time `json:"cutoff,omitempty"`
	// FirstSlot and LastSlot bound the slots of those that make it.
	FirstSlot *time.Time `json:"firstSlot,omitempty"`
	LastSlot  *time.Time `json:"lastSlot,omitempty"`
	// BeforeCutoff make it; Rolled, Held and Rejected do not, and meet
	// their tenants' rules (ROLL, HOLD, REJECT).
	BeforeCutoff int `json:"beforeCutoff"`
	Rolled       int `json:"rolled"`
	Held         int `json:"held"`
	Rejected     int `json:"rejected"`
}

// Project says, per rail, where valid, routed requests (Submit's,
// CheckBatchFrom's) are projected to go: one read of each rail's pacing
// windows, nothing taken. It is a projection: payments others send
// meanwhile, and a tenant's own rate-limit config, can move them. Nil
// without rails or a limiter.
func (s *Service) Project(ctx context.Context, reqs []Request) ([]RailProjection, error) {
	if s.cfg.Rails == nil || s.cfg.Pacer == nil || len(reqs) == 0 {
		return nil, nil
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return nil, err
	}
	type instant struct {
		day   string // the business day's date
		start int64  // Unix ms
	}
	type onRail struct {
		rail   routing.Rail
		groups map[instant][]int // request indexes by instant
		order  []instant
		days   map[string]routing.Day
		// at is the instant of each requested time, worked out once: a
		// file's payments share a handful.
		at map[time.Time]instant
	}
	rails := map[string]*onRail{}
	var names []string
	for i, r := range reqs {
		if r.Rail == "" {
			continue
		}
		or, ok := rails[r.Rail]
		if !ok {
			rail, err := s.cfg.Rails.Rail(ctx, r.Rail)
			if errors.Is(err, routing.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			or = &onRail{rail: rail, groups: map[instant][]int{}, days: map[string]routing.Day{}, at: map[time.Time]instant{}}
			rails[r.Rail], names = or, append(names, r.Rail)
		}
		in, ok := or.at[r.RequestedExecutionTime]
		if !ok {
			day, err := s.cfg.Rails.DayFor(ctx, or.rail, r.RequestedExecutionTime)
			if err != nil {
				return nil, err
			}
			in = instant{day: day.Date.String(), start: day.Start(r.RequestedExecutionTime).UnixMilli()}
			or.at[r.RequestedExecutionTime] = in
			if _, ok := or.groups[in]; !ok {
				or.order = append(or.order, in)
				or.days[in.day] = day
			}
		}
		or.groups[in] = append(or.groups[in], i)
	}
	slices.Sort(names)
	out := make([]RailProjection, 0, len(names))
	for _, name := range names {
		or := rails[name]
		slices.SortFunc(or.order, func(a, b instant) int { return cmp.Compare(a.start, b.start) })
		cfg := or.rail.PacingConfig
		if cfg == "" {
			cfg = def
		}
		p := RailProjection{Rail: name, ExecutionDate: or.order[0].day}
		if c := or.days[or.order[0].day].Cutoff; !c.IsZero() {
			c = c.UTC()
			p.Cutoff = &c
		}
		demands := make([]pacing.Demand, len(or.order))
		for j, in := range or.order {
			demands[j] = pacing.Demand{Requested: time.UnixMilli(in.start), N: len(or.groups[in]), Deadline: deadlineOf(or.days[in.day], s.cutoffGuard())}
		}
		var projs []pacing.Projection
		if cfg != "" {
			projs, err = s.cfg.Pacer.Project(ctx, cfg, demands...)
			if errors.Is(err, pacing.ErrConfigNotFound) || errors.Is(err, pacing.ErrConfigInactive) {
				projs, err = nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("payment: project rail %s: %w", name, err)
			}
		}
		for j, in := range or.order {
			idx := or.groups[in]
			p.Payments += len(idx)
			placed := len(idx)
			if projs != nil {
				pj := projs[j]
				placed = pj.Placed
				if pj.Placed > 0 {
					first, last := pj.First, pj.Last
					if p.FirstSlot == nil || first.Before(*p.FirstSlot) {
						p.FirstSlot = &first
					}
					if p.LastSlot == nil || last.After(*p.LastSlot) {
						p.LastSlot = &last
					}
				}
			} else if dl := deadlineOf(or.days[in.day], s.cutoffGuard()); !dl.IsZero() && in.start >= dl.UnixMilli() {
				placed = 0
			}
			p.BeforeCutoff += placed
			// Those past the cut-off, by their tenants' rules, in the
			// order they would be placed.
			for _, i := range idx[min(placed, len(idx)):] {
				rule, err := s.cfg.Rails.CutoffRule(ctx, reqs[i].TenantID)
				if err != nil {
					return nil, err
				}
				switch rule {
				case routing.Hold:
					p.Held++
				case routing.Reject:
					p.Rejected++
				default:
					p.Rolled++
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// deadlineOf is the latest slot of a business day: its cut-off less the
// guard (zero: none).
func deadlineOf(day routing.Day, guard time.Duration) time.Time {
	if day.Cutoff.IsZero() {
		return time.Time{}
	}
	return day.Cutoff.Add(-guard)
}

// defaultPacingConfig is PAYMENT's rate-limit config ("": none).
func (s *Service) defaultPacingConfig(ctx context.Context) (string, error) {
	if s.cfg.Queue == nil {
		return "", nil
	}
	cfg, err := s.cfg.Queue.GetConfig(ctx, ItemType)
	if err != nil {
		return "", fmt.Errorf("payment: pacing config: %w", err)
	}
	return cfg.PacingConfig, nil
}

func (s *Service) cutoffGuard() time.Duration {
	if s.cfg.CutoffGuard > 0 {
		return s.cfg.CutoffGuard
	}
	return DefaultCutoffGuard
}
