package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
	"github.com/paydispatch/paydispatch/webhook"
)

// chore is a process with one step, which fails for the business key
// "fail".
type chore struct {
	Note string `json:"note,omitempty"`
}

func choreDefinition() process.Definition[chore] {
	return process.Definition[chore]{
		Type: "Chore", Initial: "Do",
		Next: func(string, chore) (string, error) { return "", nil },
		Steps: map[string]process.Step[chore]{"Do": {Handler: func(_ context.Context, _ pgx.Tx, in process.StepInput, _ *chore) error {
			if in.BusinessKey == "fail" {
				return process.Failf("NO", "the chore cannot be done")
			}
			return nil
		}}},
	}
}

// processAPI is the process routes on the database, as serve wires them.
type processAPI struct {
	*process.Operator
	DB process.DB
}

func (p processAPI) Get(ctx context.Context, id uuid.UUID) (process.Instance, error) {
	return process.Get(ctx, p.DB, id)
}

func (p processAPI) Log(ctx context.Context, id uuid.UUID) ([]process.LogEntry, error) {
	return process.Log(ctx, p.DB, id)
}

// auditedDB is a database holding something for every audited route to
// change, and the router on it with the real stores and audit log, as
// serve wires them.
type auditedDB struct {
	pool     *pgxpool.Pool
	rt       *httpapi.Router
	endpoint uuid.UUID
	process  map[string]uuid.UUID // by business key: "new", "fail" (FAILED), "paused"
	letter   string               // a dead queue item's letter id
	held     string               // a HELD payment's key
	rejected string               // another, for an operator's rejection
}

