package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestControlsFromOutside is issue 48's acceptance test of the controls
// before money leaves, from outside: serve, the rail simulator and the
// screening simulator run as processes, and the principals are real
// tokens (a clerk submits, two checkers approve). One serve, a tenant
// each case, side by side:
//   - acme's file over its approval threshold (two approvals) waits: the
//     clerk's own approval is refused (403 own-payment), one checker's
//     leaves it waiting (1 of 2), the second's, given before its instant,
//     runs it at that instant at its rail's rate; a payment denied is
//     rejected; acme's small file, under the threshold, runs unstopped;
//   - three tenants' payments wait past their instant on a rail whose
//     cut-off comes before any approval: at the cut-off ROLL keeps them
//     waiting for tomorrow, HOLD holds them, REJECT rejects them; the late
//     approval paces the rolled ones tomorrow, the held ones count it and
//     a release paces them tomorrow, the rejected ones stay so;
//   - payroll's file sent twice is refused 409 naming the first; sent
//     again under new ids (with a new hire), its payments are held as
//     duplicates, like the first's, and only the new hire runs;
//   - screen's file, one creditor in ten on the simulator's list: the
//     hits are held and the rest run at their rail's rate; compliance
//     rejects two hits (REJECTED with its reason), the rest stay held.
//
// In every case nothing held, waiting, denied or rejected reached a
// rail, each delivered payment reached it once, every balance is exact
// and verify is clean; with an approval taken away verify names the
// payment under executed_with_its_approvals.
func TestControlsFromOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, about a minute and a half")
	}
	// Rail L's cut-off is a clock reading of today: far from midnight, in
	// a zone where it is not.
	zone, loc := "UTC", time.UTC
	if h := time.Now().UTC().Hour(); h == 0 || h == 23 {
		zone = "Etc/GMT-6" // UTC+6
		loc, _ = time.LoadLocation(zone)
	}

	simAddr, screenAddr := freeAddr(t), freeAddr(t)
	screenURL := "http://" + screenAddr
	startProc(t, "screen-sim", []string{"screen-sim", "--http-addr", screenAddr, "--hit-names", "Ivan Listed", "--log-level", "warn"}, nil)
	waitHTTP(t, screenURL+"/stats")
	data, addr := dataDir(t), freeAddr(t)
	simURL := "http://" + simAddr
	startServeOn(t, data, addr, 0, "--rail-url", simURL, "--screening-url", screenURL+"/v1/screen")
	base := "http://" + addr

	// The times, from when serve is up: rail L cuts off after the files'
	// instant T1 and before acme's big file's TA, so the cases all fall
	// within a minute.
	t0 := time.Now().In(loc)
	t1 := t0.Add(15 * time.Second).Truncate(time.Second)
	cutL := t0.Add(32 * time.Second).Truncate(time.Second)
	tA := t0.Add(42 * time.Second).Truncate(time.Second)
	clock := func(t time.Time) string { return t.Format("15:04:05") }
	tomorrow := t0.AddDate(0, 0, 1).Format(time.DateOnly)
	opening := time.Date(t0.Year(), t0.Month(), t0.Day()+1, 0, 0, 0, 0, loc)
	startProc(t, "rail-sim", []string{"rail-sim", "--http-addr", simAddr, "--log-level", "warn",
		"--cutoffs", fmt.Sprintf("L=%s@%s", clock(cutL), zone)}, nil)
	waitHTTP(t, simURL+"/healthz")

	// call sends body with token (the admin's when ""), and answers the
	// status, the content type and the decoded answer.
	call := func(token, method, path, ctype, body string) (int, string, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, resp.Header.Get("Content-Type"), out
	}
	must := func(token, method, path, body string) map[string]any {
		t.Helper()
		code, _, out := call(token, method, path, "application/json", body)
		if code/100 != 2 {
			t.Fatalf("%s %s: %d %v", method, path, code, out)
		}
		return out
	}
	// decided is an approval's or a denial's answer, checked against want
	// (the counts it names; the others must be 0).
	decided := func(token, path, body string, want map[string]float64) {
		t.Helper()
		out := must(token, "POST", path, body)
		for _, k := range []string{"selected", "own", "already", "approved", "scheduled", "waiting", "rejected"} {
			if got, _ := out[k].(float64); got != want[k] {
				t.Errorf("%s %s: %s %v, want %v (%v)", path, body, k, got, want[k], out)
			}
		}
	}
	env := map[string]string{"PAYDISPATCH_DATA_DIR": data, "DATABASE_URL": ""}
	token := func(name, scopes string) string {
		t.Helper()
		code, tok, stderr := runCLI([]string{"token", "create", "--scopes", scopes, "--name", name}, env)
		if code != 0 {
			t.Fatalf("token create %s: exit %d: %s", name, code, stderr)
		}
		return strings.TrimSpace(tok)
	}
	// The clerk may approve too: its approval of its own file is refused
	// by the four-eyes rule, not for want of a scope.
	clerk := token("clerk", "payments:write,payments:read,payments:approve")
	checker1 := token("checker1", "payments:approve")
	checker2 := token("checker2", "payments:approve")

	tenants := []string{"acme", "lroll", "lhold", "lreject", "payroll", "screen"}
	for _, tenant := range tenants {
		openAccount(t, addr, "ACC-"+tenant, tenant, "1000000.00")
	}
	for _, r := range []struct{ name, extra string }{
		{"A", ""}, {"P", ""}, {"S", ""},
		{"L", fmt.Sprintf(`,"timeZone":%q,"opens":"00:00:00","cutoff":%q`, zone, clock(cutL))},
	} {
		cfg := "rail-" + strings.ToLower(r.name)
		must("", "POST", "/admin/rate-limit/config", fmt.Sprintf(`{"configName":%q,"maxPerWindow":10,"windowSize":"PT1S"}`, cfg))
		must("", "POST", "/admin/rails", fmt.Sprintf(`{"name":%q,"type":"SEPA_JSON","endpoint":%q,"rateLimitConfig":%q,"active":true%s}`,
			r.name, simURL+"/rails/"+r.name, cfg, r.extra))
	}
	must("", "POST", "/admin/approval-rules", `{"tenantId":"acme","rules":[{"name":"big-file","fileMinTotal":"50000.00","approvals":2}]}`)
	for _, tenant := range []string{"lroll", "lhold", "lreject"} {
		must("", "POST", "/admin/approval-rules", fmt.Sprintf(`{"tenantId":%q,"rules":[{"name":"all","approvals":1}]}`, tenant))
		rule := strings.ToUpper(strings.TrimPrefix(tenant, "l"))
		must("", "POST", "/admin/cutoff-rules", fmt.Sprintf(`{"tenantId":%q,"rule":%q}`, tenant, rule))
	}
	must("", "POST", "/admin/control-settings", `{"tenantId":"payroll","duplicateAction":"HOLD"}`)

	// The files, every payment with an amount of its own (no two alike,
	// but for payroll's sent again).
	amountOf := map[string]decimal.Decimal{} // tenant/id → amount
	line := func(tenant, id, rail, creditor, amount string, due time.Time) string {
		amountOf[tenant+"/"+id] = decimal.RequireFromString(amount)
		return fmt.Sprintf(`{"paymentId":%q,"tenantId":%q,"debtorAccount":"ACC-%s","amount":%q,"currency":"EUR","creditor":{"name":%q,"iban":"DE89370400440532013000"},"requestedExecutionTime":%q,"rail":%q}`+"\n",
			id, tenant, tenant, amount, creditor, due.UTC().Format(time.RFC3339), rail)
	}
	send := func(token, file string) (string, map[string]any) {
		t.Helper()
		code, _, out := call(token, "POST", "/v1/payment-batches", "application/x-ndjson", file)
		if code != http.StatusAccepted {
			t.Fatalf("a file: %d %v", code, out)
		}
		id, _ := out["batchId"].(string)
		return id, out
	}
	var big, small, payroll, payroll2, screened strings.Builder
	for i := range 40 {
		big.WriteString(line("acme", fmt.Sprintf("big-%02d", i), "A", "Jane Doe", fmt.Sprintf("%d.00", 1500+i), tA))
	}
	for i := range 5 {
		small.WriteString(line("acme", fmt.Sprintf("small-%d", i), "A", "Jane Doe", fmt.Sprintf("%d.00", 100+i), t1))
	}
	late := map[string]string{}
	for _, tenant := range []string{"lroll", "lhold", "lreject"} {
		var b strings.Builder
		for i := range 3 {
			b.WriteString(line(tenant, fmt.Sprintf("l-%d", i), "L", "Jane Doe", fmt.Sprintf("%d.00", 20+i), t1))
		}
		late[tenant] = b.String()
	}
	for i := range 30 {
		amount := fmt.Sprintf("%d.%02d", 2000+i*37, i)
		payroll.WriteString(line("payroll", fmt.Sprintf("run1-%02d", i), "P", fmt.Sprintf("Employee %02d", i), amount, t1))
		payroll2.WriteString(line("payroll", fmt.Sprintf("run2-%02d", i), "P", fmt.Sprintf("Employee %02d", i), amount, t1))
	}
	payroll2.WriteString(line("payroll", "run2-hire", "P", "New Hire", "2345.67", t1))
	hits := map[string]bool{}
	for i := range 100 {
		id, creditor := fmt.Sprintf("s-%03d", i), "Jane Doe"
		if i%10 == 3 {
			creditor, hits[id] = "Ivan  LISTED", true // the list's name, as the simulator matches it
		}
		screened.WriteString(line("screen", id, "S", creditor, fmt.Sprintf("10.%02d", i), t1))
	}

	// The payments as stored: rail receipts are keyed by payment_id.
	type row struct {
		key, id, tenant, status, reason, rail, date string
		scheduled, accepted                         *time.Time
	}
	conn := embeddedConn(t, data)
	rows := func() map[string]row {
		t.Helper()
		got, err := conn.Query(context.Background(), `SELECT payment_id, external_id, tenant_id, status, coalesce(status_reason, ''),
			coalesce(rail, ''), coalesce(execution_date::text, ''), scheduled_execution_time, accepted_at FROM payments`)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Close()
		out := map[string]row{}
		for got.Next() {
			var r row
			if err := got.Scan(&r.key, &r.id, &r.tenant, &r.status, &r.reason, &r.rail, &r.date, &r.scheduled, &r.accepted); err != nil {
				t.Fatal(err)
			}
			out[r.tenant+"/"+r.id] = r
		}
		if got.Err() != nil {
			t.Fatal(got.Err())
		}
		return out
	}
	// pastPhaseA waits until n payments are past their Phase A.
	pastPhaseA := func(n int) {
		t.Helper()
		waitUntil(t, time.Minute, func() bool {
			var got int
			err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE status <> 'RECEIVED'`).Scan(&got)
			return err == nil && got == n
		})
	}

	firstRun, _ := send("", payroll.String())
	bigBatch, _ := send(clerk, big.String())
	send(clerk, small.String())
	for _, tenant := range []string{"lroll", "lhold", "lreject"} {
		send(clerk, late[tenant])
	}
	send("", screened.String())

	// The same file twice: 409, naming the first, as problem+json.
	code, ctype, prob := call("", "POST", "/v1/payment-batches", "application/x-ndjson", payroll.String())
	if detail, _ := prob["detail"].(string); code != http.StatusConflict || ctype != "application/problem+json" || !strings.Contains(detail, firstRun) {
		t.Errorf("the payroll again: %d %s %v; want 409 naming batch %s", code, ctype, prob, firstRun)
	}
	// Again under new ids, one payment more, once the first run is past
	// its Phase A (whose duplicate control remembers its payments): taken,
	// each old one named a duplicate of the first run's, to be held.
	pastPhaseA(30 + 40 + 5 + 9 + 100)
	_, again := send("", payroll2.String())
	dups, _ := again["duplicates"].([]any)
	if len(dups) != 30 || again["suspectedDuplicates"] != float64(30) {
		t.Errorf("the payroll under new ids: %d duplicates named, %v counted, want 30: %v", len(dups), again["suspectedDuplicates"], again)
	}
	for _, d := range dups {
		d, _ := d.(map[string]any)
		id, _ := d["paymentId"].(string)
		if d["action"] != "HOLD" || d["like"] != strings.Replace(id, "run2", "run1", 1) {
			t.Errorf("duplicate %v: want HOLD, like its first run's", d)
		}
	}
	const total = 30 + 40 + 5 + 9 + 100 + 31
	pastPhaseA(total)
	status := func(rs map[string]row, tenant, prefix string) map[string]int {
		out := map[string]int{}
		for _, r := range rs {
			if r.tenant == tenant && strings.HasPrefix(r.id, prefix) {
				out[r.status+" "+r.reason]++
			}
		}
		return out
	}
	bigWaits := func(approved int) {
		t.Helper()
		want := fmt.Sprintf("AWAITING_APPROVAL APPROVAL: %d of 2 approvals (rule big-file)", approved)
		if got := status(rows(), "acme", "big-"); got[want] != 40 {
			t.Errorf("acme's big file: %v, want 40 %s", got, want)
		}
	}
	bigWaits(0)

	// Four eyes: the clerk's own approval is refused, whole; each checker
	// counts once.
	code, ctype, prob = call(clerk, "POST", "/v1/payments/approve", "application/json", `{"tenantId":"acme","paymentIds":["big-00","big-01"]}`)
	if code != http.StatusForbidden || ctype != "application/problem+json" || prob["type"] != "https://paydispatch.dev/problems/own-payment" {
		t.Errorf("the clerk approves its own payments by id: %d %s %v; want 403 own-payment", code, ctype, prob)
	}
	decided(clerk, "/v1/payments/approve", fmt.Sprintf(`{"batchId":%q}`, bigBatch), map[string]float64{"selected": 0, "own": 40})
	bigWaits(0)
	decided(checker1, "/v1/payments/approve", fmt.Sprintf(`{"batchId":%q}`, bigBatch), map[string]float64{"selected": 40, "approved": 40, "waiting": 40})
	decided(checker1, "/v1/payments/approve", fmt.Sprintf(`{"batchId":%q}`, bigBatch), map[string]float64{"selected": 0, "already": 40})
	bigWaits(1)
	decided(checker2, "/v1/payments/deny", `{"tenantId":"acme","paymentIds":["big-07"],"reason":"not ours"}`, map[string]float64{"selected": 1, "rejected": 1})

	// Past T1: the files under no rule run; the late tenants' wait past
	// their instant, acme's big file for its second approval.
	waitUntil(t, 30*time.Second, func() bool {
		rs := rows()
		return status(rs, "acme", "small-")["DELIVERED "] == 5
	})
	if time.Now().Before(t1.Add(2 * time.Second)) {
		time.Sleep(time.Until(t1.Add(2 * time.Second)))
	}
	rs := rows()
	for _, tenant := range []string{"lroll", "lhold", "lreject"} {
		if got := status(rs, tenant, "l-"); got["AWAITING_APPROVAL APPROVAL: 0 of 1 approvals (rule all)"] != 3 {
			t.Errorf("%s past its instant, before its rail's cut-off: %v, want 3 awaiting approval", tenant, got)
		}
	}
	if got := status(rs, "acme", "big-"); got["AWAITING_APPROVAL APPROVAL: 1 of 2 approvals (rule big-file)"] != 39 {
		t.Errorf("acme's big file after one approval: %v", got)
	}
	if time.Now().After(tA.Add(-3 * time.Second)) {
		t.Fatalf("the set-up took until %s, acme's big file is due at %s", time.Now().Format(time.RFC3339Nano), tA)
	}
	decided(checker2, "/v1/payments/approve", fmt.Sprintf(`{"batchId":%q}`, bigBatch), map[string]float64{"selected": 39, "approved": 39, "scheduled": 39})

	// Rail L's cut-off passes with the late tenants' approvals missing:
	// each meets its tenant's rule; then the late approvals.
	time.Sleep(time.Until(cutL.Add(time.Second)))
	waitUntil(t, 15*time.Second, func() bool {
		rs := rows()
		var rolled, held, rejected int
		for _, r := range rs {
			switch {
			case r.tenant == "lroll" && r.status == "AWAITING_APPROVAL" && r.date == tomorrow:
				rolled++
			case r.tenant == "lhold" && r.status == "HELD" && strings.HasPrefix(r.reason, "CUTOFF: approvals missing at rail L's cut-off"):
				held++
			case r.tenant == "lreject" && r.status == "REJECTED" && strings.HasPrefix(r.reason, "CUTOFF_MISSED: approvals missing at rail L's cut-off"):
				rejected++
			}
		}
		return rolled == 3 && held == 3 && rejected == 3
	})
	decided(checker1, "/v1/payments/approve", `{"tenantId":"lroll"}`, map[string]float64{"selected": 3, "approved": 3, "scheduled": 3})
	decided(checker1, "/v1/payments/approve", `{"tenantId":"lhold"}`, map[string]float64{"selected": 3, "approved": 3, "waiting": 3})
	held := 0
	for _, r := range rows() {
		if r.tenant == "lhold" && r.status == "HELD" && strings.HasPrefix(r.reason, "CUTOFF: approvals missing") {
			held++
		}
	}
	if held != 3 {
		t.Errorf("lhold's approved while held: %d still held, want 3 (%v)", held, status(rows(), "lhold", "l-"))
	}
	if out := must("", "POST", "/admin/payments/release", `{"tenantId":"lhold"}`); out["released"] != float64(3) || out["awaitingApproval"] != float64(0) {
		t.Errorf("release lhold's: %v", out)
	}
	decided(checker1, "/v1/payments/approve", `{"tenantId":"lreject"}`, map[string]float64{})

	// Until every payment is where it ends today (the late ones paced
	// tomorrow).
	waitUntil(t, 90*time.Second, func() bool {
		var open int
		err := conn.QueryRow(context.Background(), `SELECT count(*) FROM payments WHERE NOT (status IN ('DELIVERED', 'HELD', 'REJECTED')
			OR status = 'SCHEDULED' AND execution_date IS NOT DISTINCT FROM $1::date)`, tomorrow).Scan(&open)
		return err == nil && open == 0
	})
	rs = rows()

	// What the rails received: each delivered payment once, on its rail,
	// nothing else, nothing late.
	l := railReceipts(t, simURL)
	receivedOn := map[string]string{} // payment_id → rail
	for name, rl := range l.Rails {
		if rl.Duplicates != 0 || rl.Refused != 0 || rl.Late != 0 {
			t.Errorf("rail %s's ledger: %d duplicates, %d refused, %d late", name, rl.Duplicates, rl.Refused, rl.Late)
		}
		for _, in := range rl.Instructions {
			if _, twice := receivedOn[in.Key]; twice {
				t.Errorf("%s received on rails %s and %s", in.Key, receivedOn[in.Key], name)
			}
			receivedOn[in.Key] = name
		}
	}
	byKey := map[string]row{}
	for _, r := range rs {
		byKey[r.key] = r
	}
	for k, name := range receivedOn {
		if r, ok := byKey[k]; !ok || r.status != "DELIVERED" {
			t.Errorf("rail %s received %s, a payment %s/%s %s (%s)", name, k, r.tenant, r.id, r.status, r.reason)
		}
	}
	// acme's big file reached its rail from its instant, approved before.
	for _, in := range l.Rails["A"].Instructions {
		if r := byKey[in.Key]; strings.HasPrefix(r.id, "big-") && in.ReceivedAt.Before(tA) {
			t.Errorf("acme/%s reached rail A at %s, before its instant %s", r.id, in.ReceivedAt.Format(time.RFC3339Nano), tA)
		}
	}
	spent := map[string]decimal.Decimal{}
	perSecond := map[string]map[int64]int{} // rail → second → executions
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for key, r := range rs {
		if r.status != "DELIVERED" {
			continue
		}
		if receivedOn[r.key] != r.rail || r.accepted == nil {
			t.Errorf("%s delivered on %s, received on %q, begun %v", key, r.rail, receivedOn[r.key], r.accepted)
			continue
		}
		spent[r.tenant] = spent[r.tenant].Add(amountOf[key])
		if perSecond[r.rail] == nil {
			perSecond[r.rail] = map[int64]int{}
		}
		perSecond[r.rail][r.accepted.Unix()]++
		group := r.tenant + "/" + strings.SplitN(r.id, "-", 2)[0]
		if f, ok := first[group]; !ok || r.accepted.Before(f) {
			first[group] = *r.accepted
		}
		if r.accepted.After(last[group]) {
			last[group] = *r.accepted
		}
	}
	for group, f := range first {
		t.Logf("%s: executed from %s to %s", group, f.Format("15:04:05.000"), last[group].Format("15:04:05.000"))
	}
	for rail, secs := range perSecond {
		for sec, n := range secs {
			if n > 10 {
				t.Errorf("rail %s: %d executions in the second from %s, limit 10", rail, n, time.Unix(sec, 0).Format("15:04:05"))
			}
		}
	}

	// Each case's ends.
	want := func(tenant, prefix string, n int, st, reasonPrefix string, check func(row) string) {
		t.Helper()
		got := 0
		for key, r := range rs {
			if r.tenant != tenant || !strings.HasPrefix(r.id, prefix) {
				continue
			}
			if r.status != st || !strings.HasPrefix(r.reason, reasonPrefix) {
				continue
			}
			if check != nil {
				if bad := check(r); bad != "" {
					t.Errorf("%s: %s", key, bad)
				}
			}
			got++
		}
		if got != n {
			t.Errorf("%s's %s*: %d %s %q, want %d (%v)", tenant, prefix, got, st, reasonPrefix, n, status(rs, tenant, prefix))
		}
	}
	// acme: the big file at its instant, at the rate (39 at 10 a second
	// take four seconds); the denied one rejected; the small file ran.
	want("acme", "big-", 39, "DELIVERED", "", nil)
	want("acme", "big-07", 1, "REJECTED", "DENIED by ", nil)
	want("acme", "small-", 5, "DELIVERED", "", nil)
	if f, e := first["acme/big"], last["acme/big"]; f.Before(tA) || !f.Before(tA.Add(2*time.Second)) || !e.Before(tA.Add(7*time.Second)) {
		t.Errorf("acme's big file ran from %s to %s, its instant %s", f, e, tA)
	}
	// Late approvals: rolled ones and the released ones paced tomorrow,
	// the rejected ones left so.
	tomorrows := func(r row) string {
		if r.date != tomorrow || r.scheduled == nil || r.scheduled.Before(opening) {
			return fmt.Sprintf("scheduled %v on %s, want from tomorrow's opening %s", r.scheduled, r.date, opening)
		}
		return ""
	}
	want("lroll", "l-", 3, "SCHEDULED", "APPROVED", tomorrows)
	want("lhold", "l-", 3, "SCHEDULED", "", tomorrows)
	want("lreject", "l-", 3, "REJECTED", "CUTOFF_MISSED", nil)
	// payroll: the first run ran; the second's held as its duplicates,
	// but for the new hire.
	want("payroll", "run1-", 30, "DELIVERED", "", nil)
	want("payroll", "run2-hire", 1, "DELIVERED", "", nil)
	want("payroll", "run2-", 30, "HELD", "DUPLICATE: like run1-", func(r row) string {
		if like := strings.Replace(r.id, "run2", "run1", 1); r.reason != "DUPLICATE: like "+like {
			return r.reason + ", want like " + like
		}
		return ""
	})
	// screen: the hits held; the rest ran at the rate from T1 (90 at 10 a
	// second take nine seconds). Compliance rejects two of the hits.
	var confirmed []string
	for id := range hits {
		if len(confirmed) < 2 {
			confirmed = append(confirmed, id)
		}
	}
	ids, _ := json.Marshal(confirmed)
	if out := must("", "POST", "/admin/payments/reject", fmt.Sprintf(`{"tenantId":"screen","paymentIds":%s,"reason":"sanctions match confirmed"}`, ids)); out["rejected"] != float64(2) {
		t.Errorf("compliance rejects two hits: %v, want 2 rejected", out)
	}
	rs = rows()
	want("screen", "s-", 2, "REJECTED", "REJECTED by ", func(r row) string {
		if !slices.Contains(confirmed, r.id) || !strings.HasSuffix(r.reason, ": sanctions match confirmed") {
			return "rejected: " + r.reason
		}
		return ""
	})
	want("screen", "s-", 8, "HELD", "SCREENING: SIM-NAMES", func(r row) string {
		if !hits[r.id] {
			return "held, not a hit"
		}
		return ""
	})
	want("screen", "s-", 90, "DELIVERED", "", nil)
	if f, e := first["screen/s"], last["screen/s"]; f.Before(t1) || e.Sub(f) < 7*time.Second || !e.Before(t1.Add(14*time.Second)) {
		t.Errorf("screen's clear payments ran from %s to %s, their instant %s: want at the rate, 90 at 10 a second", f, e, t1)
	}
	var screens struct{ Payments, Hits, Errors int }
	if err := json.Unmarshal([]byte(get(t, screenURL+"/stats")), &screens); err != nil || screens.Payments < total || screens.Hits < 10 || screens.Errors != 0 {
		t.Errorf("the screening simulator: %+v (%v); want every one of the %d payments screened, the 10 hits", screens, err, total)
	}

	for _, tenant := range tenants {
		want := decimal.RequireFromString("1000000").Sub(spent[tenant]).StringFixed(2)
		if got := accountBalance(t, addr, "ACC-"+tenant+"?tenantId="+tenant); got != want {
			t.Errorf("%s's balance %s, want %s", tenant, got, want)
		}
	}
	verify(t, data)

	// verify holds the approvals rule: an executed payment's approval
	// taken away, it names the payment; given back, it is clean.
	key := rs["acme/big-00"].key
	var principal, decision, actor string
	var decidedAt time.Time
	if err := conn.QueryRow(context.Background(), `DELETE FROM payment_approvals WHERE payment_id = $1 AND decision = 'APPROVE'
		AND principal = (SELECT min(principal) FROM payment_approvals WHERE payment_id = $1) RETURNING principal, decision, actor, decided_at`,
		key).Scan(&principal, &decision, &actor, &decidedAt); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "verify", "--data-dir", data)
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "executed_with_its_approvals\tpayments "+key) {
		t.Errorf("verify with an approval of %s taken away: %v\n%s", key, err, out)
	}
	if _, err := conn.Exec(context.Background(), `INSERT INTO payment_approvals (payment_id, principal, decision, actor, decided_at)
		VALUES ($1, $2, $3, $4, $5)`, key, principal, decision, actor, decidedAt); err != nil {
		t.Fatal(err)
	}
	verify(t, data)
}
