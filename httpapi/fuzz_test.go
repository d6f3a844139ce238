package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/payment"
)

// validatingPayments validates as the real service does and stores only
// what is valid.
type validatingPayments struct{ fakePayments }

// Take checks as the real service does (it needs no database for that).
func (v *validatingPayments) Take(ctx context.Context, in payment.Intake) (payment.Taken, error) {
	return v.take(ctx, in, func(rs []payment.Request, lines []int) ([]payment.LineError, error) {
		return (&payment.Service{}).CheckBatchFrom(ctx, in.Source, rs, lines)
	})
}

var fuzzRoutes = []struct{ method, path, ctype string }{
	{"POST", "/v1/payments", "application/json"},
	{"POST", "/v1/payment-batches", "application/x-ndjson"},
	{"POST", "/v1/accounts", "application/json"},
	{"POST", "/admin/fx-rates", "application/json"},
	{"GET", "/v1/payments/", ""},
	{"GET", "/v1/accounts/", ""},
	{"GET", "/v1/processes/", ""},
	{"POST", "/admin/processes/", ""},
}

// FuzzRouter sends arbitrary bodies, paths and headers through the router
// with a tenant's token: never a panic, never a 5xx, every error a
// problem+json, and nothing stored by a refused request.
func FuzzRouter(f *testing.F) {
	f.Add(uint8(0), "", []byte(`{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"}`), "k")
	f.Add(uint8(1), "", []byte("{\"paymentId\":\"a\"}\n{bad\n\x00\xff"), "")
	f.Add(uint8(2), "", []byte(`{"accountId":"A","tenantId":"acme","currency":"EUR","balance":"1e999999999"}`), "k2")
	f.Add(uint8(3), "", []byte(`{"base":"EUR","quote":"USD","rate":"1.1","rate":"2"}`), "")
	f.Add(uint8(4), "../../etc/passwd", []byte{}, "")
	f.Add(uint8(5), "%00", []byte{}, "")
	f.Add(uint8(6), "11111111-1111-1111-1111-111111111111", []byte{}, "")
	f.Add(uint8(7), "11111111-1111-1111-1111-111111111111/pause", []byte{}, "")
	f.Add(uint8(0), "", []byte(strings.Repeat("[", 10000)), "")
	f.Add(uint8(2), "", []byte(`{"accountId":"A","tenantId":"acme","currency":"EUR","balance":"1","limits":[{"period":"DAY","amount":123456789012345678901234567890}]}`), "")
	f.Fuzz(func(t *testing.T, route uint8, suffix string, body []byte, key string) {
		if strings.Contains(suffix, "broken") || strings.Contains(string(body), "broken") {
			t.Skip(`the fake ledger fails on "broken", as a database down would`)
		}
		pays := &validatingPayments{fakePayments{byID: map[string]payment.Request{}}}
		led := &fakeLedger{accounts: map[string]service.NewAccount{}}
		rt := newRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"t": {TokenID: "t", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead, auth.AccountsWrite}}}, Services: httpapi.Services{Payments: pays, Accounts: led, FXRates: led, Processes: fakeProcesses{}, Audit: &fakeAudit{}}})

		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		target := r.path + suffix
		req, err := http.NewRequest(r.method, "http://x"+target, strings.NewReader(string(body)))
		if err != nil {
			return // not a URL a client could send
		}
		req.RequestURI = target
		if r.ctype != "" {
			req.Header.Set("Content-Type", r.ctype)
		}
		req.Header.Set("Authorization", "Bearer t")
		if key != "" {
			req.Header.Set("Idempotency-Key", key) // no key store: ignored
		}
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", r.method, target, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%s %q: %d with content type %q", r.method, target, rec.Code, ct)
			}
			if len(pays.byID) != 0 || len(led.accounts) != 0 || len(led.rates) != 0 {
				t.Fatalf("%s %q: %d, yet something was stored", r.method, target, rec.Code)
			}
		}
		for _, p := range pays.byID {
			if p.TenantID != "acme" {
				t.Fatalf("stored a payment of tenant %q with acme's token", p.TenantID)
			}
		}
	})
}
