package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// countingFlush counts the flushes of a routing snapshot.
type countingFlush struct{ n atomic.Int32 }

func (c *countingFlush) Flush() { c.n.Add(1) }

// railsDB is a database with PAYMENT registered, two rate-limit configs
// (sepa 10 a second, inst 5 a second) and the rail routes on it as serve
// wires them, with the audit log.
type railsDB struct {
	pool  *pgxpool.Pool
	rt    *httpapi.Router
	lim   *pacing.Limiter
	flush *countingFlush
}

func newRailsDB(t *testing.T, now func() time.Time) *railsDB {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q := queue.New(pool)
	if err := payment.RegisterItemType(ctx, q); err != nil {
		t.Fatal(err)
	}
	lim := pacing.New(pacing.Config{Pool: pool})
	for _, c := range []pacing.Limit{{Name: "sepa", MaxPerWindow: 10, Window: time.Second, Headroom: 100000},
		{Name: "inst", MaxPerWindow: 5, Window: time.Second, Headroom: 100}} {
		if _, err := lim.PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	d := &railsDB{pool: pool, lim: lim, flush: &countingFlush{}}
	d.rt = newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin": {TokenID: "tok_a", Name: "ops", Scopes: []auth.Scope{auth.Admin}},
		"acme":  {TokenID: "tok_b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead, auth.WebhooksWrite}},
	}, Services: httpapi.Services{Audit: audit.New(audit.Config{DB: pool}),
		Rails: httpapi.RailStore{DB: pool, Payments: payment.NewStore(pool), Pacing: lim, Queue: q, Resolver: d.flush, Now: now}}})
	return d
}

func (d *railsDB) do(method, path, body, token string) (*httptest.ResponseRecorder, map[string]any) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	d.rt.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec, out
}

func (d *railsDB) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := d.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// problemFields are the fields a problem's errors name, joined by ",".
func problemFields(body map[string]any) string {
	var out []string
	errs, _ := body["errors"].([]any)
	for _, e := range errs {
		m, _ := e.(map[string]any)
		out = append(out, fmt.Sprint(m["field"]))
	}
	return strings.Join(out, ",")
}

