package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
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

// leversDB is a database with payments waiting on two rails, paced by
// their configs, and the router on it as serve wires it: acme's acme-000
// to acme-002 on SEPA (acme-000 and acme-001 the file b-1), globex's
// globex-000 and globex-001 on SEPA, acme's inst-000 on INST, and acme's
// acme-done, DELIVERED.
type leversDB struct {
	pool *pgxpool.Pool
	svc  *payment.Service
	rt   *httpapi.Router
}

func newLeversDB(t *testing.T) *leversDB {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	must(payment.RegisterItemType(ctx, q))
	for _, c := range []pacing.Limit{{Name: "sepa", MaxPerWindow: 10, Window: time.Second, Headroom: 1000},
		{Name: "inst", MaxPerWindow: 5, Window: time.Second, Headroom: 1000}} {
		_, err := lim.PutConfig(ctx, c)
		must(err)
	}
	for _, r := range []routing.Rail{{Name: "SEPA", Type: routing.TypeSEPAJSON, PacingConfig: "sepa", Active: true},
		{Name: "INST", Type: routing.TypeSEPAJSON, PacingConfig: "inst", Active: true}} {
		_, err := routing.PutRail(ctx, pool, r)
		must(err)
	}
	for _, tenant := range []string{"acme", "globex"} {
		_, _, err := account.Create(ctx, pool, account.Spec{AccountID: account.Key(tenant, "ACC-1"), ExternalID: "ACC-1", TenantID: tenant,
			Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)})
		must(err)
	}
	store, rails := payment.NewStore(pool), routing.NewResolver(pool, routing.ResolverConfig{})
	init := payment.NewInitActivities(payment.InitConfig{Store: store, Queue: q, Pacer: lim, Rails: rails})
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	inst := railRequests("acme", "INST", 1, at)
	inst[0].PaymentID = "inst-000"
	done := railRequests("acme", "SEPA", 1, at)
	done[0].PaymentID = "acme-done"
	for i, rs := range [][]payment.Request{railRequests("acme", "SEPA", 3, at), railRequests("globex", "SEPA", 2, at), inst, done} {
		if res, err := init.InitChunk(ctx, rs, fmt.Sprintf("init-%d", i)); err != nil || res.Scheduled != len(rs) {
			t.Fatalf("chunk %d: %+v, %v", i, res, err)
		}
	}
	_, err := pool.Exec(ctx, `UPDATE payments SET status = 'DELIVERED' WHERE payment_id = $1`, payment.Key("acme", "acme-done"))
	must(err)
	_, err = pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks) VALUES ('b-1', '{acme}', 2, 1)`)
	must(err)
	_, err = pool.Exec(ctx, `INSERT INTO payment_batch_parts (batch_id, part, payment_ids) VALUES ('b-1', 0, $1)`,
		[]string{payment.Key("acme", "acme-000"), payment.Key("acme", "acme-001")})
	must(err)

	d := &leversDB{pool: pool, svc: payment.NewService(payment.ServiceConfig{Store: store, Queue: q, Rails: rails, Pacer: lim})}
	d.rt = leversRouter(t, pool, d.svc)
	return d
}

// leversRouter is the router serve wires on svc, with tokens: admin, and
// the tenants acme and globex.
func leversRouter(t testing.TB, pool *pgxpool.Pool, svc *payment.Service) *httpapi.Router {
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin":  {TokenID: "tok_a", Name: "ops", Scopes: []auth.Scope{auth.Admin}},
		"acme":   {TokenID: "tok_b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
		"globex": {TokenID: "tok_c", TenantID: "globex", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
	}, Services: httpapi.Services{Audit: audit.New(audit.Config{DB: pool}), Payments: svc, Levers: svc}})
	return rt
}

func (d *leversDB) one(t *testing.T, sql string, args ...any) string {
	t.Helper()
	var v string
	if err := d.pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// state is what the levers change: the pauses, each payment's priority
// and mark, and its queue item's status and time.
func (d *leversDB) state(t *testing.T) string {
	t.Helper()
	return d.one(t, `SELECT coalesce((SELECT string_agg(scope || ':' || scope_id, ',' ORDER BY scope, scope_id) FROM payment_pause), '') || ' | ' ||
		string_agg(p.external_id || '=' || p.priority || '/' || coalesce(p.paused_by, '-') || '/' || coalesce(q.queue_status, '-') || '@' ||
			coalesce(q.scheduled_exec_time::text, '-'), ',' ORDER BY p.external_id)
		FROM payments p LEFT JOIN exec_queue q ON q.item_type = 'PAYMENT' AND q.item_id = p.payment_id`)
}

// audited is the audit log's entries, oldest first: action, target and
// the count the lever recorded ("action target key=n").
func (d *leversDB) audited(t *testing.T) []string {
	t.Helper()
	rows, err := d.pool.Query(context.Background(), `SELECT action, target, detail FROM admin_audit ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var action, target string
		var detail map[string]any
		if err := rows.Scan(&action, &target, &detail); err != nil {
			t.Fatal(err)
		}
		e := action + " " + target
		for _, k := range []string{"payments", "moved", "changed"} {
			if n, ok := detail[k]; ok {
				e += fmt.Sprintf(" %s=%v", k, n)
			}
		}
		out = append(out, e)
	}
	return out
}

