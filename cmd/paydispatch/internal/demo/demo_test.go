package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/client"
	"github.com/paydispatch/paydispatch/railsim"
)

// goodOutcome is a run in which everything went as planned: 1,000
// payments, the planned failures, 10 refused by the rail.
func goodOutcome() *outcome {
	planned := map[kind]int{kindOrdinary: 900, kindFX: 50, kindNoFunds: 30, kindLimit: 12, kindNoFX: 10, kindBad: 5, kindInvalid: 3}
	delivered := 997 - 5 - 20 - 8 - 10 - 10
	d := &outcome{
		instant: time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC),
		sub:     submission{takenIn: 997, refused: 3, took: time.Second},
		planned: planned, stored: 997,
		final: sample{at: 30 * time.Second, payments: map[string]int{"DELIVERED": delivered, "FAILED": 38, "RETURNED": 10, "REJECTED": 5},
			queue: map[string]int{"COMPLETED": 992}},
		byCode: map[string]int{"INSUFFICIENT_FUNDS": 20, "LIMIT_EXCEEDED": 8, "FX_UNAVAILABLE": 10},
		capped: []cappedGroup{{account: accPoor, code: "INSUFFICIENT_FUNDS", fit: poorFit, n: 30, delivered: 10, failed: 20},
			{account: accLimited, day: "2026-11-23", code: "LIMIT_EXCEEDED", fit: limitFit, n: 12, delivered: 4, failed: 8}},
		rail:       railsim.LedgerView{Unique: int64(delivered), Refused: 10},
		outboxDead: 10, noFXRan: 10,
		tenants:   []tenantShare{{"acme", 480, 470}, {"bravo", 300, 290}, {"cobalt", 200, 195}},
		reasons:   []reason{{"FAILED", "INSUFFICIENT_FUNDS", 20}, {"RETURNED", "AC04", 10}},
		highFirst: []highOutcome{{rail: "", high: 9, before: 12, allowed: 480, last: new(time.Date(2026, 11, 23, 16, 0, 1, 0, time.UTC))}},
	}
	for i := range 30 {
		d.perSecond = append(d.perSecond, float64(30+i%3))
		d.latencies = append(d.latencies, float64(30+i))
		d.samples = append(d.samples, sample{at: time.Duration(i) * time.Second, payments: map[string]int{},
			queue: map[string]int{"READY": 900 - 30*i, "DISPATCHED": 30, "COMPLETED": 30 * i}})
	}
	return d
}

// goodRailsOutcome is goodOutcome on two rails: 60 of acme's payments
// rolled past SEPA's cut-off, 20 of cobalt's held and 5 of bravo's
// rejected at URGENT's; each file's projection as Phase A placed it,
// acme's within a second and its 5 unknown accounts.
func goodRailsOutcome() *outcome {
	d := goodOutcome()
	instant := d.instant
	d.rails = &railSetup{Zone: "Etc/GMT-5", Day: "2026-11-23", Closed: "2026-11-24", Next: "2026-11-25", Rails: []demoRail{
		{Name: railBulk, Config: "demo-sepa", Rate: 25, Payments: 780, Cutoff: instant.Add(25 * time.Second)},
		{Name: railUrgent, Config: "demo-urgent", Rate: 15, Payments: 217, Cutoff: instant.Add(13 * time.Second)}}}
	d.final.payments["REJECTED"] += 5
	d.cutoffRejected = 5
	d.final.payments["DELIVERED"] -= 85
	d.final.payments["HELD"] = 20
	d.rail.Unique -= 85
	d.final.rails = map[string]railSample{railBulk: {rolled: 60}, railUrgent: {held: 20, rejected: 5}}
	finish := instant.Add(22 * time.Second)
	d.samples[0].rails = map[string]railSample{railBulk: {waiting: 560, rolled: 60, finish: &finish}, railUrgent: {held: 20, rejected: 5}}
	d.rail.Rails = map[string]railsim.LedgerView{railBulk: {Unique: 700}, railUrgent: {Unique: d.rail.Unique - 700, Refused: d.rail.Refused}}
	d.railsOut = []railOutcome{
		{name: railBulk, rate: 25, cutoff: instant.Add(25 * time.Second), payments: 780, delivered: 700, rolled: 60, received: 700,
			lastReceived: instant.Add(22 * time.Second), pastByTenant: map[string]int{"acme": 60}},
		{name: railUrgent, rate: 15, cutoff: instant.Add(13 * time.Second), payments: 217, delivered: int(d.rail.Unique) - 700, returned: 10, held: 20, rejected: 5,
			received: d.rail.Unique - 700 + d.rail.Refused, lastReceived: instant.Add(10 * time.Second), pastByTenant: map[string]int{"cobalt": 20, "bravo": 5}},
	}
	at := func(s int) *time.Time { t := instant.Add(time.Duration(s) * time.Second); return &t }
	opt := func(t *time.Time) client.OptDateTime { return client.NewOptDateTime(*t) }
	d.projections = []fileProjection{
		{tenant: "bravo", rail: railBulk, projected: client.RailProjection{Rail: railBulk, Payments: 290, BeforeCutoff: 290, FirstSlot: opt(at(0)), LastSlot: opt(at(11))},
			placed: placedOnRail{day: 290, first: at(0), last: at(11)}},
		{tenant: "acme", rail: railBulk, projected: client.RailProjection{Rail: railBulk, Payments: 470, BeforeCutoff: 270, Rolled: 200, FirstSlot: opt(at(11)), LastSlot: opt(at(22))},
			placed: placedOnRail{day: 275, rolled: 190, refused: 5, first: at(11), last: at(23)}},
		{tenant: "cobalt", rail: railUrgent, projected: client.RailProjection{Rail: railUrgent, Payments: 200, BeforeCutoff: 180, Held: 20, FirstSlot: opt(at(0)), LastSlot: opt(at(10))},
			placed: placedOnRail{day: 180, held: 20, first: at(0), last: at(10)}},
	}
	return d
}