// TestRailRoutes: the rails, calendars, routing rules and cut-off rules
// over HTTP on the real stores. A good change answers what was stored,
// writes one audit entry naming its route, and flushes the routing
// snapshot; bad input is a 4xx problem naming each field, changes
// nothing and records nothing; a tenant's token is refused.
func TestRailRoutes(t *testing.T) {
	t.Parallel()
	d := newRailsDB(t, nil)
	year := time.Now().UTC().Year()
	steps := []struct {
		name, method, path, body, token string
		status                          int
		// fields: the fields a refusal names (in order); says: text
		// the answer holds.
		fields, says string
	}{
		{"create a rail", "POST", "/admin/rails", `{"name":"SEPA","type":"SEPA_JSON","rateLimitConfig":"sepa","timeZone":"Europe/Berlin","opens":"07:00","cutoff":"16:00:00","calendar":"TARGET2"}`, "admin",
			201, "", `"version":1`},
		{"change it", "POST", "/admin/rails", `{"name":"SEPA","type":"SEPA_JSON","rateLimitConfig":"sepa","timeZone":"Europe/Berlin","opens":"07:00:00","cutoff":"17:30:00","calendar":"TARGET2"}`, "admin",
			200, "", `"cutoff":"17:30:00","calendar":"TARGET2","active":true,"version":2`},
		{"every field wrong", "POST", "/admin/rails", `{"name":"bad name","type":"FAX","endpoint":"ftp://rail.example","timeZone":"Mars/Olympus","opens":"25:00","cutoff":"noon"}`, "admin",
			422, "opens,cutoff,name,type,endpoint,timeZone", ""},
		{"cut-off before opening", "POST", "/admin/rails", `{"name":"EARLY","type":"SEPA_JSON","rateLimitConfig":"inst","opens":"09:00","cutoff":"08:00"}`, "admin",
			422, "cutoff", "after opens"},
		{"unknown config and calendar", "POST", "/admin/rails", `{"name":"NEW","type":"PACS008","rateLimitConfig":"nope","calendar":"NOPE"}`, "admin",
			422, "rateLimitConfig,calendar", "create it first"},
		{"a config another rail paces by", "POST", "/admin/rails", `{"name":"SEPA2","type":"SEPA_JSON","rateLimitConfig":"sepa"}`, "admin",
			422, "rateLimitConfig", "rail SEPA paces by it already"},
		{"no type", "POST", "/admin/rails", `{"name":"X"}`, "admin", 422, "type", ""},
		{"malformed JSON", "POST", "/admin/rails", `{"name":`, "admin", 400, "", "Malformed JSON"},
		{"an unknown field", "POST", "/admin/rails", `{"name":"X","type":"SEPA_JSON","speed":"fast"}`, "admin", 400, "speed", ""},
		{"a tenant's token", "POST", "/admin/rails", `{"name":"MINE","type":"SEPA_JSON"}`, "acme", 403, "", "lacks the admin scope"},
		{"list", "GET", "/admin/rails", "", "admin", 200, "", `"name":"DEFAULT"`},
		{"one", "GET", "/admin/rails/SEPA", "", "admin", 200, "", `"rate":{"rateLimitConfig":"sepa","maxPerWindow":10,"windowSize":"PT1S","perSecond":10,"active":true}`},
		{"the default rail paces by PAYMENT's config", "GET", "/admin/rails/DEFAULT", "", "admin", 200, "", `"backlog":{"waiting":0,"held":0}`},
		{"unknown", "GET", "/admin/rails/NOPE", "", "admin", 404, "", "no rail NOPE"},
		{"a name no rail can have", "GET", "/admin/rails/" + strings.Repeat("x", 65), "", "admin", 404, "", "no rail"},
		{"a tenant reads no rail", "GET", "/admin/rails/SEPA", "", "acme", 403, "", ""},

		{"create a calendar", "POST", "/admin/calendars", `{"name":"BANK","weekend":["sat","SUNDAY"],"closingDays":["2026-12-31","2026-12-24"]}`, "admin",
			201, "", `"weekend":["SATURDAY","SUNDAY"],"closingDays":["2026-12-24","2026-12-31"]`},
		{"replace it", "POST", "/admin/calendars", `{"name":"BANK","weekend":["FRI"]}`, "admin", 200, "", `"weekend":["FRIDAY"],"closingDays":[]`},
		{"a built-in", "POST", "/admin/calendars", `{"name":"target2","weekend":["SAT"]}`, "admin", 409, "name", "built in"},
		{"bad days", "POST", "/admin/calendars", `{"name":"BAD","weekend":["Caturday","SUN"],"closingDays":["2026-12-24","2026-02-30","24.12.2026"]}`, "admin",
			422, "weekend[0],closingDays[1],closingDays[2]", ""},
		{"every day closed", "POST", "/admin/calendars", `{"name":"SHUT","weekend":["MON","TUE","WED","THU","FRI","SAT","SUN"]}`, "admin", 422, "weekend", "at least one day"},
		{"a bad name", "POST", "/admin/calendars", `{"name":"no/slash"}`, "admin", 422, "name", ""},
		{"a rail on the new calendar", "POST", "/admin/rails", `{"name":"INST","type":"PACS008","rateLimitConfig":"inst","calendar":"BANK","cutoff":"24:00"}`, "admin",
			201, "", `"cutoff":"24:00:00","calendar":"BANK"`},
		{"every calendar", "GET", "/admin/calendars", "", "admin", 200, "", `"name":"BANK","builtIn":false`},
		{"a built-in's days of two years", "GET", "/admin/calendars/TARGET2", "", "admin", 200, "",
			fmt.Sprintf(`"%d-12-25","%d-12-26","%d-01-01"`, year, year, year+1)},
		{"an unknown calendar", "GET", "/admin/calendars/NOPE", "", "admin", 404, "", "no calendar NOPE"},

		{"the routing table", "POST", "/admin/routing-rules",
			`{"rules":[{"tenantId":"acme","currency":"EUR","minAmount":"0","maxAmount":"99999.99","source":"FILE","rail":"SEPA"},{"source":"API","rail":"INST"},{"rail":"DEFAULT"}]}`, "admin",
			200, "", `{"rules":[{"tenantId":"acme","currency":"EUR","minAmount":"0","maxAmount":"99999.99","source":"FILE","rail":"SEPA"},{"source":"API","rail":"INST"},{"rail":"DEFAULT"}]}`},
		{"no rules field", "POST", "/admin/routing-rules", `{}`, "admin", 422, "rules", "required"},
		{"amounts not decimal strings", "POST", "/admin/routing-rules", `{"rules":[{"minAmount":10,"maxAmount":"1e3","rail":"SEPA"}]}`, "admin",
			422, "rules[0].minAmount,rules[0].maxAmount", "not as a JSON number"},
		{"bad matchers", "POST", "/admin/routing-rules", `{"rules":[{"rail":"DEFAULT"},{"tenantId":"a b","currency":"eur","source":"FAX","minAmount":"5","maxAmount":"1","rail":"SEPA"}]}`, "admin",
			422, "rules[1].tenantId,rules[1].currency,rules[1].source,rules[1].maxAmount", ""},
		{"a rail that does not exist", "POST", "/admin/routing-rules", `{"rules":[{"rail":"GHOST"}]}`, "admin", 422, "rules[0].rail", "no rail of that name"},
		{"read it back", "GET", "/admin/routing-rules", "", "admin", 200, "", `{"source":"API","rail":"INST"},{"rail":"DEFAULT"}`},

		{"a tenant's cut-off rule", "POST", "/admin/cutoff-rules", `{"tenantId":"acme","rule":"hold"}`, "admin", 200, "", `"tenantId":"acme","rule":"HOLD"`},
		{"another", "POST", "/admin/cutoff-rules", `{"tenantId":"globex","rule":"REJECT"}`, "admin", 200, "", `"rule":"REJECT"`},
		{"a bad tenant and rule", "POST", "/admin/cutoff-rules", `{"tenantId":"a b","rule":"SKIP"}`, "admin", 422, "tenantId,rule", "ROLL, HOLD or REJECT"},
		{"a tenant sets none", "POST", "/admin/cutoff-rules", `{"tenantId":"acme","rule":"ROLL"}`, "acme", 403, "", ""},
		{"the rules", "GET", "/admin/cutoff-rules", "", "admin", 200, "", `"default":"ROLL","rules":[{"tenantId":"acme","rule":"HOLD"`},
		{"a page", "GET", "/admin/cutoff-rules?limit=1", "", "admin", 200, "", `"next":`},
	}
	changes := 0
	for _, s := range steps {
		before := d.count(t, `SELECT count(*) FROM admin_audit`)
		rec, body := d.do(s.method, s.path, s.body, s.token)
		if rec.Code != s.status || !strings.Contains(rec.Body.String(), s.says) || s.fields != "" && problemFields(body) != s.fields {
			t.Errorf("%s: %d %s\nwant %d, naming %q, saying %q", s.name, rec.Code, rec.Body, s.status, s.fields, s.says)
			continue
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d as %s", s.name, rec.Code, rec.Header().Get("Content-Type"))
		}
		after := d.count(t, `SELECT count(*) FROM admin_audit`)
		if changed := s.method == "POST" && rec.Code < 300; changed {
			changes++
			var action, target string
			if err := d.pool.QueryRow(context.Background(), `SELECT action, target FROM admin_audit ORDER BY seq DESC LIMIT 1`).Scan(&action, &target); err != nil ||
				after != before+1 || action != "POST "+s.path || target != s.path {
				t.Errorf("%s: audit %d → %d entries, the last %q %q (%v)", s.name, before, after, action, target, err)
			}
		} else if after != before {
			t.Errorf("%s: %d answered, %d audit entries written", s.name, rec.Code, after-before)
		}
		if got := int(d.flush.n.Load()); got != changes {
			t.Errorf("%s: %d flushes after %d changes", s.name, got, changes)
		}
	}
	// What the refusals did not store.
	if n := d.count(t, `SELECT count(*) FROM rail`); n != 3 {
		t.Errorf("%d rails stored, want DEFAULT, SEPA and INST", n)
	}
	if n := d.count(t, `SELECT count(*) FROM routing_rule`); n != 3 {
		t.Errorf("%d rules stored, want 3", n)
	}
}

