package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/process"
)

// fakeTokens knows a few tokens by their secret.
type fakeTokens map[string]auth.Principal

func (f fakeTokens) Authenticate(_ context.Context, token string) (auth.Principal, error) {
	if token == "db-down" {
		return auth.Principal{}, errors.New("connection refused")
	}
	p, ok := f[token]
	if !ok {
		return auth.Principal{}, auth.ErrUnauthenticated
	}
	return p, nil
}

// fakePayments stores submitted payments by id (nothing is validated).
type fakePayments struct {
	byID       map[string]payment.Request
	rejections []payment.LineError
}

func (f *fakePayments) Take(ctx context.Context, in payment.Intake) (payment.Taken, error) {
	return f.take(ctx, in, nil)
}
func (f *fakePayments) RecordRejections(_ context.Context, _ string, rs []payment.LineError) error {
	f.rejections = rs
	return nil
}
func (f *fakePayments) Batch(_ context.Context, id string) (payment.BatchView, error) {
	if id != "b" {
		return payment.BatchView{}, payment.ErrNotFound
	}
	tenants := map[string]bool{}
	var list []string
	for _, r := range f.byID {
		if !tenants[r.TenantID] {
			tenants[r.TenantID] = true
			list = append(list, r.TenantID)
		}
	}
	return payment.BatchView{BatchID: id, Tenants: list, Payments: len(f.byID), Rejected: len(f.rejections), CreatedAt: time.Now(),
		Progress: payment.BatchProgress{Received: len(f.byID)}}, nil
}
func (f *fakePayments) BatchRejections(ctx context.Context, id string) ([]payment.LineError, []string, error) {
	v, err := f.Batch(ctx, id)
	if f.rejections == nil {
		f.rejections = []payment.LineError{}
	}
	return f.rejections, v.Tenants, err
}
func (f *fakePayments) Cancel(ctx context.Context, tenant, id string, record payment.Record) (payment.Status, bool, error) {
	if r, ok := f.byID[id]; !ok || r.TenantID != tenant {
		return "", false, payment.ErrNotFound
	}
	if record != nil {
		if err := record(ctx, nil, 1); err != nil {
			return "", false, err
		}
	}
	return payment.StatusCancelled, true, nil
}
func (f *fakePayments) CancelBatch(ctx context.Context, id, tenant string, record payment.Record) (payment.Cancelled, error) {
	n := 0
	for _, r := range f.byID {
		if tenant == "" || r.TenantID == tenant {
			n++
		}
	}
	if record != nil && n > 0 {
		if err := record(ctx, nil, n); err != nil {
			return payment.Cancelled{}, err
		}
	}
	return payment.Cancelled{Cancelled: n, NotCancelled: []payment.NotCancelled{}}, nil
}
func (f *fakePayments) List(_ context.Context, filter payment.ListFilter, after string, limit int) (payment.ListPage, error) {
	if after != "" && !payment.ValidListPosition(after) {
		return payment.ListPage{}, payment.ErrBadPosition
	}
	page := payment.ListPage{Payments: []payment.View{}}
	for id, r := range f.byID {
		if r.TenantID == filter.TenantID && len(page.Payments) < limit {
			page.Payments = append(page.Payments, payment.View{PaymentID: id, TenantID: r.TenantID, Status: payment.StatusScheduled,
				Amount: r.Amount, Currency: r.Currency, RequestedExecutionTime: &r.RequestedExecutionTime})
		}
	}
	return page, nil
}

func (f *fakePayments) CancelWhere(ctx context.Context, filter payment.CancelFilter, dryRun bool, record payment.Record) (payment.Cancelled, error) {
	if dryRun {
		record = nil
	}
	return f.CancelBatch(ctx, filter.BatchID, filter.TenantID, record)
}
func (f *fakePayments) Status(_ context.Context, tenant, id string) (payment.View, error) {
	r, ok := f.byID[id]
	if !ok || tenant != "" && r.TenantID != tenant {
		return payment.View{}, payment.ErrNotFound
	}
	return payment.View{PaymentID: id, TenantID: r.TenantID, Status: payment.StatusScheduled}, nil
}

// fakeProcesses has one process per tenant in {acme, globex}.
type fakeProcesses struct{}

var processOf = map[string]uuid.UUID{"acme": uuid.MustParse("11111111-1111-1111-1111-111111111111"), "globex": uuid.MustParse("22222222-2222-2222-2222-222222222222")}