// TestVerifyFindsEachRailFault: with rails, the checks pass on a good
// run, and each fault of a rail fails exactly the check meant to see it;
// without rails there are no rail checks.
func TestVerifyFindsEachRailFault(t *testing.T) {
	t.Parallel()
	o := Options{Rate: 40, Rails: true}
	for _, tc := range []struct {
		name  string
		fault func(d *outcome)
		fails string
	}{
		{"good", func(*outcome) {}, ""},
		{"an instruction after its cut-off", func(d *outcome) { d.railsOut[0].afterCutoff = 1 }, "nothing reached a rail after its cut-off"},
		{"the simulator refused one as late", func(d *outcome) { d.railsOut[1].late = 1 }, "nothing reached a rail after its cut-off"},
		{"a rail that received nothing", func(d *outcome) { d.railsOut[1].received = 0 }, "nothing reached a rail after its cut-off"},
		{"a rail's receipts unread", func(d *outcome) { d.railsOut = d.railsOut[:1] }, "nothing reached a rail after its cut-off"},
		{"a payment against its tenant's rule", func(d *outcome) { d.railsOut[1].wrongRule = 1 }, "payments past the cut-off met their tenant's rule"},
		{"a roll to a closed day", func(d *outcome) { d.railsOut[0].rolledElsewhere = 1 }, "payments past the cut-off met their tenant's rule"},
		{"nothing missed a cut-off", func(d *outcome) {
			for i := range d.railsOut {
				d.railsOut[i].rolled, d.railsOut[i].held, d.railsOut[i].rejected = 0, 0, 0
			}
		}, "payments past the cut-off met their tenant's rule"},
		{"more placed before the cut-off than projected", func(d *outcome) { d.projections[2].placed.day += 46 }, "the projection at intake"},
		{"fewer past it than projected", func(d *outcome) { d.projections[1].placed.rolled -= 90 }, "the projection at intake"},
		{"held instead of rolled", func(d *outcome) { d.projections[1].placed.rolled, d.projections[1].placed.held = 0, 190 }, "the projection at intake"},
		{"the last slot 4 s off", func(d *outcome) { *d.projections[0].placed.last = d.projections[0].placed.last.Add(4 * time.Second) }, "the projection at intake"},
		{"no projection", func(d *outcome) { d.projections = nil }, "the projection at intake"},
		{"a held payment unsettled", func(d *outcome) { d.final.rails[railUrgent] = railSample{held: 19, rejected: 5} }, "every payment taken in is settled"},
		{"a cut-off rejection taken for a bad account", func(d *outcome) { d.cutoffRejected = 0 }, "bad lines refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := goodRailsOutcome()
			tc.fault(d)
			var failed []string
			for _, c := range verify(context.Background(), o, d) {
				if !c.OK {
					failed = append(failed, c.Name)
				}
			}
			switch {
			case tc.fails == "" && len(failed) > 0:
				t.Fatalf("a good run failed %v", failed)
			case tc.fails != "" && (len(failed) != 1 || !strings.HasPrefix(failed[0], tc.fails)):
				t.Fatalf("failed %v, want only %q", failed, tc.fails)
			}
		})
	}
	for _, c := range verify(context.Background(), Options{Rate: 40}, goodOutcome()) {
		if strings.Contains(c.Name, "cut-off") || strings.Contains(c.Name, "projection") {
			t.Errorf("a run without rails checks %q", c.Name)
		}
	}
}

