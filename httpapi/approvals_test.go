package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"go.temporal.io/sdk/worker"

	"github.com/paydispatch/paydispatch/audit"
	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/internal/testkit/temporaltest"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// TestApprovalsOverHTTP: an operator puts a tenant's approval rules
// (bad ones 422 naming the field); a payment submitted over the API that
// a rule matches waits AWAITING_APPROVAL, listed by that status; the
// token that submitted it is refused (403, own-payment), a token without
// payments:approve too (403, insufficient-scope); a bad selection is
// 422; two other approvers schedule it, each audited with its actor.
func TestApprovalsOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	q, lim := queue.New(pool), pacing.New(pacing.Config{Pool: pool})
	if err := payment.RegisterItemType(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: account.Key("acme", "ACC-1"), ExternalID: "ACC-1", TenantID: "acme",
		Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.PutConfig(ctx, pacing.Limit{Name: "api", MaxPerWindow: 5, Window: time.Second, Headroom: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRail(ctx, pool, routing.Rail{Name: "API-RAIL", Type: routing.TypeSEPAJSON, PacingConfig: "api", Active: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.PutRules(ctx, pool, []routing.Rule{{Rail: "API-RAIL"}}); err != nil {
		t.Fatal(err)
	}
	res := routing.NewResolver(pool, routing.ResolverConfig{})
	store := payment.NewStore(pool)
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.InitTaskQueue, worker.Options{})
	payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{Store: store, Queue: q, Pacer: lim, Rails: res,
		Controls: []payment.Control{payment.NewApprovalControl(store)}}))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	svc := payment.NewService(payment.ServiceConfig{Store: store, Queue: q, Temporal: c, Rails: res, Pacer: lim})
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin":  {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"sub":    {TokenID: "s", TenantID: "acme", Name: "erp", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead, auth.PaymentsApprove}},
		"reader": {TokenID: "r", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsRead}},
		"anna":   {TokenID: "t-anna", TenantID: "acme", Name: "anna", Scopes: []auth.Scope{auth.PaymentsApprove}},
		"bob":    {TokenID: "t-bob", Name: "bob", Scopes: []auth.Scope{auth.PaymentsApprove}},
	}, Services: httpapi.Services{Audit: audit.New(audit.Config{DB: pool}), Payments: svc}})
	do := func(method, path, body, token string) (*httptest.ResponseRecorder, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec, out
	}

	for _, tc := range []struct {
		name, body, token string
		status            int
		fields            string
	}{
		{"no approvals", `{"tenantId":"acme","rules":[{"name":"r","approvals":0}]}`, "admin", 422, "rules[0].approvals"},
		{"an amount as a number", `{"tenantId":"acme","rules":[{"name":"r","minAmount":100,"approvals":2}]}`, "admin", 400, "rules[0].minAmount"},
		{"an amount in exponent form", `{"tenantId":"acme","rules":[{"name":"r","minAmount":"1e3","approvals":2}]}`, "admin", 422, "rules[0].minAmount"},
		{"a source not in the list", `{"tenantId":"acme","rules":[{"name":"r","source":"FTP","approvals":2}]}`, "admin", 422, "rules[0].source"},
		{"no rules", `{"tenantId":"acme"}`, "admin", 422, "rules"},
		{"a tenant's own token", `{"tenantId":"acme","rules":[]}`, "anna", 403, ""},
	} {
		rec, body := do("POST", "/admin/approval-rules", tc.body, tc.token)
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/problem+json" || problemFields(body) != tc.fields {
			t.Errorf("%s: %d %s, want %d naming %q", tc.name, rec.Code, rec.Body, tc.status, tc.fields)
		}
	}
	if rec, _ := do("POST", "/admin/approval-rules", `{"tenantId":"acme","rules":[{"name":"big","minAmount":"1000.00","approvals":2}]}`, "admin"); rec.Code != 200 {
		t.Fatalf("put rules: %d %s", rec.Code, rec.Body)
	}
	if rec, body := do("GET", "/admin/approval-rules?tenantId=acme", "", "admin"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"minAmount":"1000"`) {
		t.Fatalf("list rules: %d %v", rec.Code, body)
	}

	at := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	pay := fmt.Sprintf(`{"paymentId":"big-1","debtorAccount":"ACC-1","amount":"5000.00","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":%q}`,
		at.Format(time.RFC3339))
	if rec, _ := do("POST", "/v1/payments", pay, "sub"); rec.Code != 202 {
		t.Fatalf("submit: %d %s", rec.Code, rec.Body)
	}
	status := func() map[string]any {
		_, body := do("GET", "/v1/payments/big-1", "", "sub")
		return body
	}
	for deadline := time.Now().Add(time.Minute); status()["status"] != "AWAITING_APPROVAL"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Phase A: %v", status())
		}
	}
	if rec, body := do("GET", "/v1/payments?status=AWAITING_APPROVAL", "", "sub"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"big-1"`) {
		t.Fatalf("list by AWAITING_APPROVAL: %d %v", rec.Code, body)
	}

	one := `{"tenantId":"acme","paymentIds":["big-1"]}`
	for _, tc := range []struct {
		name, path, body, token string
		status                  int
		kind, fields            string
	}{
		{"the submitter", "/v1/payments/approve", one, "sub", 403, "own-payment", ""},
		{"the submitter's denial", "/v1/payments/deny", `{"tenantId":"acme","paymentIds":["big-1"],"reason":"no"}`, "sub", 403, "own-payment", ""},
		{"no payments:approve", "/v1/payments/approve", one, "reader", 403, "insufficient-scope", ""},
		{"no selection", "/v1/payments/approve", `{"dryRun":true}`, "bob", 422, "", "tenantId"},
		{"ids without a tenant", "/v1/payments/approve", `{"paymentIds":["big-1"],"batchId":"b"}`, "bob", 422, "", "paymentIds"},
		{"a limit too high", "/v1/payments/approve", `{"tenantId":"acme","limit":100000}`, "bob", 422, "", "limit"},
		{"a denial without a reason", "/v1/payments/deny", one, "bob", 422, "", "reason"},
		{"another tenant", "/v1/payments/approve", `{"tenantId":"globex"}`, "anna", 403, "other-tenant", "tenantId"},
		{"not JSON", "/v1/payments/approve", `{`, "bob", 400, "", ""},
	} {
		rec, body := do("POST", tc.path, tc.body, tc.token)
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/problem+json" || problemFields(body) != tc.fields ||
			(tc.kind != "" && body["type"] != "https://paydispatch.dev/problems/"+tc.kind) {
			t.Errorf("%s: %d %s, want %d %s naming %q", tc.name, rec.Code, rec.Body, tc.status, tc.kind, tc.fields)
		}
	}
	if rec, body := do("POST", "/v1/payments/approve", `{"tenantId":"acme","dryRun":true}`, "bob"); rec.Code != 200 || body["scheduled"] != float64(0) || body["approved"] != float64(1) || body["dryRun"] != true {
		t.Fatalf("a dry run: %d %s", rec.Code, rec.Body)
	}
	if rec, body := do("POST", "/v1/payments/approve", one, "anna"); rec.Code != 200 || body["approved"] != float64(1) || body["scheduled"] != float64(0) {
		t.Fatalf("the first approval: %d %s", rec.Code, rec.Body)
	}
	if got := status(); got["status"] != "AWAITING_APPROVAL" || !strings.HasPrefix(fmt.Sprint(got["statusReason"]), "APPROVAL: 1 of 2") {
		t.Fatalf("after one approval: %v", got)
	}
	if rec, body := do("POST", "/v1/payments/approve", one, "bob"); rec.Code != 200 || body["scheduled"] != float64(1) {
		t.Fatalf("the second approval: %d %s", rec.Code, rec.Body)
	}
	if got := status(); got["status"] != "SCHEDULED" || got["queueStatus"] != "READY" {
		t.Fatalf("approved: %v", got)
	}
	var actors []string
	rows, err := pool.Query(ctx, `SELECT actor FROM admin_audit WHERE action = 'POST /v1/payments/approve' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		actors = append(actors, a)
	}
	if rows.Err() != nil || strings.Join(actors, "; ") != "t-anna (anna); t-bob (bob)" {
		t.Fatalf("audited approvals: %v (%v)", actors, rows.Err())
	}
}

// The contract's fake approves p-1 (one of two approvals), refuses "own"
// as the caller's own payment and knows no file "nope".
func (*fakePayments) PutApprovalRules(context.Context, pgx.Tx, string, []payment.ApprovalRule) error {
	return nil
}

func (*fakePayments) ApprovalRules(context.Context, string) ([]payment.ApprovalRule, error) {
	return []payment.ApprovalRule{{Name: "big", MinAmount: "1000", Approvals: 2}}, nil
}

func (*fakePayments) Approve(_ context.Context, f payment.ApprovalFilter, _ payment.Approver, dryRun bool, _ payment.Record) (payment.Decided, error) {
	switch {
	case slices.Contains(f.PaymentIDs, "own"):
		return payment.Decided{}, payment.ErrOwnPayment
	case f.BatchID == "nope":
		return payment.Decided{}, payment.ErrNotFound
	}
	return payment.Decided{Selected: 1, Approved: 1, Waiting: 1, DryRun: dryRun}, nil
}

func (*fakePayments) Deny(_ context.Context, _ payment.ApprovalFilter, _ payment.Approver, _ string, dryRun bool, _ payment.Record) (payment.Decided, error) {
	return payment.Decided{Selected: 1, Rejected: 1, DryRun: dryRun}, nil
}