func (fakeProcesses) Get(_ context.Context, id uuid.UUID) (process.Instance, error) {
	for tenant, pid := range processOf {
		if pid == id {
			return process.Instance{ID: id, Type: "SubmitPayment", BusinessKey: "pay-" + tenant, Status: process.StatusRunning,
				Step: "CreateTransaction", Data: json.RawMessage(`{"tenantId": "` + tenant + `"}`), CreatedAt: time.Now(), UpdatedAt: time.Now()}, nil
		}
	}
	return process.Instance{}, process.ErrNotFound
}
func (fakeProcesses) Log(context.Context, uuid.UUID) ([]process.LogEntry, error) { return nil, nil }
func (p fakeProcesses) RetryTx(ctx context.Context, _ pgx.Tx, id uuid.UUID, _ string) (process.Action, error) {
	inst, err := p.Get(ctx, id)
	return process.Action{Instance: inst}, err
}
func (p fakeProcesses) CompensateTx(ctx context.Context, _ pgx.Tx, id uuid.UUID, _ string) (process.Action, error) {
	inst, err := p.Get(ctx, id)
	return process.Action{Instance: inst}, err
}
func (p fakeProcesses) PauseTx(ctx context.Context, _ pgx.Tx, id uuid.UUID, _ string) (process.Action, error) {
	inst, err := p.Get(ctx, id)
	return process.Action{Instance: inst}, err
}
func (p fakeProcesses) ResumeTx(ctx context.Context, _ pgx.Tx, id uuid.UUID, _ string) (process.Action, error) {
	inst, err := p.Get(ctx, id)
	return process.Action{Instance: inst}, err
}