// TestPlanRails: the rails share the rate five to three and close where
// their shares of their drains end (plus the guard, up to a second), in
// a zone where the instant is around midday, so the cut-offs fall on the
// instant's date there; tomorrow is closed and a roll goes to the day
// after. The default run's cut-offs are minutes after the instant.
func TestPlanRails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payments, rate int
		at             time.Time
		minCut, maxCut time.Duration // of the earlier and the later cut-off after the instant
	}{
		{10_000, 40, time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC), 90 * time.Second, 270 * time.Second},
		{300, 50, time.Date(2026, 11, 23, 23, 59, 30, 0, time.UTC), 3 * time.Second, 15 * time.Second},
		{1_000, 1, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), time.Minute, time.Hour},
	} {
		t.Run(fmt.Sprint(tc.payments, "@", tc.rate), func(t *testing.T) {
			t.Parallel()
			ps := plan(tc.payments, tc.at, 1)
			s, err := planRails(tc.rate, tc.at, ps)
			if err != nil {
				t.Fatal(err)
			}
			loc, err := time.LoadLocation(s.Zone)
			if err != nil {
				t.Fatal(err)
			}
			local := tc.at.In(loc)
			if local.Hour() != 12 || s.Day != local.Format(time.DateOnly) || s.Closed != local.AddDate(0, 0, 1).Format(time.DateOnly) ||
				s.Next != local.AddDate(0, 0, 2).Format(time.DateOnly) {
				t.Fatalf("zone %s (%v): day %s, closed %s, next %s", s.Zone, local, s.Day, s.Closed, s.Next)
			}
			bulk, _ := s.rail(railBulk)
			urgent, _ := s.rail(railUrgent)
			if bulk.Rate+urgent.Rate != max(tc.rate, 2) || urgent.Rate != max(1, tc.rate*3/8) || bulk.Payments+urgent.Payments != tc.payments-3 {
				t.Fatalf("rails %+v", s.Rails)
			}
			for _, r := range s.Rails {
				want := tc.at.Add(2*time.Second + time.Duration(float64(r.Payments)/float64(r.Rate)*cutoffShare[r.Name]*float64(time.Second)))
				if r.Cutoff.Before(want) || r.Cutoff.Sub(want) >= time.Second || r.Cutoff.Nanosecond() != 0 {
					t.Errorf("%s: cut-off %v, want %v up to a whole second", r.Name, r.Cutoff, want)
				}
				if c := r.Cutoff.In(loc); c.Format(time.DateOnly) != s.Day {
					t.Errorf("%s: cut-off %v is not on %s", r.Name, c, s.Day)
				}
			}
			first, last := bulk.Cutoff, urgent.Cutoff
			if last.Before(first) {
				first, last = last, first
			}
			if first.Sub(tc.at) < tc.minCut || last.Sub(tc.at) > tc.maxCut {
				t.Errorf("cut-offs %v and %v after the instant, want within [%v, %v]", first.Sub(tc.at), last.Sub(tc.at), tc.minCut, tc.maxCut)
			}
		})
	}
}

// TestMiddayZone: at every hour of the day, the zone chosen exists and
// shows it between 12:00 and 13:00.
func TestMiddayZone(t *testing.T) {
	t.Parallel()
	for h := range 24 {
		at := time.Date(2026, 3, 29, h, 41, 0, 0, time.UTC)
		zone := MiddayZone(at)
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatalf("%02d:41 UTC: %s: %v", h, zone, err)
		}
		if got := at.In(loc); got.Hour() != 12 || got.Minute() != 41 {
			t.Errorf("%02d:41 UTC: %s shows %v", h, zone, got)
		}
	}
}

