package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/payment"
)

// TestOtherTenantForbidden: a tenant's token that names another tenant,
// in the query or in a body, is answered 403 problem+json on every route
// it may call, whether or not that tenant or the id exist, and nothing is
// stored; naming its own tenant is served. An operator's token naming a
// tenant id no tenant can have is 400 (issue 44).
func TestOtherTenantForbidden(t *testing.T) {
	t.Parallel()
	pays := &fakePayments{byID: map[string]payment.Request{"pay-acme": {TenantID: "acme"}}}
	led := &fakeLedger{accounts: map[string]service.NewAccount{}}
	hooks := &fakeWebhooks{}
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"acme": {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead,
			auth.AccountsWrite, auth.WebhooksWrite}},
	}, Services: httpapi.Services{
		Payments:  pays,
		Accounts:  led,
		Processes: fakeProcesses{},
		Webhooks:  hooks, EventTypes: payment.EventTypes(),
		Audit: &fakeAudit{},
	}})
	if code := call(rt, "POST", "/v1/accounts", `{"accountId":"ACC-A","tenantId":"acme","currency":"EUR","balance":"1"}`, "Bearer admin").Code; code != 201 {
		t.Fatalf("setup: %d", code)
	}
	acmeProc := "/v1/processes/" + processOf["acme"].String()
	line := func(id, tenant string) string {
		b, _ := json.Marshal(map[string]any{"paymentId": id, "tenantId": tenant})
		return string(b)
	}
	for _, tt := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"list", "GET", "/v1/payments?tenantId=globex", "", 403},
		{"list of a file", "GET", "/v1/payments?tenantId=globex&batchId=b", "", 403},
		{"list, the tenant twice", "GET", "/v1/payments?tenantId=acme&tenantId=globex", "", 403},
		{"list, a tenant no one can be", "GET", "/v1/payments?tenantId=%3Cimg%20src%3Dx%3E", "", 403},
		{"own payment", "GET", "/v1/payments/pay-acme?tenantId=globex", "", 403},
		{"unknown payment", "GET", "/v1/payments/nope?tenantId=globex", "", 403},
		{"own account", "GET", "/v1/accounts/ACC-A?tenantId=globex", "", 403},
		{"own process", "GET", acmeProc + "?tenantId=globex", "", 403},
		{"a file's progress", "GET", "/v1/payment-batches/b?tenantId=globex", "", 403},
		{"a file's rejections", "GET", "/v1/payment-batches/b/rejections?tenantId=globex", "", 403},
		{"cancel", "POST", "/v1/payments/pay-acme/cancel?tenantId=globex", "", 403},
		{"cancel a file", "POST", "/v1/payment-batches/b/cancel?tenantId=globex", "", 403},
		{"webhooks list", "GET", "/admin/webhooks?tenantId=globex", "", 403},
		{"create", "POST", "/v1/payments", line("p-1", "globex"), 403},
		{"a file for another tenant", "POST", "/v1/payment-batches?tenantId=globex", line("p-2", ""), 403},
		{"a file with another tenant's line", "POST", "/v1/payment-batches", line("p-3", "acme") + "\n" + line("p-4", "globex"), 403},
		{"an atomic file with another tenant's line", "POST", "/v1/payment-batches?atomic=true", line("p-5", "globex"), 403},
		{"account", "POST", "/v1/accounts", `{"accountId":"ACC-X","tenantId":"globex","currency":"EUR","balance":"1"}`, 403},
		{"webhook endpoint", "POST", "/admin/webhooks", `{"tenantId":"globex","url":"https://hooks.example/pd"}`, 403},

		{"own list", "GET", "/v1/payments?tenantId=acme", "", 200},
		{"own payment, named", "GET", "/v1/payments/pay-acme?tenantId=acme", "", 200},
		{"own account, named", "GET", "/v1/accounts/ACC-A?tenantId=acme", "", 200},
		{"own process, named", "GET", acmeProc + "?tenantId=acme", "", 200},
		{"create, named", "POST", "/v1/payments", line("p-6", "acme"), 202},
	} {
		rec := call(rt, tt.method, tt.path, tt.body, "Bearer acme")
		if rec.Code != tt.want {
			t.Errorf("%s: %s %s → %d, want %d: %s", tt.name, tt.method, tt.path, rec.Code, tt.want, rec.Body)
			continue
		}
		if tt.want != 403 {
			continue
		}
		var prob httpapi.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &prob); err != nil || rec.Header().Get("Content-Type") != "application/problem+json" ||
			prob.Type != "https://paydispatch.dev/problems/other-tenant" || len(prob.Errors) == 0 || strings.Contains(rec.Body.String(), "globex") {
			t.Errorf("%s: %s %s, want an other-tenant problem naming the field, not the tenant", tt.name, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	for _, id := range []string{"p-1", "p-2", "p-3", "p-4", "p-5"} {
		if _, ok := pays.byID[id]; ok {
			t.Errorf("%s was stored by a refused request", id)
		}
	}
	if _, ok := led.accounts["ACC-X"]; ok || len(hooks.eps) != 0 {
		t.Errorf("a refused request stored an account (%t) or %d webhook endpoints", ok, len(hooks.eps))
	}

	// An operator may name any tenant, but only as a tenant id can be.
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/v1/payments?tenantId=globex", 200},
		{"/v1/payments?tenantId=%3Cimg%20src%3Dx%3E", 400},
		{"/v1/payments?tenantId=a&tenantId=b", 400},
		{"/v1/payments/pay-acme?tenantId=acme%20corp", 400},
		{"/admin/webhooks?tenantId=" + strings.Repeat("t", 65), 400},
	} {
		rec := call(rt, "GET", tt.path, "", "Bearer admin")
		if rec.Code != tt.want || tt.want == 400 && !strings.Contains(rec.Body.String(), `"field":"tenantId"`) {
			t.Errorf("admin GET %s → %d, want %d naming tenantId: %s", tt.path, rec.Code, tt.want, rec.Body)
		}
	}
}