// TestAuthorization: every protected route without a token is 401 with a
// challenge, with a token lacking the scope 403, and another tenant's
// resource is 404 to a tenant's token; creating for another tenant, or
// naming it, is 403 and stores nothing; probes stay open.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	tokens := fakeTokens{
		"admin":       {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"acme-rw":     {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead, auth.AccountsWrite}},
		"acme-read":   {TokenID: "c", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsRead}},
		"globex-read": {TokenID: "d", TenantID: "globex", Scopes: []auth.Scope{auth.PaymentsRead}},
	}
	pays := &fakePayments{byID: map[string]payment.Request{"pay-acme": {TenantID: "acme"}, "pay-globex": {TenantID: "globex"}}}
	led := &fakeLedger{accounts: map[string]service.NewAccount{}}
	rt := newRouter(t, httpapi.RouterConfig{Auth: tokens, Services: httpapi.Services{
		Payments:  pays,
		Accounts:  led,
		FXRates:   led,
		Processes: fakeProcesses{},
		Audit:     &fakeAudit{},
		Metrics:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
	}})

	admin := func(method, path, body string) {
		t.Helper()
		if code := call(rt, method, path, body, "Bearer admin").Code; code >= 300 {
			t.Fatalf("setup %s %s: %d", method, path, code)
		}
	}
	admin("POST", "/v1/accounts", `{"accountId":"ACC-A","tenantId":"acme","currency":"EUR","balance":"1"}`)
	admin("POST", "/v1/accounts", `{"accountId":"ACC-G","tenantId":"globex","currency":"EUR","balance":"1"}`)

	payment := func(id, tenant string) string {
		b, _ := json.Marshal(map[string]any{"paymentId": id, "tenantId": tenant})
		return string(b)
	}
	acmeProc, globexProc := "/v1/processes/"+processOf["acme"].String(), "/v1/processes/"+processOf["globex"].String()
	tests := []struct {
		name, method, path, body, authz string
		want                            int
		wantChallenge                   bool
	}{
		{"healthz is open", "GET", "/healthz", "", "", 200, false},
		{"readyz is open", "GET", "/readyz", "", "", 200, false},
		{"metrics are open", "GET", "/metrics", "", "", 200, false},
		{"no token", "GET", "/v1/payments/pay-acme", "", "", 401, true},
		{"no token, admin route", "GET", "/admin/fx-rates", "", "", 401, true},
		{"no token, create", "POST", "/v1/payments", payment("p-1", "acme"), "", 401, true},
		{"not a bearer", "GET", "/v1/payments/pay-acme", "", "Basic YWRtaW46YWRtaW4=", 401, true},
		{"empty bearer", "GET", "/v1/payments/pay-acme", "", "Bearer ", 401, true},
		{"unknown token", "GET", "/v1/payments/pay-acme", "", "Bearer nope", 401, true},
		{"token store down", "GET", "/v1/payments/pay-acme", "", "Bearer db-down", 503, false},
		{"lowercase scheme", "GET", "/v1/payments/pay-acme", "", "bearer acme-read", 200, false},
		{"read own payment", "GET", "/v1/payments/pay-acme", "", "Bearer acme-read", 200, false},
		{"another tenant's payment", "GET", "/v1/payments/pay-globex", "", "Bearer acme-read", 404, false},
		{"admin reads any payment", "GET", "/v1/payments/pay-globex", "", "Bearer admin", 200, false},
		{"read own account", "GET", "/v1/accounts/ACC-A", "", "Bearer acme-read", 200, false},
		{"another tenant's account", "GET", "/v1/accounts/ACC-G", "", "Bearer acme-read", 404, false},
		{"own process", "GET", acmeProc, "", "Bearer acme-read", 200, false},
		{"another tenant's process", "GET", globexProc, "", "Bearer acme-read", 404, false},
		{"globex's own process", "GET", globexProc, "", "Bearer globex-read", 200, false},
		{"create without the scope", "POST", "/v1/payments", payment("p-2", "acme"), "Bearer acme-read", 403, false},
		{"create for another tenant", "POST", "/v1/payments", payment("p-3", "globex"), "Bearer acme-rw", 403, false},
		{"create for own tenant", "POST", "/v1/payments", payment("p-4", "acme"), "Bearer acme-rw", 202, false},
		{"create, tenant taken from the token", "POST", "/v1/payments", payment("p-5", ""), "Bearer acme-rw", 202, false},
		{"an atomic file with another tenant's line", "POST", "/v1/payment-batches?atomic=true", payment("p-6", "acme") + "\n" + payment("p-7", "globex"), "Bearer acme-rw", 403, false},
		{"a file with another tenant's line", "POST", "/v1/payment-batches", payment("p-8", "acme") + "\n" + payment("p-9", "globex"), "Bearer acme-rw", 403, false},
		{"account for another tenant", "POST", "/v1/accounts", `{"accountId":"ACC-X","tenantId":"globex","currency":"EUR","balance":"1"}`, "Bearer acme-rw", 403, false},
		{"account without the scope", "POST", "/v1/accounts", `{"accountId":"ACC-Y","tenantId":"acme","currency":"EUR","balance":"1"}`, "Bearer acme-read", 403, false},
		{"admin route, tenant token", "GET", "/admin/fx-rates", "", "Bearer acme-rw", 403, false},
		{"admin route, admin", "GET", "/admin/fx-rates", "", "Bearer admin", 200, false},
		{"cancel own payment", "POST", "/v1/payments/pay-acme/cancel", "", "Bearer acme-rw", 200, false},
		{"cancel without the scope", "POST", "/v1/payments/pay-acme/cancel", "", "Bearer acme-read", 403, false},
		{"cancel another tenant's payment", "POST", "/v1/payments/pay-globex/cancel", "", "Bearer acme-rw", 404, false},
		{"cancel naming another tenant", "POST", "/v1/payments/pay-globex/cancel?tenantId=globex", "", "Bearer acme-rw", 403, false},
		{"admin cancels without naming the tenant", "POST", "/v1/payments/pay-globex/cancel", "", "Bearer admin", 422, false},
		{"admin cancels naming the tenant", "POST", "/v1/payments/pay-globex/cancel?tenantId=globex", "", "Bearer admin", 200, false},
		{"cancel an unknown batch", "POST", "/v1/payment-batches/nope/cancel", "", "Bearer acme-rw", 404, false},
		{"cancel a batch naming another tenant", "POST", "/v1/payment-batches/b/cancel?tenantId=globex", "", "Bearer acme-rw", 403, false},
		{"cancel by filter, tenant token", "POST", "/admin/payments/cancel", `{"tenantId":"acme"}`, "Bearer acme-rw", 403, false},
		{"cancel by filter, admin", "POST", "/admin/payments/cancel", `{"tenantId":"acme","dryRun":true}`, "Bearer admin", 200, false},
		{"cancel by filter naming nothing", "POST", "/admin/payments/cancel", `{"dryRun":true}`, "Bearer admin", 422, false},
		{"cancel by filter, a status that does not wait", "POST", "/admin/payments/cancel", `{"tenantId":"acme","statuses":["DELIVERED"]}`, "Bearer admin", 422, false},
		{"cancel by filter, the times backwards", "POST", "/admin/payments/cancel", `{"tenantId":"acme","requestedFrom":"2030-01-01T16:00:00Z","requestedTo":"2030-01-01T15:00:00Z"}`, "Bearer admin", 422, false},
		{"operator action, tenant token", "POST", "/admin/processes/" + processOf["acme"].String() + "/pause", "", "Bearer acme-rw", 403, false},
	}
	for _, tt := range tests {
		rec := call(rt, tt.method, tt.path, tt.body, tt.authz)
		if rec.Code != tt.want {
			t.Errorf("%s: %s %s → %d, want %d: %s", tt.name, tt.method, tt.path, rec.Code, tt.want, rec.Body)
			continue
		}
		if got := rec.Header().Get("WWW-Authenticate"); (got != "") != tt.wantChallenge || tt.wantChallenge && !strings.HasPrefix(got, "Bearer ") {
			t.Errorf("%s: WWW-Authenticate %q", tt.name, got)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: content type %q", tt.name, rec.Header().Get("Content-Type"))
		}
	}
	for id, want := range map[string]string{"p-4": "acme", "p-5": "acme"} {
		if r, ok := pays.byID[id]; !ok || r.TenantID != want {
			t.Errorf("%s stored %t with tenant %q, want %q", id, ok, r.TenantID, want)
		}
	}
	for _, id := range []string{"p-1", "p-2", "p-3", "p-6", "p-7", "p-8", "p-9"} {
		if _, ok := pays.byID[id]; ok {
			t.Errorf("%s was stored by a refused request", id)
		}
	}
	for _, id := range []string{"ACC-X", "ACC-Y"} {
		if _, ok := led.accounts[id]; ok {
			t.Errorf("%s was stored by a refused request", id)
		}
	}
}

