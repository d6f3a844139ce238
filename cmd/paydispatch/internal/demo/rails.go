package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/railsim"
)

// The demo's rails, on the rail simulator: the tenants' files go by
// railBulk, cobalt's file and every single API call by railUrgent, each
// paced by a rate-limit config of its own and closed by a cut-off inside
// its drain, so that the end of a file misses it.
const (
	railBulk     = "SEPA"
	railUrgent   = "URGENT"
	demoCalendar = "DEMO"
)

// cutoffRules are the tenants' cut-off rules: what meets a payment that
// cannot reach its rail before the cut-off. Files go in the order of
// fileOrder, so the end of acme's (on railBulk, after bravo's) rolls to
// the next business day and the end of cobalt's (on railUrgent) is held;
// the single calls, sent last on railUrgent, meet each tenant's own.
var cutoffRules = map[string]string{"acme": "ROLL", "bravo": "REJECT", "cobalt": "HOLD"}

// fileOrder is the order the tenants' files are sent in with rails: each
// after the one before has been placed, so that each file's projection
// sees the slots of those before it.
var fileOrder = []string{"bravo", "acme", "cobalt"}

// cutoffShare is how far into its drain each rail's cut-off falls: the
// share of its payments that make it.
var cutoffShare = map[string]float64{railBulk: 0.75, railUrgent: 0.8}

// railOf is the rail the routing rules the demo sets choose for p.
func railOf(p planned) string {
	if p.single || p.req.TenantID == "cobalt" {
		return railUrgent
	}
	return railBulk
}

// demoRail is one rail as the demo sets it up.
type demoRail struct {
	Name, Config string
	Rate         int // executions a second
	Payments     int // planned on it (the valid ones)
	// Cutoff is its cut-off on the business day: the instant, plus the
	// guard, plus its share of its drain, up to a whole second.
	Cutoff time.Time
}

// railSetup is the rails of a run: their zone (one where the run is
// around midday, so that the cut-offs fall on the instant's date), the
// business day, and the next one (the DEMO calendar closes the day
// between).
type railSetup struct {
	Zone        string
	Day, Closed string // YYYY-MM-DD in Zone
	Next        string
	Rails       []demoRail
}

// rail is the rail of that name.
func (s *railSetup) rail(name string) (demoRail, bool) {
	for _, r := range s.Rails {
		if r.Name == name {
			return r, true
		}
	}
	return demoRail{}, false
}

// planRails works out the rails for payments due at instant: rate split
// five to three between railBulk and railUrgent, and each one's cut-off.
func planRails(rate int, instant time.Time, ps []planned) (*railSetup, error) {
	zone := MiddayZone(instant)
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, err
	}
	urgent := max(1, rate*3/8)
	bulk := max(1, rate-urgent)
	n := map[string]int{}
	for _, p := range ps {
		if p.kind != kindInvalid {
			n[railOf(p)]++
		}
	}
	local := instant.In(loc)
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	s := &railSetup{Zone: zone, Day: day.Format(time.DateOnly), Closed: day.AddDate(0, 0, 1).Format(time.DateOnly),
		Next: day.AddDate(0, 0, 2).Format(time.DateOnly)}
	for _, r := range []struct {
		name, config string
		rate         int
	}{{railBulk, "demo-sepa", bulk}, {railUrgent, "demo-urgent", urgent}} {
		drain := time.Duration(float64(n[r.name]) / float64(r.rate) * cutoffShare[r.name] * float64(time.Second))
		cutoff := instant.Add(payment.DefaultCutoffGuard + drain)
		if t := cutoff.Truncate(time.Second); t.Before(cutoff) {
			cutoff = t.Add(time.Second)
		}
		s.Rails = append(s.Rails, demoRail{Name: r.name, Config: r.config, Rate: r.rate, Payments: n[r.name], Cutoff: cutoff})
	}
	return s, nil
}