// TestRailStatus: a rail's backlog, rate and current business day read
// from Phase A's real slots. acme's 50 and beta's first 20 fit before the
// 16:00 cut-off (Phase A keeps 2 s clear of it): the projected finish is
// within it, with its margin; beta's other 80 are HELD. Then gamma's
// payments past the cut-off roll to the next day's opening: the
// projected finish is past today's cut-off, the margin negative.
func TestRailStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	day := time.Now().UTC().AddDate(0, 0, 3).Truncate(24 * time.Hour)
	d := newRailsDB(t, func() time.Time { return day.Add(10 * time.Hour) })
	if rec, _ := d.do("POST", "/admin/rails", `{"name":"LATE","type":"SEPA_JSON","rateLimitConfig":"sepa","opens":"07:00","cutoff":"16:00"}`, "admin"); rec.Code != 201 {
		t.Fatalf("the rail: %d %s", rec.Code, rec.Body)
	}
	for tenant, rule := range map[string]string{"beta": "HOLD"} {
		if rec, _ := d.do("POST", "/admin/cutoff-rules", fmt.Sprintf(`{"tenantId":%q,"rule":%q}`, tenant, rule), "admin"); rec.Code != 200 {
			t.Fatalf("%s's rule: %d %s", tenant, rec.Code, rec.Body)
		}
	}
	init := payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(d.pool), Queue: queue.New(d.pool), Pacer: d.lim,
		Rails: routing.NewResolver(d.pool, routing.ResolverConfig{})})
	phaseA := func(tenant string, n int, at time.Time) payment.BatchResult {
		t.Helper()
		if _, _, err := account.Create(ctx, d.pool, account.Spec{AccountID: account.Key(tenant, "ACC-1"), ExternalID: "ACC-1", TenantID: tenant,
			Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000)}); err != nil {
			t.Fatal(err)
		}
		res, err := init.InitChunk(ctx, railRequests(tenant, "LATE", n, at), "init-"+tenant)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	cutoff := day.Add(16 * time.Hour)
	phaseA("acme", 50, cutoff.Add(-10*time.Second))
	if res := phaseA("beta", 100, cutoff.Add(-4*time.Second)); res.Held != 80 {
		t.Fatalf("beta's Phase A: %+v, want 80 held", res)
	}
	var st httpapi.RailStatus
	read := func() {
		t.Helper()
		rec, _ := d.do("GET", "/admin/rails/LATE", "", "admin")
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &st) != nil {
			t.Fatalf("the rail: %d %s", rec.Code, rec.Body)
		}
	}
	read()
	b, bd := st.Backlog, st.BusinessDay
	if b.Waiting != 70 || b.Held != 80 || b.FirstSlot == nil || b.LastSlot == nil || b.FirstSlot.Before(cutoff.Add(-10*time.Second)) || !b.FirstSlot.Before(cutoff.Add(-9*time.Second)) ||
		!b.LastSlot.Before(cutoff.Add(-payment.DefaultCutoffGuard)) {
		t.Fatalf("backlog %+v", b)
	}
	if st.Rate == nil || st.Rate.PerSecond != 10 || bd == nil || bd.Date != day.Format(time.DateOnly) || !bd.Opens.Equal(day.Add(7*time.Hour)) ||
		bd.Cutoff == nil || !bd.Cutoff.Equal(cutoff) || bd.ProjectedFinish == nil || !bd.ProjectedFinish.Equal(*b.LastSlot) || bd.PastCutoff ||
		bd.MarginSeconds == nil || *bd.MarginSeconds != int64(math.Floor(cutoff.Sub(*b.LastSlot).Seconds())) || *bd.MarginSeconds < 2 {
		t.Fatalf("rate %+v, business day %+v", st.Rate, bd)
	}

	dayFinish := *bd.ProjectedFinish
	phaseA("gamma", 30, cutoff.Add(-time.Second)) // past the guard: ROLL
	read()
	// The backlog counts the rolled; the day's finish is its own.
	b, bd = st.Backlog, st.BusinessDay
	if b.Waiting != 100 || b.LastSlot == nil || b.LastSlot.Before(day.Add(31*time.Hour)) || bd.PastCutoff ||
		bd.ProjectedFinish == nil || !bd.ProjectedFinish.Equal(dayFinish) {
		t.Fatalf("after a roll: backlog %+v, business day %+v", b, bd)
	}

	// Every rail's figures at once (what the metrics and the console
	// show) are the API's, with the day's own waiting and the rate its
	// finish was worked out at.
	store := httpapi.RailStore{DB: d.pool, Payments: payment.NewStore(d.pool), Pacing: d.lim, Queue: queue.New(d.pool),
		Now: func() time.Time { return day.Add(10 * time.Hour) }}
	all, err := store.RailStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range all {
		names = append(names, x.Name)
		one, err := store.RailStatus(ctx, x.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(one, x) {
			t.Errorf("%s: RailStatuses %+v, RailStatus %+v", x.Name, x, one)
		}
		if x.Name == "LATE" && (x.DayWaiting != 70 || x.Backlog.Waiting != 100 || x.RatePerSecond != 10) {
			t.Errorf("LATE: the day's waiting %d of %d, at %v a second; want 70 of 100 at 10", x.DayWaiting, x.Backlog.Waiting, x.RatePerSecond)
		}
	}
	if !slices.Equal(names, []string{"DEFAULT", "LATE"}) {
		t.Errorf("rails %v, want DEFAULT and LATE", names)
	}
	if _, err := d.lim.Deactivate(ctx, "sepa"); err != nil {
		t.Fatal(err)
	}
	if late, err := store.RailStatus(ctx, "LATE"); err != nil || late.RatePerSecond != 0 || late.Rate == nil || late.Rate.Active {
		t.Errorf("its config deactivated, LATE's rate: %v, %+v (%v)", late.RatePerSecond, late.Rate, err)
	}
}