// TestVerifyFindsEachFault: the checks pass on a good run, and each fault
// fails exactly the check meant to see it.
func TestVerifyFindsEachFault(t *testing.T) {
	t.Parallel()
	o := Options{Rate: 40}
	for _, tc := range []struct {
		name  string
		fault func(d *outcome)
		fails string // the failing check's name starts so; "" none
	}{
		{"good", func(*outcome) {}, ""},
		{"one stuck", func(d *outcome) { d.final.payments["DELIVERED"]--; d.rail.Unique-- }, "every payment taken in is settled"},
		{"a lost write", func(d *outcome) { d.stored-- }, "every payment taken in is settled"},
		{"delivered twice", func(d *outcome) { d.rail.Duplicates = 1 }, "every delivered payment reached the rail exactly once"},
		{"delivered but not sent", func(d *outcome) { d.rail.Unique-- }, "every delivered payment reached the rail exactly once"},
		{"a refusal not returned", func(d *outcome) { d.rail.Refused++ }, "every refusal by the rail returned its payment"},
		{"returned at the rail's cut-off, never sent", func(d *outcome) {
			d.final.payments["DELIVERED"] -= 2
			d.final.payments["RETURNED"] += 2
			d.rail.Unique -= 2
			d.outboxDead += 2
			d.cutoffReturned = 2
		}, ""},
		{"a refusal taken for a return at the cut-off", func(d *outcome) { d.cutoffReturned = 1 }, "every refusal by the rail returned its payment"},
		{"a gap", func(d *outcome) { d.rail.Gaps = 1 }, "no sequence gap"},
		{"a ledger violation", func(d *outcome) { d.violations = []string{"balance: ACME-EUR"} }, "paydispatch verify"},
		{"an item left in flight", func(d *outcome) { d.openItems = 1 }, "the queue holds no"},
		{"a window over its limit", func(d *outcome) { d.overLimit = 1 }, "pacing:"},
		{"early", func(d *outcome) { d.early = 1 }, "pacing:"},
		{"an unplanned failure", func(d *outcome) { d.unplanned = 1 }, "only the payments meant to fail"},
		{"a limit not enforced", func(d *outcome) { d.byCode["LIMIT_EXCEEDED"]-- }, "the saga's failures"},
		{"more delivered than the money allows", func(d *outcome) {
			d.capped[0].delivered, d.capped[0].failed = 11, 19
			d.byCode["INSUFFICIENT_FUNDS"] = 19
		}, "the saga's failures"},
		{"a refused payment's room not given", func(d *outcome) {
			d.capped[0].delivered, d.capped[0].returned, d.capped[0].failed = 8, 1, 21
			d.byCode["INSUFFICIENT_FUNDS"] = 21
		}, "the saga's failures"},
		{"a dead letter without reason", func(d *outcome) { d.deadNoReason = 1 }, "dead letters:"},
		{"a queue dead letter", func(d *outcome) { d.queueDead = 1 }, "dead letters:"},
		{"HIGH behind the others", func(d *outcome) { d.highFirst[0].before = 481 }, "HIGH payments sent last went first"},
		{"HIGH past the cut-off", func(d *outcome) { d.highFirst[0].past = 1 }, "HIGH payments sent last went first"},
		{"no HIGH payment", func(d *outcome) { d.highFirst = nil }, "HIGH payments sent last went first"},
		{"a bad account paid", func(d *outcome) {
			d.final.payments["REJECTED"]--
			d.final.payments["DELIVERED"]++
			d.rail.Unique++
		}, "bad lines refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := goodOutcome()
			tc.fault(d)
			var failed []string
			for _, c := range verify(context.Background(), o, d) {
				if !c.OK {
					failed = append(failed, c.Name)
				}
			}
			switch {
			case tc.fails == "" && len(failed) > 0:
				t.Fatalf("a good run failed %v", failed)
			case tc.fails != "" && (len(failed) == 0 || !strings.HasPrefix(failed[0], tc.fails)):
				t.Fatalf("failed %v, want %q", failed, tc.fails)
			}
		})
	}
}