func (d *leversDB) do(method, path, body, token string) (*httptest.ResponseRecorder, map[string]any) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(httpapi.OperatorHeader, "ops-anna")
	rec := httptest.NewRecorder()
	d.rt.ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec, out
}

// leverStep is one request of a lever and what it must do: its status,
// the fields its problem names, what its answer holds (JSON fragments),
// the audit entry it writes ("" for none; a refusal writes none), and
// whether it changes anything.
type leverStep struct {
	name, method, path, body, token string
	want                            int
	fields                          string
	answer                          []string
	entry                           string
	changes                         bool
	check                           func(t *testing.T, d *leversDB)
}

// runLeverSteps runs steps in order on d: each answers as it must, a
// refusal changes nothing and writes no entry, a change writes its one.
func runLeverSteps(t *testing.T, d *leversDB, steps []leverStep) {
	t.Helper()
	for _, s := range steps {
		before, entries := d.state(t), d.audited(t)
		rec, out := d.do(s.method, s.path, s.body, s.token)
		if rec.Code != s.want {
			t.Fatalf("%s: %d %s, want %d", s.name, rec.Code, rec.Body, s.want)
		}
		if s.want >= 400 && (rec.Header().Get("Content-Type") != "application/problem+json" || problemFields(out) != s.fields) {
			t.Errorf("%s: %s %s, want a problem naming %q", s.name, rec.Header().Get("Content-Type"), rec.Body, s.fields)
		}
		for _, a := range s.answer {
			if !strings.Contains(rec.Body.String(), a) {
				t.Errorf("%s: %s, want %s in it", s.name, rec.Body, a)
			}
		}
		after, got := d.state(t), d.audited(t)
		if changed := after != before; changed != s.changes {
			t.Errorf("%s: changed %t, want %t:\n%s\n→\n%s", s.name, changed, s.changes, before, after)
		}
		switch {
		case s.entry == "" && len(got) != len(entries):
			t.Errorf("%s: audit entries %v, want none new", s.name, got[len(entries):])
		case s.entry != "" && (len(got) != len(entries)+1 || got[len(got)-1] != s.entry):
			t.Errorf("%s: audit entries %v, want one new: %s", s.name, got[len(entries):], s.entry)
		}
		if s.check != nil {
			s.check(t, d)
		}
	}
}

// paused counts the payments marked paused by tag and, of them, those
// whose queue items are PARKED.
func paused(t *testing.T, d *leversDB, tag string) string {
	t.Helper()
	return d.one(t, `SELECT count(*) || ' parked ' || count(*) FILTER (WHERE q.queue_status = 'PARKED')
		FROM payments p LEFT JOIN exec_queue q ON q.item_type = 'PAYMENT' AND q.item_id = p.payment_id WHERE p.paused_by = $1`, tag)
}