// TestRouteScopes: a route no one gave a scope needs admin.
func TestRouteScopes(t *testing.T) {
	t.Parallel()
	rt := contractRouter(t)
	for pattern, want := range map[string]auth.Scope{
		"POST /v1/payments": auth.PaymentsWrite, "GET /v1/payments/{id}": auth.PaymentsRead,
		"POST /v1/accounts": auth.AccountsWrite, "POST /admin/fx-rates": auth.Admin,
		"POST /api/v1/slots": auth.Admin, "GET /v1/something-new": auth.Admin,
		"POST /v1/payments/{id}/cancel": auth.PaymentsWrite, "POST /v1/payment-batches/{id}/cancel": auth.PaymentsWrite,
		"POST /admin/rails": auth.Admin, "GET /admin/rails/{name}": auth.Admin, "POST /admin/routing-rules": auth.Admin,
		"POST /admin/cutoff-rules": auth.Admin, "POST /admin/payments/release": auth.Admin,
		"POST /admin/payments/reject": auth.Admin,
	} {
		if got, public := rt.RouteScope(pattern); got != want || public {
			t.Errorf("%s: scope %q (public %t), want %q", pattern, got, public, want)
		}
	}
}

func call(h http.Handler, method, path, body, authz string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
		if strings.Contains(path, "batches") {
			req.Header.Set("Content-Type", "application/x-ndjson")
		}
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestRateLimitPerToken: a token over its rate gets 429 with Retry-After;
// another token is not held back by it; probes are never limited.
func TestRateLimitPerToken(t *testing.T) {
	t.Parallel()
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"a": {TokenID: "a", Scopes: []auth.Scope{auth.PaymentsRead}},
		"b": {TokenID: "b", Scopes: []auth.Scope{auth.PaymentsRead}},
	}, TokenRate: 1, TokenBurst: 3, Services: httpapi.Services{Payments: &fakePayments{byID: map[string]payment.Request{"p": {TenantID: "acme"}}}}})
	var codes []int
	for range 5 {
		codes = append(codes, call(rt, "GET", "/v1/payments/p", "", "Bearer a").Code)
	}
	if codes[0] != 200 || codes[2] != 200 || codes[3] != http.StatusTooManyRequests || codes[4] != http.StatusTooManyRequests {
		t.Fatalf("codes %v, want 3 × 200 then 429", codes)
	}
	rec := call(rt, "GET", "/v1/payments/p", "", "Bearer a")
	if rec.Header().Get("Retry-After") == "" || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("429 without Retry-After or problem: %v", rec.Header())
	}
	if code := call(rt, "GET", "/v1/payments/p", "", "Bearer b").Code; code != 200 {
		t.Fatalf("another token: %d", code)
	}
	for range 10 {
		if code := call(rt, "GET", "/healthz", "", "").Code; code != 200 {
			t.Fatalf("healthz limited: %d", code)
		}
	}
}

// fakeAudit keeps entries in memory: an entry recorded in one of its
// transactions when that commits, one recorded in a store's (nil here)
// at once. With fail set, Record fails.
type fakeAudit struct {
	mu      sync.Mutex
	entries []audit.Entry
	fail    error
}

// fakeTx is a transaction of fakeAudit's: the stores' fakes ignore it.
type fakeTx struct {
	pgx.Tx
	a       *fakeAudit
	pending []audit.Entry
}