// TestPlanIsTheMix: the plan holds the payments meant to fail, each
// tenant's share, and the same plan again for the same seed.
func TestPlanIsTheMix(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	ps := plan(10_000, at, 7)
	count := map[kind]int{}
	byTenant := map[string]int{}
	ids, fingerprints := map[string]bool{}, map[string]string{}
	for _, p := range ps {
		count[p.kind]++
		if p.kind != kindInvalid {
			if err := bankid.CheckIBAN(bankid.Electronic(p.req.Creditor.IBAN)); err != nil {
				t.Fatalf("%s: %v", p.req.PaymentID, err)
			}
		}
		if like, ok := fingerprints[fingerprint(p.req)]; ok {
			t.Fatalf("%s is a duplicate of %s", p.req.PaymentID, like)
		}
		fingerprints[fingerprint(p.req)] = p.req.PaymentID
		byTenant[p.req.TenantID]++
		if ids[p.req.PaymentID] {
			t.Fatalf("payment id %s twice", p.req.PaymentID)
		}
		ids[p.req.PaymentID] = true
		if !p.req.RequestedExecutionTime.Equal(at) {
			t.Fatalf("%s due at %v", p.req.PaymentID, p.req.RequestedExecutionTime)
		}
	}
	want := map[kind]int{kindFX: 500, kindNoFunds: 30, kindLimit: 12, kindNoFX: 10, kindBad: 50, kindInvalid: 3}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s: %d, want %d", kindNames[k], count[k], n)
		}
	}
	if byTenant["acme"] < 4500 || byTenant["bravo"] < 2500 || byTenant["cobalt"] < 1500 {
		t.Errorf("tenants %v", byTenant)
	}
	again := plan(10_000, at, 7)
	for i := range ps {
		if ps[i].req != again[i].req || ps[i].single != again[i].single {
			t.Fatalf("payment %d differs for the same seed", i)
		}
	}
}