// TestPausesOverHTTP: an operator pauses a tenant, a file and a rail and
// resumes them, on the real stores; a paused payment stays SCHEDULED,
// its queue item PARKED, and the resume lets it go again, unless another
// pause holds it too. Every change
// is audited in its own transaction; every refusal (a bad scope or id,
// an unknown file, a scope not paused, a tenant's token) is a problem
// naming what is wrong, and changes and records nothing.
func TestPausesOverHTTP(t *testing.T) {
	t.Parallel()
	d := newLeversDB(t)
	wantPaused := func(tag, want string) func(t *testing.T, d *leversDB) {
		return func(t *testing.T, d *leversDB) {
			t.Helper()
			if got := paused(t, d, tag); got != want {
				t.Errorf("paused by %s: %s, want %s", tag, got, want)
			}
			if st := d.one(t, `SELECT string_agg(DISTINCT status, ',') FROM payments WHERE external_id <> 'acme-done'`); st != "SCHEDULED" {
				t.Errorf("statuses %s, want SCHEDULED alone", st)
			}
		}
	}
	runLeverSteps(t, d, []leverStep{
		{name: "a tenant's token", method: "POST", path: "/admin/pauses", body: `{"scope":"TENANT","id":"acme"}`, token: "acme", want: 403},
		{name: "a bad scope", method: "POST", path: "/admin/pauses", body: `{"scope":"ACCOUNT","id":"acme"}`, token: "admin", want: 422, fields: "scope"},
		{name: "a lower-case scope", method: "POST", path: "/admin/pauses", body: `{"scope":"tenant","id":"acme"}`, token: "admin", want: 422, fields: "scope"},
		{name: "no id", method: "POST", path: "/admin/pauses", body: `{"scope":"TENANT"}`, token: "admin", want: 422, fields: "id"},
		{name: "a bad tenant id", method: "POST", path: "/admin/pauses", body: `{"scope":"TENANT","id":"ac me"}`, token: "admin", want: 422, fields: "id"},
		{name: "a bad rail name", method: "POST", path: "/admin/pauses", body: `{"scope":"RAIL","id":"SEPA/1"}`, token: "admin", want: 422, fields: "id"},
		{name: "an unknown field", method: "POST", path: "/admin/pauses", body: `{"scope":"TENANT","id":"acme","until":"noon"}`, token: "admin", want: 400, fields: "until"},
		{name: "an unknown file", method: "POST", path: "/admin/pauses", body: `{"scope":"BATCH","id":"b-nope"}`, token: "admin", want: 404},
		{name: "nothing paused to list", method: "GET", path: "/admin/pauses", token: "admin", want: 200, answer: []string{`{"pauses":[]}`}},
		{name: "nothing paused to resume", method: "DELETE", path: "/admin/pauses/TENANT/acme", token: "admin", want: 404},

		{name: "pause acme", method: "POST", path: "/admin/pauses", body: `{"scope":"TENANT","id":"acme"}`, token: "admin", want: 201,
			answer: []string{`"payments":4`, `"parked":4`, `"pause":{"scope":"TENANT","id":"acme","pausedAt":`},
			entry:  "POST /admin/pauses /admin/pauses payments=4", changes: true, check: wantPaused("TENANT:acme", "4 parked 4")},
		{name: "pause acme again: nothing came since", method: "POST", path: "/admin/pauses", body: `{"scope":"TENANT","id":"acme"}`, token: "admin", want: 201,
			answer: []string{`"payments":0`, `"parked":0`}, entry: "POST /admin/pauses /admin/pauses payments=0"},
		{name: "list acme's pause", method: "GET", path: "/admin/pauses", token: "admin", want: 200, answer: []string{`{"pauses":[{"scope":"TENANT","id":"acme","pausedAt":"`}},
		{name: "a tenant's token lists none", method: "GET", path: "/admin/pauses", token: "acme", want: 403},
		{name: "a tenant's token resumes none", method: "DELETE", path: "/admin/pauses/TENANT/acme", token: "acme", want: 403},
		{name: "resume a bad scope", method: "DELETE", path: "/admin/pauses/ACCOUNT/acme", token: "admin", want: 400, fields: "scope"},
		{name: "resume a bad id", method: "DELETE", path: "/admin/pauses/RAIL/a%20b", token: "admin", want: 400, fields: "id"},
		{name: "resume another tenant", method: "DELETE", path: "/admin/pauses/TENANT/globex", token: "admin", want: 404},
		{name: "resume acme", method: "DELETE", path: "/admin/pauses/TENANT/acme", token: "admin", want: 200,
			answer: []string{`"moved":4`, `"claimed":0`, `"firstSlot":"`}, entry: "DELETE /admin/pauses/{scope}/{id} /admin/pauses/TENANT/acme moved=4", changes: true,
			check: func(t *testing.T, d *leversDB) {
				if got := d.one(t, `SELECT count(*)::text FROM payments p JOIN exec_queue q ON q.item_id = p.payment_id
					WHERE p.paused_by IS NULL AND p.status = 'SCHEDULED' AND q.queue_status = 'READY'`); got != "6" {
					t.Errorf("%s waiting READY after the resume, want all 6", got)
				}
			}},
		{name: "resume acme again", method: "DELETE", path: "/admin/pauses/TENANT/acme", token: "admin", want: 404},

		{name: "pause the file", method: "POST", path: "/admin/pauses", body: `{"scope":"BATCH","id":"b-1"}`, token: "admin", want: 201,
			answer: []string{`"payments":2`, `"parked":2`}, entry: "POST /admin/pauses /admin/pauses payments=2", changes: true, check: wantPaused("BATCH:b-1", "2 parked 2")},
		{name: "pause the rail", method: "POST", path: "/admin/pauses", body: `{"scope":"RAIL","id":"SEPA"}`, token: "admin", want: 201,
			answer: []string{`"payments":3`}, entry: "POST /admin/pauses /admin/pauses payments=3", changes: true, check: wantPaused("RAIL:SEPA", "3 parked 3")},
		{name: "list both", method: "GET", path: "/admin/pauses", token: "admin", want: 200,
			answer: []string{`{"scope":"BATCH","id":"b-1","pausedAt":"`, `{"scope":"RAIL","id":"SEPA","pausedAt":"`}},
		// The file's payments are on the paused rail: resumed, they stay
		// held by the rail's pause, unqueued, until it is resumed too.
		{name: "resume the file", method: "DELETE", path: "/admin/pauses/BATCH/b-1", token: "admin", want: 200,
			answer: []string{`"moved":0`, `"paused":2`}, entry: "DELETE /admin/pauses/{scope}/{id} /admin/pauses/BATCH/b-1 moved=2", changes: true,
			check: wantPaused("RAIL:SEPA", "5 parked 5")},
		{name: "resume the rail", method: "DELETE", path: "/admin/pauses/RAIL/SEPA", token: "admin", want: 200,
			answer: []string{`"moved":5`}, entry: "DELETE /admin/pauses/{scope}/{id} /admin/pauses/RAIL/SEPA moved=5", changes: true, check: wantPaused("RAIL:SEPA", "0 parked 0")},
	})
}