// setUpRails sets the rails up over the API, as an operator would: a
// rate-limit config each, the DEMO calendar (tomorrow closed), the two
// rails on the simulator (simURL/rails/NAME), the routing rules and the
// tenants' cut-off rules; and gives the simulator the same cut-offs, so
// that it would refuse what arrived late.
func setUpRails(ctx context.Context, admin *client.Client, simURL string, s *railSetup) error {
	closed, err := time.Parse(time.DateOnly, s.Closed)
	if err != nil {
		return err
	}
	if err := client.Check(admin.PutCalendar(ctx, &client.CalendarRequest{Name: demoCalendar, Weekend: []string{}, ClosingDays: []time.Time{closed}},
		client.PutCalendarParams{})); err != nil {
		return fmt.Errorf("calendar %s: %w", demoCalendar, err)
	}
	loc, err := time.LoadLocation(s.Zone)
	if err != nil {
		return err
	}
	for _, r := range s.Rails {
		windows := r.Payments/r.Rate + 1
		if err := client.Check(admin.PutRateLimitConfig(ctx, &client.RateLimitConfigRequest{ConfigName: r.Config, MaxPerWindow: r.Rate, WindowSize: "PT1S",
			Headroom: client.NewOptInt(windows + 100)})); err != nil {
			return fmt.Errorf("rate-limit config %s: %w", r.Config, err)
		}
		cutoff := r.Cutoff.In(loc).Format(time.TimeOnly)
		if err := client.Check(admin.PutRail(ctx, &client.RailRequest{Name: r.Name, Type: client.RailRequestTypeSEPAJSON,
			Endpoint: client.NewOptString(strings.TrimRight(simURL, "/") + "/rails/" + r.Name), RateLimitConfig: client.NewOptString(r.Config),
			TimeZone: client.NewOptString(s.Zone), Cutoff: client.NewOptString(cutoff), Calendar: client.NewOptString(demoCalendar)},
			client.PutRailParams{})); err != nil {
			return fmt.Errorf("rail %s: %w", r.Name, err)
		}
		body, _ := json.Marshal(railsim.RailSettings{Cutoff: cutoff, TimeZone: s.Zone})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimRight(simURL, "/")+"/admin/rails/"+url.PathEscape(r.Name), bytes.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("the simulator's rail %s: %w", r.Name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the simulator's rail %s: %s", r.Name, resp.Status)
		}
	}
	rules := []client.RoutingRule{
		{Source: client.NewOptRoutingRuleSource(client.RoutingRuleSourceAPI), Rail: railUrgent},
		{TenantId: client.NewOptString("cobalt"), Rail: railUrgent},
		{Rail: railBulk},
	}
	if err := client.Check(admin.PutRoutingRules(ctx, &client.RoutingRules{Rules: rules}, client.PutRoutingRulesParams{})); err != nil {
		return fmt.Errorf("routing rules: %w", err)
	}
	tenants := make([]string, 0, len(cutoffRules))
	for t := range cutoffRules {
		tenants = append(tenants, t)
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		if err := client.Check(admin.SetCutoffRule(ctx, &client.CutoffRuleRequest{TenantId: t, Rule: client.CutoffRuleRequestRule(cutoffRules[t])},
			client.SetCutoffRuleParams{})); err != nil {
			return fmt.Errorf("%s's cut-off rule: %w", t, err)
		}
	}
	return nil
}