// railRequests are n payments of a tenant on a rail, requested at `at`.
func railRequests(tenant, rail string, n int, at time.Time) []payment.Request {
	out := make([]payment.Request, n)
	for i := range out {
		out[i] = payment.Request{PaymentID: fmt.Sprintf("%s-%03d", tenant, i), TenantID: tenant, DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR",
			Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"}, RequestedExecutionTime: at, Rail: rail}
	}
	return out
}

// TestRailChangeRoutesAtOnce: a change of the routing table through the
// API applies to this process's intake as soon as it has committed,
// whatever its snapshot's age (here an hour's TTL): the router flushes it.
func TestRailChangeRoutesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newRailsDB(t, nil)
	res := routing.NewResolver(d.pool, routing.ResolverConfig{TTL: time.Hour})
	d.rt = newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Audit: audit.New(audit.Config{DB: d.pool}),
		Rails: httpapi.RailStore{DB: d.pool, Payments: payment.NewStore(d.pool), Pacing: d.lim, Queue: queue.New(d.pool), Resolver: res}}})
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(d.pool), Queue: queue.New(d.pool), Rails: res, Pacer: d.lim})
	routed := func() string {
		t.Helper()
		rs := railRequests("acme", "", 1, time.Now().Add(time.Hour))
		if les, err := svc.CheckBatchFrom(ctx, routing.SourceFile, rs, nil); err != nil || len(les) > 0 {
			t.Fatalf("routing: %+v, %v", les, err)
		}
		return rs[0].Rail
	}
	if got := routed(); got != routing.DefaultRail {
		t.Fatalf("before: routed to %s", got)
	}
	for _, step := range []struct{ path, body string }{
		{"/admin/rails", `{"name":"SEPA","type":"SEPA_JSON","rateLimitConfig":"sepa"}`},
		{"/admin/routing-rules", `{"rules":[{"source":"FILE","rail":"SEPA"},{"rail":"DEFAULT"}]}`},
	} {
		if rec, _ := d.do("POST", step.path, step.body, "admin"); rec.Code >= 300 {
			t.Fatalf("%s: %d %s", step.path, rec.Code, rec.Body)
		}
	}
	if got := routed(); got != "SEPA" {
		t.Fatalf("after the change: routed to %s, want SEPA at once", got)
	}
}

