package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

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

// TestPaymentsOnRails: payments over HTTP on PostgreSQL and Temporal
// with rails configured. A payment takes the rail it names, or the one
// the rules choose for its source (API for a single payment, FILE for a
// file, in JSON lines and CSV); one no rail takes is 422 naming rail
// (single) or a rejected line (file). Each 202 carries the projection
// per rail; a payment shows its rail and execution date, the list
// filters by rail and by HELD, and an operator releases held payments,
// audited.
func TestPaymentsOnRails(t *testing.T) {
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
	for _, tenant := range []string{"acme", "globex", "holdco"} {
		if _, _, err := account.Create(ctx, pool, account.Spec{AccountID: account.Key(tenant, "ACC-1"), ExternalID: "ACC-1", TenantID: tenant,
			Currency: "EUR", OpeningBalance: decimal.NewFromInt(1_000_000)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []pacing.Limit{{Name: "api", MaxPerWindow: 5, Window: time.Second, Headroom: 1000}, {Name: "file", MaxPerWindow: 10, Window: time.Second, Headroom: 1000}} {
		if _, err := lim.PutConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// FILE-RAIL cuts off at 16:00 UTC; holdco HOLDs what misses it;
	// globex has no rule.
	for _, r := range []routing.Rail{{Name: "API-RAIL", Type: routing.TypeSEPAJSON, PacingConfig: "api", Active: true},
		{Name: "FILE-RAIL", Type: routing.TypePACS008, PacingConfig: "file", Opens: 7 * time.Hour, Cutoff: 16 * time.Hour, Active: true}} {
		if _, err := routing.PutRail(ctx, pool, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := routing.PutRules(ctx, pool, []routing.Rule{{TenantID: "acme", Source: routing.SourceAPI, Rail: "API-RAIL"},
		{TenantID: "acme", Source: routing.SourceFile, Rail: "FILE-RAIL"}, {TenantID: "holdco", Rail: "FILE-RAIL"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := routing.SetTenantCutoffRule(ctx, pool, "holdco", routing.Hold); err != nil {
		t.Fatal(err)
	}
	res := routing.NewResolver(pool, routing.ResolverConfig{})
	_, c := temporaltest.Start(t)
	w := worker.New(c, payment.InitTaskQueue, worker.Options{})
	payment.RegisterInit(w, payment.NewInitActivities(payment.InitConfig{Store: payment.NewStore(pool), Queue: q, Pacer: lim, Rails: res}))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	svc := payment.NewService(payment.ServiceConfig{Store: payment.NewStore(pool), Queue: q, Temporal: c, Rails: res, Pacer: lim})
	rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{
		"admin":  {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"acme":   {TokenID: "b", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
		"globex": {TokenID: "c", TenantID: "globex", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}},
	}, Services: httpapi.Services{Audit: audit.New(audit.Config{DB: pool}), Payments: svc}})
	do := func(method, path, ctype, body, token string) (*httptest.ResponseRecorder, map[string]any) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		var out map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		return rec, out
	}
	day := time.Now().UTC().AddDate(0, 0, 3).Truncate(24 * time.Hour)
	at := day.Add(10 * time.Hour).Format(time.RFC3339)
	late := day.Add(16*time.Hour - time.Second).Format(time.RFC3339)
	pay := func(id, rail, when string) string {
		named := ""
		if rail != "" {
			named = fmt.Sprintf(`,"rail":%q`, rail)
		}
		return fmt.Sprintf(`{"paymentId":%q,"debtorAccount":"ACC-1","amount":"10.00","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":%q%s}`,
			id, when, named)
	}
	// projected is a 202's projection, by rail: "payments/beforeCutoff/held".
	projected := func(body map[string]any) string {
		var out []string
		ps, _ := body["projection"].([]any)
		for _, p := range ps {
			m := p.(map[string]any)
			out = append(out, fmt.Sprintf("%s %v/%v/%v %v", m["rail"], m["payments"], m["beforeCutoff"], m["held"], m["executionDate"]))
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	}
	date := day.Format(time.DateOnly)

	// Single payments: routed as API, or the rail named.
	for _, tc := range []struct {
		name, body, token string
		status            int
		projection, field string
	}{
		{"routed by the API rule", pay("s-1", "", at), "acme", 202, "API-RAIL 1/1/0 " + date, ""},
		{"naming its rail", pay("s-2", "FILE-RAIL", at), "acme", 202, "FILE-RAIL 1/1/0 " + date, ""},
		{"naming no rail there is", pay("s-3", "GHOST", at), "acme", 422, "", "rail"},
		{"naming a rail no rail can be", pay("s-4", "bad rail!", at), "acme", 422, "", "rail"},
		{"no rule for its tenant", pay("s-5", "", at), "globex", 422, "", "rail"},
	} {
		rec, body := do("POST", "/v1/payments", "application/json", tc.body, tc.token)
		if rec.Code != tc.status || projected(body) != tc.projection || problemFields(body) != tc.field {
			t.Errorf("%s: %d %s; want %d, projection %q, naming %q", tc.name, rec.Code, rec.Body, tc.status, tc.projection, tc.field)
		}
	}
	// Files: routed as FILE; a line naming no rail there is rejected.
	jsonl := pay("f-1", "", at) + "\n" + pay("f-2", "API-RAIL", at) + "\n" + pay("f-3", "GHOST", at) + "\n"
	csv := "paymentId,debtorAccount,amount,currency,creditorName,creditorIban,creditorBic,requestedExecutionTime,rail\n" +
		"c-1,ACC-1,10.00,EUR,Jane Doe,DE89370400440532013000,COBADEFFXXX," + at + ",\n" +
		"c-2,ACC-1,10.00,EUR,Jane Doe,DE89370400440532013000,COBADEFFXXX," + at + ",API-RAIL\n" +
		"c-3,ACC-1,10.00,EUR,Jane Doe,DE89370400440532013000,COBADEFFXXX," + at + ",GHOST\n"
	for _, tc := range []struct{ name, ctype, body string }{{"JSON lines", "application/x-ndjson", jsonl}, {"CSV", "text/csv", csv}} {
		rec, body := do("POST", "/v1/payment-batches", tc.ctype, tc.body, "acme")
		if rec.Code != 202 || body["payments"] != float64(2) || body["rejected"] != float64(1) ||
			!strings.Contains(rec.Body.String(), `{"line":`) || !strings.Contains(rec.Body.String(), `"field":"rail"`) ||
			projected(body) != "API-RAIL 1/1/0 "+date+"; FILE-RAIL 1/1/0 "+date {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
	}
	// holdco's file misses the cut-off: projected HELD, then HELD.
	var held strings.Builder
	for i := range 4 {
		held.WriteString(pay(fmt.Sprintf("h-%d", i), "", late) + "\n")
	}
	rec, body := do("POST", "/v1/payment-batches?tenantId=holdco", "application/x-ndjson", held.String(), "admin")
	if rec.Code != 202 || projected(body) != "FILE-RAIL 4/0/4 "+date {
		t.Fatalf("holdco's file: %d %s", rec.Code, rec.Body)
	}

	// Once Phase A has run: each payment's rail and execution date.
	list := func(query, token string) (int, []map[string]any) {
		rec, body := do("GET", "/v1/payments?"+query, "", "", token)
		var out []map[string]any
		items, _ := body["payments"].([]any)
		for _, it := range items {
			out = append(out, it.(map[string]any))
		}
		return rec.Code, out
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, heldOnes := list("tenantId=holdco&status=HELD", "admin")
		_, scheduled := list("tenantId=acme&status=SCHEDULED", "acme")
		if len(heldOnes) == 4 && len(scheduled) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Phase A: %d held, %d scheduled", len(heldOnes), len(scheduled))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for id, rail := range map[string]string{"s-1": "API-RAIL", "s-2": "FILE-RAIL", "f-1": "FILE-RAIL", "c-2": "API-RAIL"} {
		rec, body := do("GET", "/v1/payments/"+id, "", "", "acme")
		if rec.Code != 200 || body["rail"] != rail || body["executionDate"] != date {
			t.Errorf("%s: %d %s, want rail %s on %s", id, rec.Code, rec.Body, rail, date)
		}
	}
	for _, tc := range []struct {
		query, token string
		status       int
		want         string // the ids listed, sorted
	}{
		{"tenantId=acme&rail=API-RAIL", "acme", 200, "c-2 f-2 s-1"},
		{"rail=FILE-RAIL", "acme", 200, "c-1 f-1 s-2"},
		{"tenantId=acme&rail=NONE", "acme", 200, ""},
		{"tenantId=holdco&status=HELD&rail=FILE-RAIL", "admin", 200, "h-0 h-1 h-2 h-3"},
		{"tenantId=holdco&status=HELD&rail=API-RAIL", "admin", 200, ""},
		{"tenantId=acme&rail=bad%20rail", "acme", 422, ""},
		{"tenantId=acme&rail=API-RAIL", "globex", 403, ""},
	} {
		code, items := list(tc.query, tc.token)
		var ids []string
		for _, it := range items {
			ids = append(ids, fmt.Sprint(it["paymentId"]))
			if it["rail"] == nil || it["executionDate"] != date {
				t.Errorf("%s: item %v without its rail or execution date", tc.query, it)
			}
		}
		sort.Strings(ids)
		if code != tc.status || strings.Join(ids, " ") != tc.want {
			t.Errorf("%s as %s: %d %v, want %d %q", tc.query, tc.token, code, ids, tc.status, tc.want)
		}
	}

	// A cancel may name HELD: a dry run counts them.
	if rec, body := do("POST", "/admin/payments/cancel", "application/json", `{"tenantId":"holdco","statuses":["HELD"],"dryRun":true}`, "admin"); rec.Code != 200 || body["cancelled"] != float64(4) {
		t.Errorf("a dry-run cancel of the held: %d %s", rec.Code, rec.Body)
	}
	// An operator releases holdco's held payments; a tenant cannot.
	if rec, _ := do("POST", "/admin/payments/release", "application/json", `{"tenantId":"acme"}`, "acme"); rec.Code != 403 {
		t.Errorf("a tenant's release: %d %s", rec.Code, rec.Body)
	}
	if rec, body := do("POST", "/admin/payments/release", "application/json", `{"paymentIds":["h-0"]}`, "admin"); rec.Code != 422 || problemFields(body) != "tenantId,paymentIds" {
		t.Errorf("ids without their tenant: %d %s", rec.Code, rec.Body)
	}
	if rec, _ := do("POST", "/admin/payments/release", "application/json", `{"batchId":"batch-nope"}`, "admin"); rec.Code != 404 {
		t.Errorf("an unknown file: %d %s", rec.Code, rec.Body)
	}
	rec, body = do("POST", "/admin/payments/release", "application/json", `{"tenantId":"holdco","rail":"FILE-RAIL"}`, "admin")
	if rec.Code != 200 || body["released"] != float64(4) || body["held"] != float64(0) || body["lastSlot"] == nil {
		t.Fatalf("release: %d %s", rec.Code, rec.Body)
	}
	if _, still := list("tenantId=holdco&status=HELD", "admin"); len(still) != 0 {
		t.Errorf("%d still held after the release", len(still))
	}
	var action, detail string
	if err := pool.QueryRow(ctx, `SELECT action, detail::text FROM admin_audit ORDER BY seq DESC LIMIT 1`).Scan(&action, &detail); err != nil ||
		action != "POST /admin/payments/release" || !strings.Contains(detail, `"released": 4`) {
		t.Errorf("the release's audit entry: %q %s (%v)", action, detail, err)
	}
}