// TestReportRendersInChromium: the report opens in a real browser
// (Debian's chromium, headless) and lays out its four charts.
func TestReportRendersInChromium(t *testing.T) {
	t.Parallel()
	browser := findChromium(t)
	d := goodOutcome()
	o := Options{Rate: 40}
	res := Result{Checks: verify(context.Background(), o, d)}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := writeReport(path, o, d, res); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), `<svg xmlns="http://www.w3.org/2000/svg" class="chart"`); n != 4 {
		t.Fatalf("%d charts in the report, want 4", n)
	}
	if got := RenderedCharts(t, browser, path); got != 4 {
		t.Fatalf("chromium laid out %d charts, want 4", got)
	}

	// With rails: a row per rail, and each file's projection against what
	// Phase A did, as well as the charts.
	d = goodRailsOutcome()
	o.Rails = true
	res = Result{Checks: verify(context.Background(), o, d)}
	if !res.Passed() {
		t.Fatalf("the good run on rails failed: %+v", res.Checks)
	}
	finish := *d.samples[0].rails[railBulk].finish
	path = filepath.Join(t.TempDir(), "report-rails.html")
	if err := writeReport(path, o, d, res); err != nil {
		t.Fatal(err)
	}
	if html, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<table id="rails" class="small">`, "<td>" + clock(finish) + "</td>", `<tr data-rail="SEPA">`, `<tr data-rail="URGENT">`, `<table id="projection">`,
		"nothing reached a rail after its cut-off", "the projection at intake was right", "ROLLED past its rail&#39;s cut-off to 2026-11-25"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the report on rails lacks %q", want)
		}
	}
	if n := strings.Count(string(html), "<td>placed by Phase A"); n != 3 {
		t.Errorf("%d files' placements in the report, want 3", n)
	}
	if got := RenderedCharts(t, browser, path); got != 4 {
		t.Fatalf("chromium laid out %d charts of the report on rails, want 4", got)
	}
}

var rendered = regexp.MustCompile(`data-charts-rendered="(\d+)"`)

// RenderedCharts opens the report in headless chromium and reads back how
// many charts its script found laid out with a size.
func RenderedCharts(t *testing.T, browser, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://"+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := rendered.FindSubmatch(out)
	if m == nil {
		t.Fatalf("chromium's DOM has no data-charts-rendered: the report's script did not run\n%s", out[:min(len(out), 2000)])
	}
	n := 0
	for _, c := range m[1] {
		n = n*10 + int(c-'0')
	}
	return n
}

// findChromium is Debian's chromium; without it the test is skipped on a
// developer's machine and fails in CI (.ci/run installs it).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: .ci/run installs Debian's chromium (apt-get install chromium)")
	}
	t.Skip("no chromium on this machine: apt-get install chromium")
	return ""
}

// TestCappedGroup: an account with room for some of its payments holds
// at most that many at the end, fills its room first, and gives the room
// a returned payment freed to one after it, no more.
func TestCappedGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                           string
		n, delivered, returned, failed int
		ok                             bool
	}{
		{"room filled, the rest failed", 30, 10, 0, 20, true},
		{"a return gave its room to a later payment", 30, 10, 1, 19, true},
		{"a return came after the others had run", 30, 9, 1, 20, true},
		{"more held than the room", 30, 11, 0, 19, false},
		{"room left while payments failed", 30, 9, 0, 21, false},
		{"more succeeded than returns freed", 30, 10, 1, 18, false},
		{"fewer payments than room", 3, 3, 0, 0, true},
		{"fewer payments than room, one failed", 3, 2, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := cappedGroup{fit: 10, n: tc.n, delivered: tc.delivered, returned: tc.returned, failed: tc.failed}
			if g.ok() != tc.ok {
				t.Errorf("ok() = %v, want %v", g.ok(), tc.ok)
			}
		})
	}
}

// TestLiveTableShowsTheRails: the live table draws a line per rail under
// its three (what was sent, waits, was rolled, held or rejected, the
// cut-off, the projected finish and the margin, marked when past the
// cut-off), and the next drawing moves up over all of them.
func TestLiveTableShowsTheRails(t *testing.T) {
	t.Parallel()
	d := goodRailsOutcome()
	var out strings.Builder
	tr := newTracker(Options{Out: &out, Live: true, Rate: 40}, d.instant, 997, nil, d.rails)
	finish := d.rails.Rails[1].Cutoff.Add(4 * time.Second)
	margin := int64(-4)
	s := sample{at: 3 * time.Second, payments: map[string]int{"DELIVERED": 100}, queue: map[string]int{},
		rails: map[string]railSample{railBulk: {sent: 60, waiting: 500, rolled: 60}, railUrgent: {sent: 40, waiting: 100, held: 20, rejected: 5,
			cutoff: &d.rails.Rails[1].Cutoff, finish: &finish, margin: &margin}}}
	tr.show(s)
	first := out.String()
	lines := strings.Split(strings.TrimRight(first, "\n"), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[3], "rail ") || !strings.HasPrefix(lines[4], "SEPA ") || !strings.HasPrefix(lines[5], "URGENT ") {
		t.Fatalf("the live table:\n%s", first)
	}
	for _, want := range []string{clock(d.rails.Rails[1].Cutoff), clock(finish), "-4 s PAST THE CUT-OFF", " 20 ", " 5 "} {
		if !strings.Contains(lines[5], want) {
			t.Errorf("URGENT's line lacks %q: %s", want, lines[5])
		}
	}
	if strings.Contains(lines[4], "PAST") {
		t.Errorf("SEPA's line is marked: %s", lines[4])
	}
	out.Reset()
	tr.show(s)
	if !strings.HasPrefix(out.String(), "\x1b[6A\x1b[J") {
		t.Errorf("the redraw starts %q, want it to move up 6 lines", out.String()[:min(12, out.Len())])
	}
}

// TestUnionSequences: a participant's numbers split over rails count as
// one sequence: none missing is no gap, a number no rail took is one, a
// number two keys took is a reuse.
func TestUnionSequences(t *testing.T) {
	t.Parallel()
	rc := func(key string, seq int64) railsim.Receipt {
		return railsim.Receipt{Key: key, ParticipantID: "acme", SequenceID: seq}
	}
	for _, tc := range []struct {
		name        string
		a, b        []railsim.Receipt
		gaps, reuse int64
	}{
		{"split, whole", []railsim.Receipt{rc("k1", 1), rc("k3", 3)}, []railsim.Receipt{rc("k2", 2)}, 0, 0},
		{"a number missing", []railsim.Receipt{rc("k1", 1), rc("k3", 3)}, []railsim.Receipt{rc("k4", 4)}, 1, 0},
		{"a number taken twice", []railsim.Receipt{rc("k1", 1), rc("k2", 2)}, []railsim.Receipt{rc("k9", 2)}, 0, 1},
		{"the same key on both", []railsim.Receipt{rc("k1", 1)}, []railsim.Receipt{rc("k1", 1)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gaps, reuse := unionSequences(map[string]railsim.LedgerView{"A": {Instructions: tc.a}, "B": {Instructions: tc.b}})
			if gaps != tc.gaps || reuse != tc.reuse {
				t.Errorf("%d gaps, %d reused; want %d, %d", gaps, reuse, tc.gaps, tc.reuse)
			}
		})
	}
}

// TestControlChecks: the controls' checks pass on a good run, and each
// fault fails exactly the check meant to see it.
func TestControlChecks(t *testing.T) {
	t.Parallel()
	instant := time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)
	good := func() *controlsOutcome {
		began := instant.Add(400 * time.Millisecond)
		return &controlsOutcome{
			run: controlsRun{waited: "APPROVAL: 0 of 1 approvals (rule treasury)", ownRefusal: "403 own-payment",
				approvedAt: instant.Add(-8 * time.Second), scheduled: 1, againID: "demo-cobalt-000007-again", againOf: "demo-cobalt-000007",
				againSaid: "demo-cobalt-000007", againHow: "HOLD", fileBatch: "batch-1", fileAgain: 409,
				fileSaid: "the same payments as file batch-1, received 2026-11-23T15:59:41Z"},
			treasury: "DELIVERED", executedAt: &began, approvals: 1,
			again: "HELD", againReason: "DUPLICATE: like demo-cobalt-000007",
		}
	}
	const fourEyes, dup = "four eyes", "duplicates"
	for _, tc := range []struct {
		name  string
		fault func(c *controlsOutcome)
		fails string
	}{
		{"good", func(*controlsOutcome) {}, ""},
		{"returned by the rail", func(c *controlsOutcome) { c.treasury = "RETURNED" }, ""},
		{"approved late, executed at once", func(c *controlsOutcome) {
			c.run.approvedAt = instant.Add(5 * time.Second)
			c.executedAt = new(instant.Add(6 * time.Second))
		}, ""},
		{"never waited", func(c *controlsOutcome) { c.run.waited = "" }, fourEyes},
		{"its submitter approved it", func(c *controlsOutcome) { c.run.ownRefusal = "" }, fourEyes},
		{"refused for a missing scope", func(c *controlsOutcome) { c.run.ownRefusal = "403 forbidden" }, fourEyes},
		{"not scheduled by its approval", func(c *controlsOutcome) { c.run.scheduled = 0 }, fourEyes},
		{"no approval recorded", func(c *controlsOutcome) { c.approvals = 0 }, fourEyes},
		{"before the instant", func(c *controlsOutcome) { c.executedAt = new(instant.Add(-time.Second)) }, fourEyes},
		{"long after the instant", func(c *controlsOutcome) { c.executedAt = new(instant.Add(10 * time.Second)) }, fourEyes},
		{"never executed", func(c *controlsOutcome) { c.executedAt, c.treasury = nil, "AWAITING_APPROVAL" }, fourEyes},
		{"failed", func(c *controlsOutcome) { c.treasury = "FAILED" }, fourEyes},
		{"the file taken twice", func(c *controlsOutcome) { c.run.fileAgain, c.run.fileSaid = 202, "" }, dup},
		{"the refusal names another file", func(c *controlsOutcome) { c.run.fileSaid = "the same payments as file batch-9" }, dup},
		{"not flagged at intake", func(c *controlsOutcome) { c.run.againSaid, c.run.againHow = "", "" }, dup},
		{"executed", func(c *controlsOutcome) { c.again, c.againReason, c.againBegan = "DELIVERED", "", true }, dup},
		{"held for another reason", func(c *controlsOutcome) { c.againReason = "SCREENING: hit" }, dup},
		{"held but began", func(c *controlsOutcome) { c.againBegan = true }, dup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := good()
			tc.fault(c)
			var failed []string
			for _, ch := range controlChecks(instant, c) {
				if !ch.OK {
					failed = append(failed, ch.Name)
				}
			}
			switch {
			case tc.fails == "" && len(failed) > 0:
				t.Fatalf("a good run failed %v", failed)
			case tc.fails != "" && (len(failed) != 1 || !strings.HasPrefix(failed[0], tc.fails)):
				t.Fatalf("failed %v, want %q alone", failed, tc.fails)
			}
		})
	}
}