// more adds services to the router's, on the test's database.
func newAuditedDB(t *testing.T, more ...func(*httpapi.Services, *pgxpool.Pool)) *auditedDB {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	d := &auditedDB{pool: pool, process: map[string]uuid.UUID{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	c := queue.DefaultSettings("JOB", "JobWorkflow", "jobs")
	c.MaxDispatchRetries = 1
	_, err := q.RegisterItemType(ctx, c)
	must(err)
	must(payment.RegisterItemType(ctx, q))
	_, err = lim.PutConfig(ctx, pacing.Limit{Name: "fifty", MaxPerWindow: 50, Window: time.Second, Headroom: 100})
	must(err)

	hooks := webhook.NewStore(webhook.StoreConfig{DB: pool})
	ep, _, err := hooks.Register(ctx, webhook.NewEndpoint{TenantID: "acme", URL: "https://hooks.acme.example/pd"})
	must(err)
	d.endpoint = ep.ID
	_, err = pool.Exec(ctx, `INSERT INTO webhook_deliveries (endpoint_id, tenant_id, subject, event_id, event_type, payload, state)
		VALUES ($1, 'acme', 'acme/p-0', gen_random_uuid(), 'payment.scheduled', '{}', 'DEAD')`, ep.ID)
	must(err)

	// Payments waiting for their slot: p-1 alone, p-2 in the file b-1,
	// p-3 of another tenant.
	store := payment.NewStore(pool)
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	for _, p := range []struct{ id, tenant string }{{"p-1", "acme"}, {"p-2", "acme"}, {"p-3", "globex"}} {
		r := payment.Request{PaymentID: p.id, TenantID: p.tenant, DebtorAccount: "ACC-1", Amount: "10.00", Currency: "EUR",
			Creditor: payment.Creditor{Name: "Jane Doe", IBAN: "DE89370400440532013000"}, RequestedExecutionTime: at}
		_, err := store.Record(ctx, r, &payment.Money{Amount: decimal.RequireFromString("10.00"), Currency: "EUR"}, payment.StatusScheduled, "", &at)
		must(err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks) VALUES ('b-1', '{acme}', 1, 1);
		INSERT INTO payment_batch_parts (batch_id, part, payment_ids) VALUES ('b-1', 0, ARRAY['`+payment.Key("acme", "p-2")+`'])`)
	must(err)

	// A rail that cuts off at noon, and holdco's payment past it, HELD
	// by holdco's rule.
	_, err = routing.PutRail(ctx, pool, routing.Rail{Name: "NOON", Type: routing.TypeSEPAJSON, PacingConfig: "fifty", Cutoff: 12 * time.Hour, Active: true})
	must(err)
	// EVE: repco's rail (below).
	_, err = lim.PutConfig(ctx, pacing.Limit{Name: "forty", MaxPerWindow: 40, Window: time.Second, Headroom: 100})
	must(err)
	_, err = routing.PutRail(ctx, pool, routing.Rail{Name: "EVE", Type: routing.TypeSEPAJSON, PacingConfig: "forty", Cutoff: 18 * time.Hour, Active: true})
	must(err)
	_, err = routing.SetTenantCutoffRule(ctx, pool, "holdco", routing.Hold)
	must(err)
	_, _, err = account.Create(ctx, pool, account.Spec{AccountID: account.Key("holdco", "ACC-1"), ExternalID: "ACC-1", TenantID: "holdco",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)})
	must(err)
	rails := routing.NewResolver(pool, routing.ResolverConfig{})
	noon := time.Now().UTC().AddDate(0, 0, 2).Truncate(24 * time.Hour).Add(12 * time.Hour)
	init := payment.NewInitActivities(payment.InitConfig{Store: store, Queue: q, Pacer: lim, Rails: rails})
	if res, err := init.InitChunk(ctx, railRequests("holdco", "NOON", 2, noon.Add(-time.Second)), "init-holdco"); err != nil || res.Held != 2 {
		t.Fatalf("holdco's payments: %+v, %v", res, err)
	}
	d.held, d.rejected = payment.Key("holdco", "holdco-000"), payment.Key("holdco", "holdco-001")
	// acme's payment waiting on NOON before its cut-off, for a lever.
	_, _, err = account.Create(ctx, pool, account.Spec{AccountID: account.Key("acme", "ACC-1"), ExternalID: "ACC-1", TenantID: "acme",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)})
	must(err)
	if res, err := init.InitChunk(ctx, railRequests("acme", "NOON", 1, noon.Add(-2*time.Hour)), "init-acme-noon"); err != nil || res.Scheduled != 1 {
		t.Fatalf("acme's payment on NOON: %+v, %v", res, err)
	}
	// acme's payment awaiting one approval, submitted by acme's token,
	// for the approver's approve and deny.
	awaiting := railRequests("acme", "NOON", 1, noon.Add(-2*time.Hour))
	awaiting[0].PaymentID = "acme-await"
	_, err = pool.Exec(ctx, `INSERT INTO payment_approval_requirements (payment_id, tenant_id, rule, approvals, submitter)
		VALUES ($1, 'acme', 'big', 1, 'tok_b')`, payment.Key("acme", "acme-await"))
	must(err)
	approvals := payment.NewInitActivities(payment.InitConfig{Store: store, Queue: q, Pacer: lim, Rails: rails,
		Controls: []payment.Control{payment.NewApprovalControl(store)}})
	if res, err := approvals.InitChunk(ctx, awaiting, "init-acme-await"); err != nil || res.AwaitingApproval != 1 {
		t.Fatalf("acme's payment awaiting approval: %+v, %v", res, err)
	}
	// repco's two payments on EVE, a rail of their own (the pause and the
	// priorities move NOON's), the first cancelled: the repace moves the
	// second into its slot.
	_, _, err = account.Create(ctx, pool, account.Spec{AccountID: account.Key("repco", "ACC-1"), ExternalID: "ACC-1", TenantID: "repco",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1000)})
	must(err)
	if res, err := init.InitChunk(ctx, railRequests("repco", "EVE", 2, noon.Add(-2*time.Hour)), "init-repco-eve"); err != nil || res.Scheduled != 2 {
		t.Fatalf("repco's payments on EVE: %+v, %v", res, err)
	}
	svc := payment.NewService(payment.ServiceConfig{Store: store, Queue: q, Rails: rails, Pacer: lim})
	_, _, err = svc.Cancel(ctx, "repco", "repco-000", nil)
	must(err)

	reg, err := process.NewRegistry(choreDefinition())
	must(err)
	acts := process.NewActivities(process.ActivitiesConfig{DB: pool, Registry: reg})
	op := process.NewOperator(process.OperatorConfig{DB: pool, Registry: reg})
	for _, key := range []string{"new", "fail", "paused"} {
		in := process.StartInput{Type: "Chore", BusinessKey: key, Data: json.RawMessage(`{}`)}
		st, err := acts.Start(ctx, in)
		must(err)
		if key == "fail" {
			st, err = acts.Advance(ctx, in)
			must(err)
		}
		if key == "paused" {
			_, err = op.Pause(ctx, st.ProcessID, "setup")
			must(err)
		}
		d.process[key] = st.ProcessID
	}
	if got, _ := process.Get(ctx, pool, d.process["fail"]); got.Status != process.StatusFailed {
		t.Fatalf("the failing chore is %s, want FAILED", got.Status)
	}

	// A dead queue item: claimed, its start failed, its one retry used.
	id := "job-" + uuid.NewString()
	tx, err := pool.Begin(ctx)
	must(err)
	_, err = q.EnqueueBatchTx(ctx, tx, []queue.EnqueueParams{{ItemType: "JOB", ItemID: id, TenantID: "acme", ScheduledExecTime: time.Now().Add(-time.Minute)}})
	must(err)
	must(tx.Commit(ctx))
	b, err := q.ClaimBatch(ctx, queue.ClaimParams{ItemType: "JOB", BatchSize: 1, PreStartBuffer: time.Minute, MaxRetries: 1})
	must(err)
	_, err = q.ReleaseForRetryBatch(ctx, "JOB", b.ID, []queue.Failure{{ItemID: id, Error: "engine down"}}, 1)
	must(err)
	d.letter = "dispatch:JOB:" + id

	services := httpapi.Services{
		Audit:           audit.New(audit.Config{DB: pool}),
		DispatchConfigs: q,
		Pacer:           lim,
		FXRates:         service.New(pool),
		Processes:       processAPI{op, pool},
		Webhooks:        hooks, EventTypes: payment.EventTypes(),
		Payments:    svc,
		Levers:      svc,
		Rails:       httpapi.RailStore{DB: pool, Payments: store, Pacing: lim, Queue: q, Resolver: rails},
		DeadLetters: deadletter.New(deadletter.Config{DB: pool, Queue: q, Limiter: lim, OutboxItemType: "JOB"}),
	}
	for _, m := range more {
		m(&services, pool)
	}
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin":         {TokenID: "tok_a", Name: "ops", Scopes: []auth.Scope{auth.Admin}},
		"acme":          {TokenID: "tok_b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead, auth.WebhooksWrite}},
		"acme-approver": {TokenID: "tok_c", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsApprove}},
	}, Services: services})
	// A pause to resume: of a tenant with nothing waiting, so that the
	// other routes' payments are not held.
	_, err = svc.Pause(ctx, payment.PauseScope{Kind: payment.PauseTenant, ID: "initech"}, nil)
	must(err)
	d.rt = rt
	return d
}

// one reads one value, as text.
func (d *auditedDB) one(t *testing.T, sql string, args ...any) string {
	t.Helper()
	var v string
	if err := d.pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// auditedRoute is a request that changes something through an audited
// route, and what it changes: state, a query whose answer moves with the
// change ("" for the cache flush, which changes nothing stored).
type auditedRoute struct {
	pattern, method, path, body, token string
	want                               int
	state                              string
	args                               []any
}

func auditedRoutes(d *auditedDB) []auditedRoute {
	proc := func(key, action string) string {
		return "/admin/processes/" + d.process[key].String() + "/" + action
	}
	procState := `SELECT status || ' ' || version FROM process_instance WHERE process_id = $1`
	payState := `SELECT status FROM payments WHERE payment_id = $1`
	pauses := `SELECT coalesce(string_agg(scope || ':' || scope_id, ',' ORDER BY scope, scope_id), '') FROM payment_pause`
	priority := `SELECT priority FROM payments WHERE payment_id = $1`
	hook := "/admin/webhooks/" + d.endpoint.String()
	return []auditedRoute{
		{"PATCH /admin/dispatch/config/{itemType}", "PATCH", "/admin/dispatch/config/JOB", `{"enabled":false}`, "admin", 200,
			`SELECT enabled::text FROM exec_rate_config WHERE item_type = 'JOB'`, nil},
		{"POST /admin/rate-limit/config", "POST", "/admin/rate-limit/config", `{"configName":"trickle","maxPerWindow":5,"windowSize":"PT1S"}`, "admin", 201,
			`SELECT string_agg(config_name, ',' ORDER BY config_name) FROM pacing_config`, nil},
		{"POST /admin/rate-limit/config/{name}/deactivate", "POST", "/admin/rate-limit/config/fifty/deactivate", "", "admin", 200,
			`SELECT active::text FROM pacing_config WHERE config_name = 'fifty'`, nil},
		{"POST /admin/rate-limit/cache/flush", "POST", "/admin/rate-limit/cache/flush", "", "admin", 200, "", nil},
		{"POST /admin/rate-limit/config/{name}/repace", "POST", "/admin/rate-limit/config/forty/repace", "", "admin", 200,
			`SELECT scheduled_execution_time::text FROM payments WHERE payment_id = $1`, []any{payment.Key("repco", "repco-001")}},
		{"POST /admin/fx-rates", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"USD","rate":"1.0850"}`, "admin", 200,
			`SELECT count(*)::text FROM fx_rate`, nil},
		{"POST /admin/processes/{id}/retry", "POST", proc("fail", "retry"), "", "admin", 200, procState, []any{d.process["fail"]}},
		{"POST /admin/processes/{id}/compensate", "POST", proc("new", "compensate"), "", "admin", 200, procState, []any{d.process["new"]}},
		{"POST /admin/processes/{id}/pause", "POST", proc("new", "pause"), "", "admin", 200, procState, []any{d.process["new"]}},
		{"POST /admin/processes/{id}/resume", "POST", proc("paused", "resume"), "", "admin", 200, procState, []any{d.process["paused"]}},
		{"POST /admin/webhooks", "POST", "/admin/webhooks", `{"url":"https://hooks.acme.example/second"}`, "acme", 201,
			`SELECT count(*)::text FROM webhook_endpoints`, nil},
		{"DELETE /admin/webhooks/{id}", "DELETE", hook, "", "acme", 204, `SELECT count(*)::text FROM webhook_endpoints`, nil},
		{"POST /admin/webhooks/{id}/rotate-secret", "POST", hook + "/rotate-secret", `{}`, "acme", 200,
			`SELECT secret FROM webhook_endpoints WHERE endpoint_id = $1`, []any{d.endpoint}},
		{"POST /admin/webhooks/{id}/redrive", "POST", hook + "/redrive", `{}`, "acme", 200,
			`SELECT string_agg(state, ',') FROM webhook_deliveries`, nil},
		{"POST /v1/payments/{id}/cancel", "POST", "/v1/payments/p-1/cancel", "", "acme", 200, payState, []any{payment.Key("acme", "p-1")}},
		{"POST /v1/payment-batches/{id}/cancel", "POST", "/v1/payment-batches/b-1/cancel", "", "acme", 200, payState, []any{payment.Key("acme", "p-2")}},
		{"POST /admin/payments/cancel", "POST", "/admin/payments/cancel", `{"tenantId":"globex"}`, "admin", 200, payState, []any{payment.Key("globex", "p-3")}},
		{"POST /admin/dead-letters/requeue", "POST", "/admin/dead-letters/requeue", `{"ids":["` + d.letter + `"],"rateLimitConfig":"fifty"}`, "admin", 200,
			`SELECT queue_status FROM exec_queue WHERE item_type = 'JOB'`, nil},
		{"POST /admin/rails", "POST", "/admin/rails", `{"name":"NEW","type":"PACS008","active":false}`, "admin", 201,
			`SELECT string_agg(rail_name, ',' ORDER BY rail_name) FROM rail`, nil},
		{"POST /admin/calendars", "POST", "/admin/calendars", `{"name":"BANK","weekend":["SAT","SUN"]}`, "admin", 201,
			`SELECT count(*)::text FROM calendars`, nil},
		{"POST /admin/routing-rules", "POST", "/admin/routing-rules", `{"rules":[{"currency":"EUR","rail":"NOON"},{"rail":"DEFAULT"}]}`, "admin", 200,
			`SELECT string_agg(rail_name, ',' ORDER BY position) FROM routing_rule`, nil},
		{"POST /admin/cutoff-rules", "POST", "/admin/cutoff-rules", `{"tenantId":"acme","rule":"REJECT"}`, "admin", 200,
			`SELECT string_agg(tenant_id || '=' || cutoff_rule, ',' ORDER BY tenant_id) FROM tenant_cutoff_rule`, nil},
		{"POST /admin/control-settings", "POST", "/admin/control-settings", `{"tenantId":"acme","duplicateAction":"HOLD"}`, "admin", 200,
			`SELECT coalesce(string_agg(tenant_id || '=' || duplicate_action, ',' ORDER BY tenant_id), '') FROM tenant_control_settings`, nil},
		{"POST /admin/approval-rules", "POST", "/admin/approval-rules", `{"tenantId":"acme","rules":[{"name":"big","minAmount":"1000","approvals":2}]}`, "admin", 200,
			`SELECT count(*)::text FROM approval_rules`, nil},
		{"POST /v1/payments/approve", "POST", "/v1/payments/approve", `{"tenantId":"acme","paymentIds":["acme-await"]}`, "acme-approver", 200, payState,
			[]any{payment.Key("acme", "acme-await")}},
		{"POST /v1/payments/deny", "POST", "/v1/payments/deny", `{"tenantId":"acme","paymentIds":["acme-await"],"reason":"not ours"}`, "acme-approver", 200, payState,
			[]any{payment.Key("acme", "acme-await")}},
		{"POST /admin/payments/reject", "POST", "/admin/payments/reject", `{"tenantId":"holdco","paymentIds":["holdco-001"],"reason":"sanctions match confirmed"}`, "admin", 200, payState, []any{d.rejected}},
		{"POST /admin/payments/release", "POST", "/admin/payments/release", `{"tenantId":"holdco"}`, "admin", 200, payState, []any{d.held}},
		{"POST /admin/pauses", "POST", "/admin/pauses", `{"scope":"TENANT","id":"acme"}`, "admin", 201, pauses, nil},
		{"DELETE /admin/pauses/{scope}/{id}", "DELETE", "/admin/pauses/TENANT/initech", "", "admin", 200, pauses, nil},
		{"POST /v1/payments/{id}/priority", "POST", "/v1/payments/p-1/priority", `{"priority":"HIGH"}`, "acme", 200, priority, []any{payment.Key("acme", "p-1")}},
		{"POST /v1/payment-batches/{id}/priority", "POST", "/v1/payment-batches/b-1/priority", `{"priority":"LOW"}`, "acme", 200, priority,
			[]any{payment.Key("acme", "p-2")}},
	}
}

// TestAuditedChanges: every audited route (a change through /admin/*, the
// cancels and the changes of priority) on the real stores and audit log. A bad X-Operator is 400
// and changes and records nothing. When the change's audit entry cannot
// be written (a trigger refuses it), the answer is 503 and the change is
// rolled back: no change without its entry. Otherwise the change is made
// and recorded, naming the operator.
func TestAuditedChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("a database for each route")
	}
	t.Parallel()
	covered := auditedRoutes(&auditedDB{process: map[string]uuid.UUID{}})
	contract := contractRouter(t)
	for _, p := range contract.Patterns() { // every route serve registers
		method, path, _ := strings.Cut(p, " ")
		if method == http.MethodGet || !httpapi.Audited(contract, p, httptest.NewRequest(method, path, nil)) {
			continue
		}
		if !slices.ContainsFunc(covered, func(r auditedRoute) bool { return r.pattern == p }) {
			t.Errorf("the audited route %s has no case here", p)
		}
	}
	for _, tt := range covered {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			d := newAuditedDB(t)
			tt := auditedRoutes(d)[slices.IndexFunc(covered, func(r auditedRoute) bool { return r.pattern == tt.pattern })]
			do := func(operator string) *httptest.ResponseRecorder {
				req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
				if tt.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				req.Header.Set("Authorization", "Bearer "+tt.token)
				req.Header.Set(httpapi.OperatorHeader, operator)
				rec := httptest.NewRecorder()
				d.rt.ServeHTTP(rec, req)
				return rec
			}
			state := func() string {
				if tt.state == "" {
					return ""
				}
				return d.one(t, tt.state, tt.args...)
			}
			entries := func() string { return d.one(t, `SELECT count(*)::text FROM admin_audit`) }
			before := state()

			rec := do("ops-\xc3")
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(rec.Body.String(), "X-Operator") {
				t.Fatalf("a bad X-Operator: %d %s %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if got := state(); got != before || entries() != "0" {
				t.Fatalf("a bad X-Operator: state %q → %q, %s audit entries", before, got, entries())
			}

			if _, err := d.pool.Exec(context.Background(), `
				CREATE FUNCTION refuse_entries() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the audit log is full'; END $$;
				CREATE TRIGGER refuse_entries BEFORE INSERT ON admin_audit FOR EACH ROW EXECUTE FUNCTION refuse_entries()`); err != nil {
				t.Fatal(err)
			}
			rec = do("ops-anna")
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Content-Type") != "application/problem+json" || rec.Header().Get("Location") != "" {
				t.Fatalf("the entry refused: %d %v %s, want a 503 problem", rec.Code, rec.Header(), rec.Body)
			}
			if got := state(); got != before {
				t.Fatalf("the entry refused, but the change is made: state %q → %q", before, got)
			}
			if _, err := d.pool.Exec(context.Background(), `DROP TRIGGER refuse_entries ON admin_audit`); err != nil {
				t.Fatal(err)
			}

			rec = do("ops-anna")
			if rec.Code != tt.want {
				t.Fatalf("the change: %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
			if got := state(); tt.state != "" && got == before {
				t.Fatalf("the change answered %d but changed nothing: %q", rec.Code, got)
			}
			var actor, action, target string
			if err := d.pool.QueryRow(context.Background(), `SELECT actor, action, target FROM admin_audit ORDER BY seq DESC LIMIT 1`).Scan(&actor, &action, &target); err != nil {
				t.Fatalf("no audit entry for the change: %v", err)
			}
			if !strings.HasSuffix(actor, " as ops-anna") || action != tt.pattern || target != strings.Split(tt.path, "?")[0] {
				t.Fatalf("audit entry %q %q %q", actor, action, target)
			}
		})
	}
}

