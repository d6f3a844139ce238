package demo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
		outboxDead: 10,
		tenants:    []tenantShare{{"acme", 480, 470}, {"bravo", 300, 290}, {"cobalt", 200, 195}},
		reasons:    []reason{{"FAILED", "INSUFFICIENT_FUNDS", 20}, {"RETURNED", "AC04", 10}},
	}
	for i := range 30 {
		d.perSecond = append(d.perSecond, float64(30+i%3))
		d.latencies = append(d.latencies, float64(30+i))
		d.samples = append(d.samples, sample{at: time.Duration(i) * time.Second, payments: map[string]int{},
			queue: map[string]int{"READY": 900 - 30*i, "DISPATCHED": 30, "COMPLETED": 30 * i}})
	}
	return d
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
	ids := map[string]bool{}
	for _, p := range ps {
		count[p.kind]++
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