// rejectingPayments refuses, in its check, every payment whose id starts
// with "bad".
type rejectingPayments struct{ *fakePayments }

func (p rejectingPayments) Take(ctx context.Context, in payment.Intake) (payment.Taken, error) {
	return p.take(ctx, in, func(rs []payment.Request, lines []int) ([]payment.LineError, error) {
		var out []payment.LineError
		for i, r := range rs {
			if strings.HasPrefix(r.PaymentID, "bad") {
				out = append(out, payment.LineError{Line: lines[i], Fields: []field.Error{{Field: "amount", Detail: "must be greater than zero"}}})
			}
		}
		return out, nil
	})
}

// TestBatchRejectionsPerTenant: an operator's file mixing tenants shows
// each tenant only its own rejected lines, and counts only those; the
// operator sees every one, the unreadable line too. A tenant's own file
// shows it every line it sent, the unreadable one included (issue 44).
func TestBatchRejectionsPerTenant(t *testing.T) {
	t.Parallel()
	tokens := fakeTokens{
		"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"acme":  {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
	}
	line := func(id, tenant string) string {
		b, _ := json.Marshal(map[string]any{"paymentId": id, "tenantId": tenant})
		return string(b)
	}
	rejected := func(rt http.Handler, token string) (lines []int, count float64) {
		t.Helper()
		rec := call(rt, "GET", "/v1/payment-batches/b/rejections", "", "Bearer "+token)
		var page struct {
			Rejections []struct {
				Line int `json:"line"`
			} `json:"rejections"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || rec.Code != 200 {
			t.Fatalf("%s's rejections: %d %s", token, rec.Code, rec.Body)
		}
		for _, r := range page.Rejections {
			lines = append(lines, r.Line)
		}
		rec = call(rt, "GET", "/v1/payment-batches/b", "", "Bearer "+token)
		var progress map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &progress); err != nil || rec.Code != 200 {
			t.Fatalf("%s's progress: %d %s", token, rec.Code, rec.Body)
		}
		return lines, progress["rejected"].(float64)
	}

	t.Run("an operator's file", func(t *testing.T) {
		t.Parallel()
		rt := newRouter(t, httpapi.RouterConfig{Auth: tokens, Services: httpapi.Services{Payments: rejectingPayments{&fakePayments{byID: map[string]payment.Request{}}}}})
		file := strings.Join([]string{line("ok-1", "acme"), line("bad-g", "globex"), line("bad-a", "acme"), `{"paymentId": `}, "\n")
		if rec := call(rt, "POST", "/v1/payment-batches", file, "Bearer admin"); rec.Code != 202 || !strings.Contains(rec.Body.String(), `"rejected":3`) {
			t.Fatalf("upload: %d %s", rec.Code, rec.Body)
		}
		if lines, n := rejected(rt, "acme"); !slices.Equal(lines, []int{3}) || n != 1 {
			t.Errorf("acme sees lines %v, %v rejected; want its own line 3 alone", lines, n)
		}
		if lines, n := rejected(rt, "admin"); !slices.Equal(lines, []int{2, 3, 4}) || n != 3 {
			t.Errorf("the operator sees lines %v, %v rejected; want 2, 3 and 4", lines, n)
		}
	})
	t.Run("a tenant's own file", func(t *testing.T) {
		t.Parallel()
		rt := newRouter(t, httpapi.RouterConfig{Auth: tokens, Services: httpapi.Services{Payments: rejectingPayments{&fakePayments{byID: map[string]payment.Request{}}}}})
		file := strings.Join([]string{line("ok-2", ""), `{"paymentId": `, line("bad-3", "")}, "\n")
		if rec := call(rt, "POST", "/v1/payment-batches", file, "Bearer acme"); rec.Code != 202 {
			t.Fatalf("upload: %d %s", rec.Code, rec.Body)
		}
		if lines, n := rejected(rt, "acme"); !slices.Equal(lines, []int{2, 3}) || n != 2 {
			t.Errorf("acme sees lines %v, %v rejected; want 2 and 3", lines, n)
		}
	})
}

// TestListAnotherTenantsFile: on PostgreSQL, GET /v1/payments?batchId= of
// a file holding none of the tenant's payments (one longer than a page
// reads) answers byte for byte as for an unknown file: 200, an empty
// page, no next whose position would tell the file's size (issue 44).
func TestListAnotherTenantsFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	keys := make([]string, 1500)
	for i := range keys {
		keys[i] = payment.Key("globex", "g-"+strconv.Itoa(i))
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payment_batches (batch_id, tenants, payments, chunks) VALUES ('globex-file', '{globex}', 1500, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO payment_batch_parts (batch_id, part, payment_ids) VALUES ('globex-file', 0, $1)`, keys); err != nil {
		t.Fatal(err)
	}
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"acme":   {TokenID: "a", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsRead}},
		"globex": {TokenID: "b", TenantID: "globex", Scopes: []auth.Scope{auth.PaymentsRead}},
	}, Services: httpapi.Services{Payments: payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool)})}})
	unknown := call(rt, "GET", "/v1/payments?batchId=no-such-file&limit=5", "", "Bearer acme")
	if unknown.Code != 200 || unknown.Body.String() != "{\"payments\":[]}\n" {
		t.Fatalf("an unknown file: %d %q", unknown.Code, unknown.Body)
	}
	others := call(rt, "GET", "/v1/payments?batchId=globex-file&limit=5", "", "Bearer acme")
	if others.Code != unknown.Code || others.Body.String() != unknown.Body.String() ||
		!reflect.DeepEqual(others.Header(), unknown.Header()) {
		t.Errorf("another tenant's file: %d %v %q, want the unknown file's %d %v %q",
			others.Code, others.Header(), others.Body, unknown.Code, unknown.Header(), unknown.Body)
	}
	// The file's own tenant pages through it (its payments are keys
	// without rows here: empty pages, each with where the next starts).
	if own := call(rt, "GET", "/v1/payments?batchId=globex-file&limit=5", "", "Bearer globex"); own.Code != 200 || !strings.Contains(own.Body.String(), `"next"`) {
		t.Errorf("the file's own tenant: %d %s, want a next", own.Code, own.Body)
	}
}