// TestActorHeaderOnEveryRoute: an X-Operator that could not be stored as
// sent — not UTF-8, a control character, too long, sent twice — is a 400
// problem on every route, before the handler runs: nothing is read,
// changed or recorded.
func TestActorHeaderOnEveryRoute(t *testing.T) {
	t.Parallel()
	rt := contractRouter(t)
	values := map[string]string{"{id}": uuid.NewString(), "{itemType}": "PAYMENT", "{name}": "fifty", "{file}": "console.js"}
	for _, bad := range []struct {
		name   string
		values []string
	}{
		{"not UTF-8", []string{"ops-\xc3"}},
		{"a control character", []string{"ops\tanna"}},
		{"a NUL", []string{"ops\x00anna"}},
		{"too long", []string{strings.Repeat("o", 129)}},
		{"twice", []string{"ops-anna", "ops-bob"}},
	} {
		for _, p := range rt.Patterns() {
			method, path, _ := strings.Cut(p, " ")
			for k, v := range values {
				path = strings.ReplaceAll(path, k, v)
			}
			req := httptest.NewRequest(method, path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer admin")
			req.Header[httpapi.OperatorHeader] = bad.values
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			var prob httpapi.Problem
			_ = json.Unmarshal(rec.Body.Bytes(), &prob)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/problem+json" ||
				len(prob.Errors) != 1 || prob.Errors[0].Field != httpapi.OperatorHeader {
				t.Errorf("%s, %s: %d %s", bad.name, p, rec.Code, rec.Body)
			}
		}
	}
	// A good one is taken, in any script, up to its bound.
	for _, good := range []string{"ops-anna", "Zoë Ñúñez", strings.Repeat("o", 128)} {
		req := httptest.NewRequest("GET", "/admin/audit", nil)
		req.Header.Set("Authorization", "Bearer admin")
		req.Header.Set(httpapi.OperatorHeader, good)
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("%q: %d %s", good, rec.Code, rec.Body)
		}
	}
}

