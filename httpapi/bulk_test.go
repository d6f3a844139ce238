package httpapi_test

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/payment"
)

// TestBulkFormats: a bulk file in JSON lines, CSV or pain.001, chosen by
// Content-Type; an unreadable file is refused whole, naming where; the
// tenantId query parameter fills payments without one; an unknown type
// is 415.
func TestBulkFormats(t *testing.T) {
	t.Parallel()
	csvFile, err := os.ReadFile("../bulkfile/testdata/payments.csv")
	if err != nil {
		t.Fatal(err)
	}
	painFile, err := os.ReadFile("../bulkfile/testdata/pain001.xml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ctype, query, body string
		want                     int
		wantIDs                  []string
		wantTenant, wantInBody   string
	}{
		{"csv", "text/csv", "", string(csvFile), 202, []string{"pay-c1", "pay-c2"}, "acme", ""},
		{"csv with charset", "text/csv; charset=utf-8", "", string(csvFile), 202, []string{"pay-c1", "pay-c2"}, "acme", ""},
		{"pain.001", "application/xml", "?tenantId=acme", string(painFile), 202, []string{"pay-x1", "pay-x2"}, "acme", ""},
		{"pain.001 without a tenant", "application/xml", "", string(painFile), 202, []string{"pay-x1", "pay-x2"}, "", ""},
		{"csv, unknown column", "text/csv", "", "paymentId,amout\np,1\n", 400, nil, "", `"field":"line 1"`},
		{"pain.001, not XML", "application/xml", "", "{}", 400, nil, "", "pain.001"},
		{"pdf", "application/pdf", "", "%PDF", 415, nil, "", "text/csv"},
		{"csv, one bad row: the rest start", "text/csv", "", string(csvFile) + "pay-c3,acme,ACC-1,1.00,EUR,J,DE89370400440532013000,,tomorrow,\n", 202,
			[]string{"pay-c1", "pay-c2"}, "acme", `"rejected":1,"rejections":[{"line":4,"errors":[{"field":"requestedExecutionTime"`},
		{"csv, one bad row, atomic", "text/csv", "?atomic=true", string(csvFile) + "pay-c3,acme,ACC-1,1.00,EUR,J,DE89370400440532013000,,tomorrow,\n", 422,
			nil, "", `line 4: requestedExecutionTime`},
		{"atomic, not a boolean", "text/csv", "?atomic=yes", string(csvFile), 400, nil, "", `"field":"atomic"`},
	}
	for _, tt := range tests {
		pays := &fakePayments{byID: map[string]payment.Request{}}
		rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}}}, Services: httpapi.Services{Payments: pays}})
		req := httptest.NewRequest("POST", "/v1/payment-batches"+tt.query, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", tt.ctype)
		req.Header.Set("Authorization", "Bearer admin")
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.wantInBody) {
			t.Errorf("%s: %d %s; want %d with %q", tt.name, rec.Code, rec.Body, tt.want, tt.wantInBody)
			continue
		}
		if rec.Code == 202 {
			progress := httptest.NewRecorder()
			prq := httptest.NewRequest("GET", "/v1/payment-batches/b", nil)
			prq.Header.Set("Authorization", "Bearer admin")
			rt.ServeHTTP(progress, prq)
			rej := httptest.NewRecorder()
			rrq := httptest.NewRequest("GET", "/v1/payment-batches/b/rejections", nil)
			rrq.Header.Set("Authorization", "Bearer admin")
			rt.ServeHTTP(rej, rrq)
			if progress.Code != 200 || !strings.Contains(progress.Body.String(), `"progress":{"received":`) || rej.Code != 200 ||
				!strings.Contains(rej.Body.String(), `"rejections":[`) || rec.Header().Get("Location") != "/v1/payment-batches/b" {
				t.Errorf("%s: progress %d %s, rejections %d %s, Location %q", tt.name, progress.Code, progress.Body, rej.Code, rej.Body, rec.Header().Get("Location"))
			}
		}
		if len(pays.byID) != len(tt.wantIDs) {
			t.Errorf("%s: stored %d, want %v", tt.name, len(pays.byID), tt.wantIDs)
		}
		for _, id := range tt.wantIDs {
			if p, ok := pays.byID[id]; !ok || p.TenantID != tt.wantTenant {
				t.Errorf("%s: %s stored %t, tenant %q, want %q", tt.name, id, ok, p.TenantID, tt.wantTenant)
			}
		}
	}
}

// TestBodyLimits: a body over its limit is 413, single and bulk alike,
// and nothing is stored.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	pays := &fakePayments{byID: map[string]payment.Request{}}
	rt := newRouter(t, httpapi.RouterConfig{MaxBody: 100, MaxBulkBody: 1000, Services: httpapi.Services{Payments: pays}})
	for _, tt := range []struct{ path, ctype, body string }{
		{"/v1/payments", "application/json", `{"paymentId":"` + strings.Repeat("p", 200) + `"}`},
		{"/v1/payment-batches", "application/x-ndjson", strings.Repeat(`{"paymentId":"p-1"}`+"\n", 100)},
		{"/v1/payment-batches", "text/csv", "paymentId,debtorAccount,amount,currency,creditorName,creditorIban,requestedExecutionTime\n" + strings.Repeat("p,A,1,EUR,J,DE89370400440532013000,2030-01-01T00:00:00Z\n", 30)},
	} {
		req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", tt.ctype)
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		if rec.Code != 413 || len(pays.byID) != 0 {
			t.Errorf("%s %s: %d (%s), %d stored; want 413, none", tt.path, tt.ctype, rec.Code, rec.Body, len(pays.byID))
		}
	}
}
