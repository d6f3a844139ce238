package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestCutoffsFromOutside is the rails issue's acceptance test, from
// outside: serve and the rail simulator run as processes. Two rails, A
// (JSON, 10 a second) and B (pacs.008, 5 a second), cut off a minute and
// a half and two minutes from now, on a calendar that closes tomorrow;
// the routing rules send payments of 50 or more to B, the rest to A. A
// file of 1,800 payments of three tenants, due in a few seconds, is more
// than either rail can send before its cut-off. acme's rule is ROLL,
// beta's HOLD, gamma's REJECT. It checks that:
//   - no instruction reached a rail at or after its cut-off (the
//     simulator records each arrival and refuses late ones: none was);
//   - each payment past its rail's cut-off was rolled to the day after
//     tomorrow (tomorrow is closed), held, or rejected, as its tenant's
//     rule says, and every other one was delivered on today's date;
//   - the projection in the file's 202 was right: how many made each
//     rail's cut-off, how many met each rule, and the last slot to within
//     a few seconds;
//   - every balance is exact and verify is clean.
//
// The three rules run in one file (one tenant each), not three runs: the
// payments past each cut-off interleave the tenants, so each rule meets
// payments on both rails.
func TestCutoffsFromOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, about three minutes")
	}
	// The cut-offs are clock readings of today: far from midnight, in a
	// zone where it is not.
	zone, loc := "UTC", time.UTC
	if h := time.Now().UTC().Hour(); h == 0 || h == 23 {
		zone = "Etc/GMT-6" // UTC+6
		loc, _ = time.LoadLocation(zone)
	}
	now := time.Now().In(loc)
	cutA := now.Add(90 * time.Second).Truncate(time.Second)
	cutB := now.Add(120 * time.Second).Truncate(time.Second)
	clock := func(t time.Time) string { return t.Format("15:04:05") }
	today := now.Format(time.DateOnly)
	tomorrow := now.AddDate(0, 0, 1).Format(time.DateOnly)
	afterTomorrow := now.AddDate(0, 0, 2).Format(time.DateOnly)

	simAddr := freeAddr(t)
	startProc(t, "rail-sim", []string{"rail-sim", "--http-addr", simAddr, "--log-level", "warn",
		"--cutoffs", fmt.Sprintf("A=%s@%s,B=%s@%s", clock(cutA), zone, clock(cutB), zone)}, nil)
	simURL := "http://" + simAddr
	waitHTTP(t, simURL+"/healthz")
	data, addr := dataDir(t), freeAddr(t)
	startServeOn(t, data, addr, 0, "--rail-url", simURL, "--pacs008-debtor-agent-bic", "NWBKGB2L")
	base := "http://" + addr

	admin := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			var p map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&p)
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, p)
		}
	}
	tenants := []string{"acme", "beta", "gamma"}
	for _, tenant := range tenants {
		openAccount(t, addr, "ACC-"+tenant, tenant, "1000000.00")
	}
	admin("POST", "/admin/rate-limit/config", `{"configName":"rail-a","maxPerWindow":10,"windowSize":"PT1S"}`)
	admin("POST", "/admin/rate-limit/config", `{"configName":"rail-b","maxPerWindow":5,"windowSize":"PT1S"}`)
	admin("POST", "/admin/calendars", fmt.Sprintf(`{"name":"TESTCAL","weekend":[],"closingDays":[%q]}`, tomorrow))
	for _, r := range []struct {
		name, typ, cfg string
		cut            time.Time
	}{{"A", "SEPA_JSON", "rail-a", cutA}, {"B", "PACS008", "rail-b", cutB}} {
		admin("POST", "/admin/rails", fmt.Sprintf(`{"name":%q,"type":%q,"endpoint":%q,"rateLimitConfig":%q,"timeZone":%q,
			"opens":"00:00:00","cutoff":%q,"calendar":"TESTCAL","active":true}`, r.name, r.typ, simURL+"/rails/"+r.name, r.cfg, zone, clock(r.cut)))
	}
	admin("POST", "/admin/routing-rules", `{"rules":[{"minAmount":"50","rail":"B"},{"rail":"A"}]}`)
	admin("POST", "/admin/cutoff-rules", `{"tenantId":"beta","rule":"HOLD"}`)
	admin("POST", "/admin/cutoff-rules", `{"tenantId":"gamma","rule":"REJECT"}`)

	const n = 1800
	due := time.Now().Add(5 * time.Second).UTC().Truncate(time.Second)
	var file strings.Builder
	amountOf := map[string]decimal.Decimal{}
	for i := range n {
		tenant := tenants[i%3]
		amount := "10.00"
		if (i/3)%2 == 1 {
			amount = "60.00"
		}
		id := fmt.Sprintf("c-%04d", i)
		amountOf[tenant+"/"+id] = decimal.RequireFromString(amount)
		fmt.Fprintf(&file, `{"paymentId":%q,"tenantId":%q,"debtorAccount":"ACC-%s","amount":%q,"currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":%q}`+"\n",
			id, tenant, tenant, amount, due.Format(time.RFC3339))
	}
	type projection struct {
		Rail                   string
		Payments, BeforeCutoff int
		Rolled, Held, Rejected int
		ExecutionDate          string
		Cutoff, LastSlot       *time.Time
	}
	var sub struct {
		BatchID    string
		Projection []projection
	}
	if code := postJSON(t, base+"/v1/payment-batches", "application/x-ndjson", file.String(), &sub); code != http.StatusAccepted {
		t.Fatalf("the file: %d", code)
	}
	projected := map[string]projection{}
	for _, p := range sub.Projection {
		projected[p.Rail] = p
	}
	t.Logf("projected: %+v", sub.Projection)
	if len(projected) != 2 || projected["A"].Payments != 900 || projected["B"].Payments != 900 ||
		projected["A"].BeforeCutoff >= 900 || projected["B"].BeforeCutoff >= 900 || projected["A"].ExecutionDate != today {
		t.Fatalf("the 202's projection %+v: want both rails, each past its cut-off", sub.Projection)
	}

	// Until both cut-offs have passed and every payment is where it ends
	// today: delivered, or rolled, held or rejected.
	type row struct {
		id, tenant, status, reason, rail, date string
		scheduled                              *time.Time
	}
	var rows map[string]row
	conn := embeddedConn(t, data)
	time.Sleep(time.Until(cutB.Add(2 * time.Second)))
	waitUntil(t, 2*time.Minute, func() bool {
		got, err := conn.Query(context.Background(), `SELECT external_id, tenant_id, status, coalesce(status_reason, ''),
			coalesce(rail, ''), coalesce(execution_date::text, ''), scheduled_execution_time FROM payments`)
		if err != nil {
			return false
		}
		rows = map[string]row{}
		settled := 0
		for got.Next() {
			var r row
			if err := got.Scan(&r.id, &r.tenant, &r.status, &r.reason, &r.rail, &r.date, &r.scheduled); err != nil {
				return false
			}
			rows[r.tenant+"/"+r.id] = r
			switch {
			case r.status == "DELIVERED", r.status == "HELD", r.status == "REJECTED",
				r.status == "SCHEDULED" && r.date == afterTomorrow:
				settled++
			}
		}
		return got.Err() == nil && settled == n
	})

	// No instruction reached a rail at or after its cut-off.
	l := railReceipts(t, simURL)
	lastArrival := map[string]time.Time{}
	arrived := map[string]int{}
	for name, cut := range map[string]time.Time{"A": cutA, "B": cutB} {
		rl := l.Rails[name]
		if rl.Late != 0 || rl.Refused != 0 || rl.Duplicates != 0 {
			t.Errorf("rail %s's ledger: %d late, %d refused, %d duplicates", name, rl.Late, rl.Refused, rl.Duplicates)
		}
		for _, in := range rl.Instructions {
			if !in.ReceivedAt.Before(cut) {
				t.Errorf("rail %s received %s at %s, at or after its cut-off %s", name, in.Key, in.ReceivedAt, cut)
			}
			if in.ValueDate != today {
				t.Errorf("rail %s received %s valued %s, want today %s", name, in.Key, in.ValueDate, today)
			}
			if in.ReceivedAt.After(lastArrival[name]) {
				lastArrival[name] = in.ReceivedAt
			}
			arrived[name]++
		}
	}

	// Each payment as its rail's cut-off and its tenant's rule say.
	type tally struct{ delivered, rolled, held, rejected int }
	perRail := map[string]*tally{"A": {}, "B": {}}
	spent := map[string]decimal.Decimal{}
	rule := map[string]string{"acme": "SCHEDULED", "beta": "HELD", "gamma": "REJECTED"}
	for key, r := range rows {
		c := perRail[r.rail]
		if c == nil {
			t.Fatalf("%s on rail %q", key, r.rail)
		}
		switch r.status {
		case "DELIVERED":
			c.delivered++
			spent[r.tenant] = spent[r.tenant].Add(amountOf[key])
			if r.date != today {
				t.Errorf("%s delivered on %s, want today %s", key, r.date, today)
			}
			continue
		case "SCHEDULED":
			c.rolled++
			opening := time.Date(now.Year(), now.Month(), now.Day()+2, 0, 0, 0, 0, loc)
			if r.scheduled == nil || r.scheduled.Before(opening) || !strings.HasPrefix(r.reason, "ROLLED") {
				t.Errorf("%s rolled to %v (%s), want the day after tomorrow's opening %s", key, r.scheduled, r.reason, opening)
			}
		case "HELD":
			c.held++
			if !strings.HasPrefix(r.reason, "CUTOFF") {
				t.Errorf("%s held: %s", key, r.reason)
			}
		case "REJECTED":
			c.rejected++
			if !strings.HasPrefix(r.reason, "CUTOFF_MISSED") {
				t.Errorf("%s rejected: %s", key, r.reason)
			}
		}
		if rule[r.tenant] != r.status {
			t.Errorf("%s of %s is %s past the cut-off; its tenant's rule makes it %s", key, r.tenant, r.status, rule[r.tenant])
		}
	}
	for name, c := range perRail {
		p := projected[name]
		t.Logf("rail %s: delivered %d (projected %d), rolled %d (%d), held %d (%d), rejected %d (%d); last arrival %s, projected last slot %v",
			name, c.delivered, p.BeforeCutoff, c.rolled, p.Rolled, c.held, p.Held, c.rejected, p.Rejected, lastArrival[name].Format(time.RFC3339Nano), p.LastSlot)
		if arrived[name] != c.delivered {
			t.Errorf("rail %s received %d instructions, %d payments delivered on it", name, arrived[name], c.delivered)
		}
		if c.delivered == 0 || c.rolled == 0 || c.held == 0 || c.rejected == 0 {
			t.Errorf("rail %s: %+v; want each outcome", name, *c)
		}
		// The projection, made before any slot was taken, within a few
		// seconds' worth of payments at the rail's rate.
		if d := math.Abs(float64(c.delivered - p.BeforeCutoff)); d > 30 {
			t.Errorf("rail %s: %d made the cut-off, %d projected", name, c.delivered, p.BeforeCutoff)
		}
		if d := math.Abs(float64(c.rolled+c.held+c.rejected) - float64(p.Rolled+p.Held+p.Rejected)); d > 30 {
			t.Errorf("rail %s: %d missed the cut-off, %d projected", name, c.rolled+c.held+c.rejected, p.Rolled+p.Held+p.Rejected)
		}
		if p.LastSlot == nil || math.Abs(lastArrival[name].Sub(*p.LastSlot).Seconds()) > 3 {
			t.Errorf("rail %s: last arrival %s, projected last slot %v", name, lastArrival[name], p.LastSlot)
		}
	}
	for _, tenant := range tenants {
		want := decimal.RequireFromString("1000000").Sub(spent[tenant]).StringFixed(2)
		if got := accountBalance(t, addr, "ACC-"+tenant+"?tenantId="+tenant); got != want {
			t.Errorf("%s's balance %s, want %s", tenant, got, want)
		}
	}
	verify(t, data)
}