// TestControlSettingsRoutes: the tenants' control settings over HTTP on
// the real store: the defaults until set; a change sets the fields it
// gives (actions in any case), keeps the others and is audited; bad
// input is a 4xx problem naming each field and changes nothing; a
// tenant's token is refused.
func TestControlSettingsRoutes(t *testing.T) {
	t.Parallel()
	d := newRailsDB(t, nil)
	steps := []struct {
		name, method, path, body, token string
		status                          int
		fields, says                    string
	}{
		{"the defaults", "GET", "/admin/control-settings", "", "admin", 200, "",
			`{"default":{"duplicateAction":"WARN","duplicateWindowDays":7,"screeningOnError":"HOLD"},"settings":[]}`},
		{"hold duplicates", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateAction":"hold"}`, "admin", 200, "",
			`"tenantId":"acme","duplicateAction":"HOLD","duplicateWindowDays":7,"screeningOnError":"HOLD","updatedAt":`},
		{"a window, the rest kept", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateWindowDays":30,"screeningOnError":"Reject"}`, "admin", 200, "",
			`"duplicateAction":"HOLD","duplicateWindowDays":30,"screeningOnError":"REJECT"`},
		{"every field wrong", "POST", "/admin/control-settings", `{"tenantId":"a b","duplicateAction":"IGNORE","duplicateWindowDays":0,"screeningOnError":"PASS"}`, "admin",
			422, "tenantId,duplicateAction,duplicateWindowDays,screeningOnError", "WARN, HOLD, REJECT or OFF"},
		{"a window too long", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateWindowDays":91}`, "admin", 422, "duplicateWindowDays", "from 1 to 90"},
		{"nothing to set", "POST", "/admin/control-settings", `{"tenantId":"acme"}`, "admin", 422, "duplicateAction", "nothing to set"},
		{"no tenant", "POST", "/admin/control-settings", `{"duplicateAction":"OFF"}`, "admin", 422, "tenantId", ""},
		{"a window as text", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateWindowDays":"7"}`, "admin", 400, "duplicateWindowDays", ""},
		{"a fractional window", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateWindowDays":1.5}`, "admin", 400, "duplicateWindowDays", ""},
		{"a huge window", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateWindowDays":1e30}`, "admin", 400, "duplicateWindowDays", ""},
		{"an unknown field", "POST", "/admin/control-settings", `{"tenantId":"acme","screening":"ALLOW"}`, "admin", 400, "screening", ""},
		{"malformed JSON", "POST", "/admin/control-settings", `{"tenantId":`, "admin", 400, "", "Malformed JSON"},
		{"a tenant sets none", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateAction":"OFF"}`, "acme", 403, "", ""},
		{"a tenant lists none", "GET", "/admin/control-settings", "", "acme", 403, "", ""},
		{"another tenant", "POST", "/admin/control-settings", `{"tenantId":"globex","duplicateAction":"OFF"}`, "admin", 200, "", `"duplicateAction":"OFF"`},
		{"the settings", "GET", "/admin/control-settings", "", "admin", 200, "",
			`"settings":[{"tenantId":"acme","duplicateAction":"HOLD","duplicateWindowDays":30,"screeningOnError":"REJECT"`},
		{"a page", "GET", "/admin/control-settings?limit=1", "", "admin", 200, "", `"next":`},
	}
	for _, s := range steps {
		before := d.count(t, `SELECT count(*) FROM admin_audit`)
		rec, body := d.do(s.method, s.path, s.body, s.token)
		if rec.Code != s.status || !strings.Contains(rec.Body.String(), s.says) || s.fields != "" && problemFields(body) != s.fields {
			t.Errorf("%s: %d %s\nwant %d, naming %q, saying %q", s.name, rec.Code, rec.Body, s.status, s.fields, s.says)
			continue
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d as %s", s.name, rec.Code, rec.Header().Get("Content-Type"))
		}
		after := d.count(t, `SELECT count(*) FROM admin_audit`)
		if changed := s.method == "POST" && rec.Code < 300; changed != (after == before+1) || !changed && after != before {
			t.Errorf("%s: %d answered, %d audit entries written", s.name, rec.Code, after-before)
		}
	}
	got, err := payment.NewStore(d.pool).ScreeningOnError(context.Background(), "acme")
	if err != nil || got != payment.ScreeningReject {
		t.Fatalf("screening on error read back: %s, %v", got, err)
	}
}