// TestAuditedWithoutLog: a router without an audit log makes no audited
// change; it still serves the rest.
func TestAuditedWithoutLog(t *testing.T) {
	t.Parallel()
	f := newFakeDispatchConfigs()
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{DispatchConfigs: f}})
	req := httptest.NewRequest("PATCH", "/admin/dispatch/config/PAYMENT", strings.NewReader(`{"batch_size":7}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || f.c.BatchSize == 7 {
		t.Fatalf("a change without an audit log: %d, batch_size %d", rec.Code, f.c.BatchSize)
	}
	if rec := call(rt, "GET", "/admin/dispatch/config/PAYMENT", "", ""); rec.Code != http.StatusOK {
		t.Fatalf("a read: %d", rec.Code)
	}
}

// TestAuditFailureHoldsTheAnswer: when the entry cannot be written, the
// handler's answer (its status, its Location) is not sent, and the
// change is not kept; the entry of a change that commits is.
func TestAuditFailureHoldsTheAnswer(t *testing.T) {
	t.Parallel()
	log := &fakeAudit{fail: fmt.Errorf("disk full")}
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Pacer: &fakePacer{}, Audit: log}})
	rec := call(rt, "POST", "/admin/rate-limit/config", `{"configName":"c","maxPerWindow":5,"windowSize":"PT1S"}`, "")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Location") != "" || strings.Contains(rec.Body.String(), "configName") {
		t.Fatalf("entry refused: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	log.fail = nil
	if rec := call(rt, "POST", "/admin/rate-limit/config", `{"configName":"c","maxPerWindow":5,"windowSize":"PT1S"}`, ""); rec.Code != http.StatusCreated || rec.Header().Get("Location") == "" {
		t.Fatalf("entry written: %d %v", rec.Code, rec.Header())
	}
	if len(log.entries) != 1 || !strings.Contains(string(log.entries[0].Detail), `"status":201`) {
		t.Fatalf("entries %+v", log.entries)
	}
}