func (t *fakeTx) Commit(context.Context) error {
	t.a.keep(t.pending...)
	t.pending = nil
	return nil
}

func (t *fakeTx) Rollback(context.Context) error {
	t.pending = nil
	return nil
}

func (f *fakeAudit) Begin(context.Context) (pgx.Tx, error) { return &fakeTx{a: f}, nil }

func (f *fakeAudit) Record(_ context.Context, tx pgx.Tx, actor, action, target string, detail any) error {
	if f.fail != nil {
		return f.fail
	}
	raw, _ := json.Marshal(detail)
	e := audit.Entry{Actor: actor, Action: action, Target: target, Detail: raw}
	if t, ok := tx.(*fakeTx); ok {
		t.pending = append(t.pending, e)
		return nil
	}
	f.keep(e)
	return nil
}

func (f *fakeAudit) keep(es ...audit.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range es {
		e.Seq = int64(len(f.entries) + 1)
		f.entries = append(f.entries, e)
	}
}

func (f *fakeAudit) List(_ context.Context, limit int, before int64) ([]audit.Entry, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []audit.Entry
	for i := len(f.entries) - 1; i >= 0 && len(out) <= limit; i-- {
		if before == 0 || f.entries[i].Seq < before {
			out = append(out, f.entries[i])
		}
	}
	if len(out) > limit {
		return out[:limit], out[limit-1].Seq, nil
	}
	return out, 0, nil
}

// TestAdminAudit: a change made through /admin/* is recorded with who made
// it and what was sent; a refused change and a read are not; the log
// reads back newest first with a cursor, admins only.
func TestAdminAudit(t *testing.T) {
	t.Parallel()
	led := &fakeLedger{accounts: map[string]service.NewAccount{}}
	log := &fakeAudit{}
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin": {TokenID: "tok_a", Name: "ops", Scopes: []auth.Scope{auth.Admin}},
		"rw":    {TokenID: "tok_b", Scopes: []auth.Scope{auth.PaymentsWrite}},
	}, Services: httpapi.Services{FXRates: led, Audit: log}})
	post := func(body, token, operator string) int {
		req := httptest.NewRequest("POST", "/admin/fx-rates", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if operator != "" {
			req.Header.Set(httpapi.OperatorHeader, operator)
		}
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post(`{"base":"EUR","quote":"USD","rate":"1.08"}`, "admin", "anna"); code != 200 {
		t.Fatalf("set a rate: %d", code)
	}
	if code := post(`{"base":"EUR","quote":"USD","rate":"-1"}`, "admin", ""); code != 422 {
		t.Fatalf("a refused rate: %d", code)
	}
	if code := post(`{"base":"EUR","quote":"GBP","rate":"0.85"}`, "rw", ""); code != 403 {
		t.Fatalf("without admin: %d", code)
	}
	if code := post(`{"base":"EUR","quote":"GBP","rate":"0.85"}`, "admin", ""); code != 200 {
		t.Fatalf("second rate: %d", code)
	}
	call(rt, "GET", "/admin/fx-rates", "", "Bearer admin")
	if len(log.entries) != 2 {
		t.Fatalf("%d entries, want the 2 changes: %+v", len(log.entries), log.entries)
	}
	e := log.entries[0]
	if e.Actor != "tok_a (ops) as anna" || e.Action != "POST /admin/fx-rates" || !strings.Contains(string(e.Detail), `"rate":"1.08"`) {
		t.Fatalf("entry %+v (%s)", e, e.Detail)
	}
	rec := call(rt, "GET", "/admin/audit?limit=1", "", "Bearer admin")
	var page struct {
		Entries []audit.Entry `json:"entries"`
		Next    string        `json:"next"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != 200 || len(page.Entries) != 1 || page.Next == "" || page.Entries[0].Seq != 2 {
		t.Fatalf("page: %d %s", rec.Code, rec.Body)
	}
	if rec := call(rt, "GET", "/admin/audit?cursor="+page.Next, "", "Bearer admin"); !strings.Contains(rec.Body.String(), `"seq":1`) || strings.Contains(rec.Body.String(), `"next"`) {
		t.Fatalf("second page: %s", rec.Body)
	}
	for _, q := range []string{"limit=0", "limit=x", "limit=5000", "cursor=-1", "cursor=x"} {
		if code := call(rt, "GET", "/admin/audit?"+q, "", "Bearer admin").Code; code != 400 {
			t.Errorf("%s: %d", q, code)
		}
	}
	if code := call(rt, "GET", "/admin/audit", "", "Bearer rw").Code; code != 403 {
		t.Fatalf("a non-admin reads the audit log: %d", code)
	}
}
