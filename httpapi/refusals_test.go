package httpapi_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/ledger/service"
)

// TestRefusalBodies: each route that refuses input a package checked (a
// payment, a rail, a calendar, a routing table, a cut-off rule, a pause,
// a rate-limit config, a slot, a webhook endpoint, a dead letters'
// filter or requeue, an account, an FX rate) answers with the same
// problem document, byte for byte, on the real stores. The bodies were
// recorded before the packages' validation errors became one type.
func TestRefusalBodies(t *testing.T) {
	if testing.Short() {
		t.Skip("a database")
	}
	t.Parallel()
	d := newAuditedDB(t, func(s *httpapi.Services, pool *pgxpool.Pool) { s.Accounts = service.New(pool) })
	do := func(method, path, body, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		d.rt.ServeHTTP(rec, req)
		return rec
	}
	// A tenant with as many endpoints as it may have: the next is refused
	// by the webhook store, not by the handler's own checks.
	for i := range 16 {
		if rec := do("POST", "/admin/webhooks", fmt.Sprintf(`{"tenantId":"fullco","url":"https://hooks.fullco.example/%d"}`, i), "admin"); rec.Code != 201 {
			t.Fatalf("endpoint %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	const future = `"requestedExecutionTime":"2099-01-01T12:00:00Z"`
	for _, tt := range []struct {
		name, method, path, body, token string
		want                            int
		wantBody                        string
	}{
		{"a payment's fields", "POST", "/v1/payments",
			`{"paymentId":"p 1","debtorAccount":"","amount":"-1","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},` + future + `}`, "acme", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid payment","status":422,"detail":"3 field(s) need fixing; nothing was stored","instance":"/v1/payments","errors":[{"field":"paymentId","detail":"use 1 to 64 letters, digits, '-', '_' or '.'"},{"field":"debtorAccount","detail":"required, at most 64 characters"},{"field":"amount","detail":"not a plain decimal number: \"-1\": no sign; send a positive decimal such as \"125.00\""}]}`},
		{"a payment's rail, refused by routing", "POST", "/v1/payments",
			`{"paymentId":"p-9","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"Jane Doe","iban":"DE89370400440532013000"},"rail":"GHOST",` + future + `}`, "acme", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid payment","status":422,"detail":"1 field(s) need fixing; nothing was stored","instance":"/v1/payments","errors":[{"field":"rail","detail":"no rail \"GHOST\""}]}`},
		{"a rate-limit config", "POST", "/admin/rate-limit/config", `{"configName":"bad name","maxPerWindow":5,"windowSize":"PT1S"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid rate-limit config","status":422,"detail":"nothing was changed","instance":"/admin/rate-limit/config","errors":[{"field":"configName","detail":"want 1-100 letters, digits, '_', '.', ':' or '-'"}]}`},
		{"a slot", "POST", "/api/v1/slots", `{"eventId":"e\u0001","configName":"fifty","requestedTime":"2099-01-01T12:00:00Z"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid request","status":422,"detail":"nothing was changed","instance":"/api/v1/slots","errors":[{"field":"eventId","detail":"want 1-200 characters of UTF-8 text, no control characters"}]}`},
		{"a webhook endpoint's URL", "POST", "/admin/webhooks", `{"tenantId":"acme","url":"ftp://hooks.acme.example/"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid webhook endpoint","status":422,"detail":"the endpoint has invalid fields","instance":"/admin/webhooks","errors":[{"field":"url","detail":"must be an https:// URL"}]}`},
		{"a webhook endpoint too many", "POST", "/admin/webhooks", `{"tenantId":"fullco","url":"https://hooks.fullco.example/17"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid webhook endpoint","status":422,"detail":"webhook: tenantId: a tenant has at most 16 endpoints: delete one first","instance":"/admin/webhooks","errors":[{"field":"tenantId","detail":"a tenant has at most 16 endpoints: delete one first"}]}`},
		{"a dead letters' filter", "GET", "/admin/dead-letters?source=inbox", "", "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid filter","status":422,"detail":"fix the query parameters","instance":"/admin/dead-letters","errors":[{"field":"source","detail":"dispatch or outbox"}]}`},
		{"a dead letters' requeue", "POST", "/admin/dead-letters/requeue", `{"ids":["queue:1"]}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid requeue","status":422,"detail":"invalid ids: not a dead letter's id: queue:1 (want dispatch:\u003citem type\u003e:\u003citem id\u003e or outbox:\u003coutbox id\u003e, as listed)","instance":"/admin/dead-letters/requeue","errors":[{"field":"ids","detail":"not a dead letter's id: queue:1 (want dispatch:\u003citem type\u003e:\u003citem id\u003e or outbox:\u003coutbox id\u003e, as listed)"}]}`},
		{"a rail's fields", "POST", "/admin/rails", `{"name":"bad name","type":"FAX","timeZone":"Mars/Olympus"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid rail","status":422,"detail":"3 field(s) need fixing; nothing was stored","instance":"/admin/rails","errors":[{"field":"name","detail":"want 1-64 letters, digits, '_', '.', ':' or '-'"},{"field":"type","detail":"want one of SEPA_JSON, PACS008"},{"field":"timeZone","detail":"want an IANA time zone name, e.g. Europe/Berlin"}]}`},
		{"a rail's calendar, refused by the store", "POST", "/admin/rails", `{"name":"LATE","type":"SEPA_JSON","calendar":"NOPE"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid rail","status":422,"detail":"2 field(s) need fixing; nothing was stored","instance":"/admin/rails","errors":[{"field":"calendar","detail":"no calendar of that name: create it first, or use TARGET2 or WEEKDAYS"},{"field":"rateLimitConfig","detail":"rail DEFAULT paces by it already: each rail needs a limit of its own"}]}`},
		{"a rail's rate-limit config, refused by the store", "POST", "/admin/rails", `{"name":"LATE","type":"SEPA_JSON","rateLimitConfig":"nope"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid rail","status":422,"detail":"1 field(s) need fixing; nothing was stored","instance":"/admin/rails","errors":[{"field":"rateLimitConfig","detail":"no rate-limit config of that name: create it first"}]}`},
		{"a calendar", "POST", "/admin/calendars", `{"name":"bad name","weekend":["SAT"],"closingDays":["1969-12-31"]}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid calendar","status":422,"detail":"2 field(s) need fixing; nothing was stored","instance":"/admin/calendars","errors":[{"field":"name","detail":"want 1-100 letters, digits, '_', '.', ':' or '-'"},{"field":"closingDays[0]","detail":"want a date from 1970-01-01 to 9999-12-31"}]}`},
		{"a routing table", "POST", "/admin/routing-rules", `{"rules":[{"currency":"EUR","rail":"GHOST"},{"rail":"NOON"}]}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid routing rules","status":422,"detail":"1 field(s) need fixing; nothing was stored","instance":"/admin/routing-rules","errors":[{"field":"rules[0].rail","detail":"no rail of that name"}]}`},
		{"a cut-off rule", "POST", "/admin/cutoff-rules", `{"tenantId":"acme","rule":"LATER"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid cut-off rule","status":422,"detail":"1 field(s) need fixing; nothing was stored","instance":"/admin/cutoff-rules","errors":[{"field":"rule","detail":"want ROLL, HOLD or REJECT"}]}`},
		{"a pause's scope", "POST", "/admin/pauses", `{"scope":"PLANET","id":"x"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid pause","status":422,"detail":"scope is TENANT, BATCH or RAIL, and id names the tenant, the file (batch id) or the rail; nothing was changed","instance":"/admin/pauses","errors":[{"field":"scope","detail":"want TENANT, BATCH or RAIL"}]}`},
		{"a pause's id", "POST", "/admin/pauses", `{"scope":"RAIL","id":"bad name"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid pause","status":422,"detail":"scope is TENANT, BATCH or RAIL, and id names the tenant, the file (batch id) or the rail; nothing was changed","instance":"/admin/pauses","errors":[{"field":"id","detail":"want a rail's name"}]}`},
		{"a resume's scope", "DELETE", "/admin/pauses/PLANET/x", "", "admin", 400,
			`{"type":"https://paydispatch.dev/problems/malformed-request","title":"Invalid path","status":400,"detail":"scope is TENANT, BATCH or RAIL, and id names the tenant, the file (batch id) or the rail; nothing was changed","instance":"/admin/pauses/PLANET/x","errors":[{"field":"scope","detail":"want TENANT, BATCH or RAIL"}]}`},
		{"a priority", "POST", "/v1/payments/p-1/priority", `{"priority":"URGENT"}`, "acme", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid priority","status":422,"detail":"nothing was changed","instance":"/v1/payments/p-1/priority","errors":[{"field":"priority","detail":"HIGH, NORMAL or LOW"}]}`},
		{"an account", "POST", "/v1/accounts", `{"accountId":"a b","tenantId":"acme","currency":"eur","balance":"-1","fee":"0.001","limits":[{"period":"YEAR","amount":"1"}]}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid account","status":422,"detail":"4 field(s) need fixing; nothing was stored","instance":"/v1/accounts","errors":[{"field":"accountId","detail":"required: 1 to 64 letters, digits, '-', '_' or '.'"},{"field":"currency","detail":"\"eur\" is not an ISO 4217 currency code such as EUR"},{"field":"balance","detail":"must not be negative"},{"field":"limits[0].period","detail":"\"YEAR\" is not one of MINUTE, HOUR, DAY, WEEK, MONTH"}]}`},
		{"an FX rate", "POST", "/admin/fx-rates", `{"base":"EUR","quote":"EUR","rate":"0"}`, "admin", 422,
			`{"type":"https://paydispatch.dev/problems/invalid-request","title":"Invalid FX rate","status":422,"detail":"2 field(s) need fixing; nothing was stored","instance":"/admin/fx-rates","errors":[{"field":"quote","detail":"must differ from base"},{"field":"rate","detail":"must be greater than zero"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(tt.method, tt.path, tt.body, tt.token)
			if got := rec.Body.String(); rec.Code != tt.want || got != tt.wantBody+"\n" {
				t.Errorf("%d %s\nwant %d %s", rec.Code, got, tt.want, tt.wantBody)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}