// waitPlaced waits until Phase A has stored n payments among ids of
// tenant (every tenant's when tenant is ""): what a projection made next
// must see.
func waitPlaced(ctx context.Context, pool *pgxpool.Pool, tenant string, ids []string, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var got int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE ($1 = '' OR tenant_id = $1) AND external_id = ANY($2)`,
			tenant, ids).Scan(&got); err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d payments placed by Phase A in 2 minutes", got, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fileProjection is what a file's 202 projected on one rail, and what
// Phase A did there.
type fileProjection struct {
	tenant, rail string
	projected    client.RailProjection
	placed       placedOnRail
}

// placedOnRail is where Phase A put a file's payments on one rail: on
// the business day (their slots from first to last), rolled, held,
// rejected at the cut-off, or refused (an unknown account).
type placedOnRail struct {
	day, rolled, held, rejected, refused int
	first, last                          *time.Time
}

func (p placedOnRail) past() int { return p.rolled + p.held + p.rejected }

// placements reads where Phase A put a tenant's file (ids), by rail,
// before anything was cancelled.
func placements(ctx context.Context, pool *pgxpool.Pool, day, tenant string, ids []string) (map[string]placedOnRail, error) {
	rows, err := pool.Query(ctx, `SELECT coalesce(rail, ''),
			count(*) FILTER (WHERE execution_date = $1::date AND status NOT IN ('HELD', 'REJECTED', 'CANCELLED')),
			count(*) FILTER (WHERE execution_date > $1::date AND status = 'SCHEDULED'),
			count(*) FILTER (WHERE status = 'HELD'),
			count(*) FILTER (WHERE status = 'REJECTED' AND status_reason LIKE 'CUTOFF_MISSED%'),
			count(*) FILTER (WHERE status = 'REJECTED' AND status_reason NOT LIKE 'CUTOFF_MISSED%'),
			min(scheduled_execution_time) FILTER (WHERE execution_date = $1::date AND status NOT IN ('HELD', 'REJECTED', 'CANCELLED')),
			max(scheduled_execution_time) FILTER (WHERE execution_date = $1::date AND status NOT IN ('HELD', 'REJECTED', 'CANCELLED'))
		FROM payments WHERE tenant_id = $2 AND external_id = ANY($3) GROUP BY 1`, day, tenant, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]placedOnRail{}
	for rows.Next() {
		var name string
		var p placedOnRail
		if err := rows.Scan(&name, &p.day, &p.rolled, &p.held, &p.rejected, &p.refused, &p.first, &p.last); err != nil {
			return nil, err
		}
		out[name] = p
	}
	return out, rows.Err()
}

// projectionSlack is how far a projection may be from what Phase A did:
// a few seconds at the rail's rate (Phase A refuses payments of unknown
// accounts, which the projection placed, on top).
const projectionSlack = 3 * time.Second

// projectionOff says how a file's projection on a rail differs from
// what Phase A did, beyond the slack ("" : within it).
func (f fileProjection) off(rate int) string {
	p, a := f.projected, f.placed
	slack := int(math.Ceil(float64(rate)*projectionSlack.Seconds())) + a.refused
	past := p.Rolled + p.Held + p.Rejected
	switch {
	case abs(p.BeforeCutoff-a.day) > slack:
		return fmt.Sprintf("%s on %s: %d projected before the cut-off, %d placed", f.tenant, f.rail, p.BeforeCutoff, a.day)
	case abs(past-a.past()) > slack:
		return fmt.Sprintf("%s on %s: %d projected past the cut-off, %d were", f.tenant, f.rail, past, a.past())
	case abs(p.Rolled-a.rolled) > slack || abs(p.Held-a.held) > slack || abs(p.Rejected-a.rejected) > slack:
		return fmt.Sprintf("%s on %s: projected %d rolled, %d held, %d rejected; were %d, %d, %d", f.tenant, f.rail,
			p.Rolled, p.Held, p.Rejected, a.rolled, a.held, a.rejected)
	case p.LastSlot.Set != (a.last != nil):
		return fmt.Sprintf("%s on %s: a last slot projected %t, placed %t", f.tenant, f.rail, p.LastSlot.Set, a.last != nil)
	case a.last != nil && (absDuration(p.LastSlot.Value.Sub(*a.last)) > projectionSlack || absDuration(p.FirstSlot.Value.Sub(*a.first)) > projectionSlack):
		return fmt.Sprintf("%s on %s: slots projected %s to %s, placed %s to %s", f.tenant, f.rail,
			clock(p.FirstSlot.Value), clock(p.LastSlot.Value), clock(*a.first), clock(*a.last))
	}
	return ""
}

func abs(n int) int { return max(n, -n) }

func absDuration(d time.Duration) time.Duration { return max(d, -d) }

// clock is t's time of day on this machine's clock, as the instant is
// shown.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

// railOutcome is what became of one rail's payments, and what reached
// the rail.
type railOutcome struct {
	name                          string
	rate                          int
	cutoff                        time.Time
	payments, delivered, returned int
	rolled, held, rejected        int
	received, late                int64     // at the simulator
	lastReceived                  time.Time // the last instruction's arrival
	afterCutoff                   int       // instructions received at or after the cut-off of their value date
	firstAfter                    string    // the first of them
	wrongRule, rolledElsewhere    int       // past the cut-off, against the tenant's rule; rolled to another day
	firstWrong                    string
	pastByTenant                  map[string]int
}

// railOutcomes reads each rail's payments, and checks the simulator's
// receipts against the cut-offs.
func railOutcomes(ctx context.Context, pool *pgxpool.Pool, s *railSetup, ledger railsim.LedgerView) ([]railOutcome, error) {
	loc, err := time.LoadLocation(s.Zone)
	if err != nil {
		return nil, err
	}
	var out []railOutcome
	for _, r := range s.Rails {
		o := railOutcome{name: r.Name, rate: r.Rate, cutoff: r.Cutoff, pastByTenant: map[string]int{}}
		rows, err := pool.Query(ctx, `SELECT tenant_id, external_id, status, coalesce(status_reason, ''), coalesce(execution_date::text, '')
			FROM payments WHERE rail = $1`, r.Name)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var tenant, id, status, reason, date string
			if err := rows.Scan(&tenant, &id, &status, &reason, &date); err != nil {
				rows.Close()
				return nil, err
			}
			o.payments++
			met := ""
			switch {
			case status == "DELIVERED":
				o.delivered++
			case status == "RETURNED":
				o.returned++
			case status == "HELD" && strings.HasPrefix(reason, payment.ReasonCutoff):
				o.held++
				met = "HOLD"
			case status == "REJECTED" && strings.HasPrefix(reason, payment.CodeCutoffMissed):
				o.rejected++
				met = "REJECT"
			case status == "SCHEDULED" && date > s.Day:
				o.rolled++
				met = "ROLL"
				if date != s.Next {
					o.rolledElsewhere++
					if o.firstWrong == "" {
						o.firstWrong = fmt.Sprintf("%s/%s rolled to %s, not %s", tenant, id, date, s.Next)
					}
				}
			}
			if met == "" {
				continue
			}
			o.pastByTenant[tenant]++
			if cutoffRules[tenant] != met {
				o.wrongRule++
				if o.firstWrong == "" {
					o.firstWrong = fmt.Sprintf("%s/%s met %s, its tenant's rule is %s", tenant, id, met, cutoffRules[tenant])
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		v := ledger.Rails[r.Name]
		o.received, o.late = v.Unique+v.Refused, v.Late
		tod := r.Cutoff.Sub(time.Date(r.Cutoff.In(loc).Year(), r.Cutoff.In(loc).Month(), r.Cutoff.In(loc).Day(), 0, 0, 0, 0, loc))
		for _, rc := range v.Instructions {
			if rc.ReceivedAt.After(o.lastReceived) {
				o.lastReceived = rc.ReceivedAt
			}
			d, err := time.ParseInLocation(time.DateOnly, rc.ValueDate, loc)
			if err != nil {
				o.afterCutoff++
				if o.firstAfter == "" {
					o.firstAfter = fmt.Sprintf("%s: value date %q", rc.Key, rc.ValueDate)
				}
				continue
			}
			if cut := d.Add(tod); !rc.ReceivedAt.Before(cut) {
				o.afterCutoff++
				if o.firstAfter == "" {
					o.firstAfter = fmt.Sprintf("%s received %s, the cut-off %s", rc.Key, rc.ReceivedAt.UTC().Format(time.RFC3339Nano), cut.UTC().Format(time.RFC3339))
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// totalLedger adds up the rails' ledgers (DEFAULT's among them). A
// participant's sequence is one over all its rails (each rail holds the
// part sent to it), so with the rails' receipts its gaps and reuses are
// counted over their union, not rail by rail.
func totalLedger(v railsim.LedgerView) railsim.LedgerView {
	if len(v.Rails) == 0 {
		return v
	}
	var t railsim.LedgerView
	receipts := false
	for _, r := range v.Rails {
		t.Received += r.Received
		t.Unique += r.Unique
		t.Duplicates += r.Duplicates
		t.Refused += r.Refused
		t.Gaps += r.Gaps
		t.SequenceReused += r.SequenceReused
		t.Late += r.Late
		receipts = receipts || len(r.Instructions) > 0
	}
	if receipts {
		t.Gaps, t.SequenceReused = unionSequences(v.Rails)
	}
	return t
}

// unionSequences counts, per participant over every rail's receipts, the
// numbers between 1 and its highest that no receipt took, and the
// numbers taken by more than one key.
func unionSequences(rails map[string]railsim.LedgerView) (gaps, reused int64) {
	keys := map[string]map[int64]string{} // participant → number → key
	highest := map[string]int64{}
	for _, r := range rails {
		for _, rc := range r.Instructions {
			taken := keys[rc.ParticipantID]
			if taken == nil {
				taken = map[int64]string{}
				keys[rc.ParticipantID] = taken
			}
			if k, ok := taken[rc.SequenceID]; ok && k != rc.Key {
				reused++
				continue
			}
			taken[rc.SequenceID] = rc.Key
			highest[rc.ParticipantID] = max(highest[rc.ParticipantID], rc.SequenceID)
		}
	}
	for p, taken := range keys {
		gaps += highest[p] - int64(len(taken))
	}
	return gaps, reused
}

// clockIn is t's time of day in zone.
func clockIn(t time.Time, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return clock(t) + " UTC"
	}
	return t.In(loc).Format("15:04:05")
}

// optClock is an optional time's time of day ("-": none).
func optClock(t client.OptDateTime) string {
	if !t.Set {
		return "-"
	}
	return clock(t.Value)
}