// TestResumeWithoutRails: a server without rails pauses (nothing to pace
// then) but cannot resume: 503, the pause kept, nothing recorded.
func TestResumeWithoutRails(t *testing.T) {
	t.Parallel()
	d := newLeversDB(t)
	if _, err := d.svc.Pause(context.Background(), payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	d.rt = leversRouter(t, d.pool, payment.NewService(payment.ServiceConfig{Store: d.svc.Store(), Queue: d.svc.Queue(), Pacer: pacing.New(pacing.Config{Pool: d.pool})}))
	runLeverSteps(t, d, []leverStep{
		{name: "resume", method: "DELETE", path: "/admin/pauses/TENANT/acme", token: "admin", want: 503},
	})
}

// TestPriorityOverHTTP: a tenant changes the priority of its waiting
// payments, one or a file's, on the real stores (an operator's token
// names the tenant, as a cancel does); the list filters by priority. A
// change is audited in its own transaction (none when nothing changed);
// a bad priority, another tenant's payment or file, an unknown one, or
// one that no longer waits is a problem, and changes and records
// nothing.
func TestPriorityOverHTTP(t *testing.T) {
	t.Parallel()
	d := newLeversDB(t)
	prio := func(want string) func(t *testing.T, d *leversDB) {
		return func(t *testing.T, d *leversDB) {
			t.Helper()
			if got := d.one(t, `SELECT string_agg(external_id || '=' || priority, ',' ORDER BY external_id) FROM payments WHERE tenant_id = 'acme'`); got != want {
				t.Errorf("acme's priorities %s, want %s", got, want)
			}
		}
	}
	const pay = "/v1/payments/acme-002/priority"
	runLeverSteps(t, d, []leverStep{
		{name: "a bad priority", method: "POST", path: pay, body: `{"priority":"URGENT"}`, token: "acme", want: 422, fields: "priority"},
		{name: "a lower-case priority", method: "POST", path: pay, body: `{"priority":"high"}`, token: "acme", want: 422, fields: "priority"},
		{name: "no priority", method: "POST", path: pay, body: `{}`, token: "acme", want: 422, fields: "priority"},
		{name: "not JSON", method: "POST", path: pay, body: `{"priority":`, token: "acme", want: 400},
		{name: "another tenant's payment", method: "POST", path: pay, body: `{"priority":"HIGH"}`, token: "globex", want: 404},
		{name: "naming another tenant", method: "POST", path: pay + "?tenantId=acme", body: `{"priority":"HIGH"}`, token: "globex", want: 403, fields: "tenantId"},
		{name: "an operator names no tenant", method: "POST", path: pay, body: `{"priority":"HIGH"}`, token: "admin", want: 422, fields: "tenantId"},
		{name: "an unknown payment", method: "POST", path: "/v1/payments/acme-999/priority", body: `{"priority":"HIGH"}`, token: "acme", want: 404},
		{name: "a payment that ended", method: "POST", path: "/v1/payments/acme-done/priority", body: `{"priority":"HIGH"}`, token: "acme", want: 409},

		{name: "acme-002 HIGH", method: "POST", path: pay, body: `{"priority":"HIGH"}`, token: "acme", want: 200,
			answer: []string{`"paymentId":"acme-002"`, `"tenantId":"acme"`, `"priority":"HIGH"`, `"changed":1`, `"repaced":{"moved":`},
			entry:  "POST /v1/payments/{id}/priority /v1/payments/acme-002/priority changed=1", changes: true,
			check: prio("acme-000=NORMAL,acme-001=NORMAL,acme-002=HIGH,acme-done=NORMAL,inst-000=NORMAL")},
		{name: "acme-002 HIGH again: nothing changes", method: "POST", path: pay, body: `{"priority":"HIGH"}`, token: "acme", want: 200,
			answer: []string{`"changed":0`}},
		{name: "an operator's, naming the tenant", method: "POST", path: "/v1/payments/inst-000/priority?tenantId=acme", body: `{"priority":"LOW"}`, token: "admin", want: 200,
			answer: []string{`"changed":1`}, entry: "POST /v1/payments/{id}/priority /v1/payments/inst-000/priority changed=1", changes: true,
			check: prio("acme-000=NORMAL,acme-001=NORMAL,acme-002=HIGH,acme-done=NORMAL,inst-000=LOW")},

		{name: "the file: a bad priority", method: "POST", path: "/v1/payment-batches/b-1/priority", body: `{"priority":"URGENT"}`, token: "acme", want: 422, fields: "priority"},
		{name: "the file: another tenant's", method: "POST", path: "/v1/payment-batches/b-1/priority", body: `{"priority":"LOW"}`, token: "globex", want: 404},
		{name: "the file: unknown", method: "POST", path: "/v1/payment-batches/b-nope/priority", body: `{"priority":"LOW"}`, token: "acme", want: 404},
		{name: "the file LOW", method: "POST", path: "/v1/payment-batches/b-1/priority", body: `{"priority":"LOW"}`, token: "acme", want: 200,
			answer: []string{`"batchId":"b-1"`, `"priority":"LOW"`, `"changed":2`}, entry: "POST /v1/payment-batches/{id}/priority /v1/payment-batches/b-1/priority changed=2", changes: true,
			check: prio("acme-000=LOW,acme-001=LOW,acme-002=HIGH,acme-done=NORMAL,inst-000=LOW")},
		{name: "the file HIGH, by an operator", method: "POST", path: "/v1/payment-batches/b-1/priority", body: `{"priority":"HIGH"}`, token: "admin", want: 200,
			answer: []string{`"changed":2`}, entry: "POST /v1/payment-batches/{id}/priority /v1/payment-batches/b-1/priority changed=2", changes: true,
			check: prio("acme-000=HIGH,acme-001=HIGH,acme-002=HIGH,acme-done=NORMAL,inst-000=LOW")},

		{name: "list HIGH", method: "GET", path: "/v1/payments?priority=HIGH", token: "acme", want: 200,
			answer: []string{`"paymentId":"acme-000"`, `"paymentId":"acme-001"`, `"paymentId":"acme-002"`, `"priority":"HIGH"`},
			check: func(t *testing.T, d *leversDB) {
				rec, out := d.do("GET", "/v1/payments?priority=HIGH", "", "acme")
				if ps, _ := out["payments"].([]any); rec.Code != 200 || len(ps) != 3 {
					t.Errorf("HIGH: %s, want acme-000 to acme-002", rec.Body)
				}
				if rec, _ := d.do("GET", "/v1/payments/inst-000", "", "acme"); !strings.Contains(rec.Body.String(), `"priority":"LOW"`) {
					t.Errorf("inst-000: %s, want its priority LOW", rec.Body)
				}
			}},
		{name: "list a bad priority", method: "GET", path: "/v1/payments?priority=URGENT", token: "acme", want: 422, fields: "priority"},
	})
}

// TestPriorityOnSubmission: a payment's priority reaches the service as
// sent, a single payment's or a file line's; a file's priority
// (?priority=) is that of its payments that name none, a pain.001's
// InstrPrty among those that do; a bad one is a problem naming priority
// and starts nothing.
func TestPriorityOnSubmission(t *testing.T) {
	t.Parallel()
	painFile, err := os.ReadFile("../bulkfile/testdata/pain001.xml")
	if err != nil {
		t.Fatal(err)
	}
	// pay-x1's transaction asks NORM (NORMAL) of the bank; pay-x2 asks
	// nothing.
	painNorm := strings.Replace(string(painFile), "<PmtId><EndToEndId>pay-x1</EndToEndId></PmtId>",
		"<PmtId><EndToEndId>pay-x1</EndToEndId></PmtId><PmtTpInf><InstrPrty>NORM</InstrPrty></PmtTpInf>", 1)
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	pay := func(id, extra string) string {
		return `{"paymentId":"` + id + `","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR",` +
			`"creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"` + future + `"` + extra + `}`
	}
	for _, tt := range []struct {
		name, path, ctype, body string
		want                    int
		fields                  string
		priorities              string // id=priority as the service got them
	}{
		{"a payment's", "/v1/payments", "application/json", pay("p-1", `,"priority":"HIGH"`), 202, "", "p-1=HIGH"},
		{"a payment naming none", "/v1/payments", "application/json", pay("p-1", ""), 202, "", "p-1="},
		{"a payment's, bad", "/v1/payments", "application/json", pay("p-1", `,"priority":"URGENT"`), 422, "priority", ""},
		{"a file's lines", "/v1/payment-batches", "application/x-ndjson", pay("p-1", `,"priority":"LOW"`) + "\n" + pay("p-2", "") + "\n", 202, "", "p-1=LOW p-2="},
		{"a file's priority", "/v1/payment-batches?priority=HIGH", "application/x-ndjson", pay("p-1", `,"priority":"LOW"`) + "\n" + pay("p-2", "") + "\n", 202, "",
			"p-1=LOW p-2=HIGH"},
		{"a file's priority, bad", "/v1/payment-batches?priority=high", "application/x-ndjson", pay("p-1", "") + "\n", 400, "priority", ""},
		{"a file's line, bad", "/v1/payment-batches?atomic=true", "application/x-ndjson", pay("p-1", `,"priority":"URGENT"`) + "\n", 422, "line 1: priority", ""},
		{"a pain.001 with the file's priority", "/v1/payment-batches?priority=LOW&tenantId=acme", "application/xml", painNorm, 202, "", "pay-x1=NORMAL pay-x2=LOW"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pays := &validatingPayments{fakePayments{byID: map[string]payment.Request{}}}
			rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Payments: pays}})
			req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ctype)
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			var out map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &out)
			if rec.Code != tt.want || problemFields(out) != tt.fields {
				t.Fatalf("%d %s, want %d naming %q", rec.Code, rec.Body, tt.want, tt.fields)
			}
			var got []string
			for id, r := range pays.byID {
				got = append(got, id+"="+string(r.Priority))
			}
			slices.Sort(got)
			if strings.Join(got, " ") != tt.priorities {
				t.Errorf("the service got %v, want %s", got, tt.priorities)
			}
		})
	}
}

// TestEventSchemaNamesPriorities: the payment event's published schema
// describes data.priority with every priority a payment can have, as
// the API's contract does.
func TestEventSchemaNamesPriorities(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/schemas/payment-event.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Data struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"data"`
		} `json:"properties"`
	}
	var api struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &api); err != nil {
		t.Fatal(err)
	}
	want := []string{string(payment.PriorityHigh), string(payment.PriorityNormal), string(payment.PriorityLow)}
	if got := doc.Properties.Data.Properties["priority"].Enum; !slices.Equal(got, want) {
		t.Errorf("the event schema's data.priority: %v, want %v", got, want)
	}
	if got := api.Components.Schemas["Priority"].Enum; !slices.Equal(got, want) {
		t.Errorf("the contract's Priority: %v, want %v", got, want)
	}
}
