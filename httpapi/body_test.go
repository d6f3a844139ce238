package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/payment"
)

// bodyRouter is a router with every handler that takes a body, and some
// that take none, on fakes of its own (they are not safe for concurrent
// use).
func bodyRouter(t testing.TB, cfg httpapi.RouterConfig) *httpapi.Router {
	t.Helper()
	led := &fakeLedger{accounts: map[string]service.NewAccount{}}
	cfg.Services = httpapi.Services{
		Payments:  &fakePayments{byID: map[string]payment.Request{}},
		Accounts:  led,
		FXRates:   led,
		Pacer:     &fakePacer{},
		Processes: fakeProcesses{},
		Audit:     &fakeAudit{},
		Rails:     newFakeRails(),
	}
	return newRouter(t, cfg)
}

const (
	aPayment = `{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR",` +
		`"creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"}`
	aSlot = `{"eventId":"e-1","configName":"default","requestedTime":"2030-01-01T00:00:00Z"}`
)

// TestBodyMediaTypes: a body goes only where its Content-Type, charset
// and Content-Encoding are taken; a missing Content-Type is refused when
// there is a body, and a route that takes no body needs none.
func TestBodyMediaTypes(t *testing.T) {
	t.Parallel()
	pause := "/admin/processes/" + processOf["acme"].String() + "/pause"
	tests := []struct {
		name, path, ctype, encoding, body string
		want                              int
		wantTitle, wantInDetail           string
		wantHeader                        [2]string
	}{
		{"JSON", "/v1/payments", "application/json", "", aPayment, 202, "", "", [2]string{}},
		{"JSON, charset utf-8", "/v1/payments", "application/json; charset=utf-8", "", aPayment, 202, "", "", [2]string{}},
		{"JSON, charset UTF-8", "/v1/payments", "application/json;charset=UTF-8", "", aPayment, 202, "", "", [2]string{}},
		{"a +json type", "/v1/payments", "application/vnd.paydispatch+json", "", aPayment, 202, "", "", [2]string{}},
		{"no Content-Type", "/v1/payments", "", "", aPayment, 415, "Unsupported media type", "application/json", [2]string{"Accept", "application/json"}},
		{"no Content-Type, accounts", "/v1/accounts", "", "", `{}`, 415, "Unsupported media type", "application/json", [2]string{}},
		{"no Content-Type, FX rates", "/admin/fx-rates", "", "", `{}`, 415, "Unsupported media type", "application/json", [2]string{}},
		{"no Content-Type, slots", "/api/v1/slots", "", "", aSlot, 415, "Unsupported media type", "application/json", [2]string{}},
		{"no Content-Type, bulk slots", "/api/v1/slots/bulk", "", "", `{}`, 415, "Unsupported media type", "application/json", [2]string{}},
		{"no Content-Type, config", "/admin/rate-limit/config", "", "", `{}`, 415, "Unsupported media type", "application/json", [2]string{}},
		{"no Content-Type, no body", "/v1/payments", "", "", "", 400, "Malformed JSON", "empty", [2]string{}},
		{"text/plain", "/v1/payments", "text/plain", "", aPayment, 415, "Unsupported media type", "text/plain", [2]string{}},
		{"not a media type", "/v1/payments", "json", "", aPayment, 415, "Unsupported media type", "application/json", [2]string{}},
		{"json as a prefix", "/v1/payments", "application/jsonx", "", aPayment, 415, "Unsupported media type", "application/jsonx", [2]string{}},
		{"another charset", "/v1/payments", "application/json; charset=iso-8859-1", "", aPayment, 415, "Unsupported media type", `charset "iso-8859-1"`, [2]string{}},
		{"gzip", "/v1/payments", "application/json", "gzip", "\x1f\x8b\x08\x00", 415, "Unsupported content encoding", `"gzip"`, [2]string{"Accept-Encoding", "identity"}},
		{"gzip, bulk", "/v1/payment-batches", "application/x-ndjson", "gzip", "\x1f\x8b\x08\x00", 415, "Unsupported content encoding", "uncompressed", [2]string{"Accept-Encoding", "identity"}},
		{"two codings", "/v1/payments", "application/json", "identity, br", aPayment, 415, "Unsupported content encoding", `"br"`, [2]string{}},
		{"identity", "/v1/payments", "application/json", "identity", aPayment, 202, "", "", [2]string{}},
		{"bulk, JSON lines", "/v1/payment-batches", "application/x-ndjson", "", aPayment, 202, "", "", [2]string{}},
		{"bulk, jsonl", "/v1/payment-batches", "application/jsonl", "", aPayment, 202, "", "", [2]string{}},
		{"bulk, text/xml", "/v1/payment-batches", "text/xml", "", "{}", 400, "Unreadable file", "", [2]string{}},
		{"bulk, iso20022", "/v1/payment-batches", "application/iso20022+xml", "", "{}", 400, "Unreadable file", "", [2]string{}},
		{"bulk, no Content-Type", "/v1/payment-batches", "", "", aPayment, 415, "Unsupported media type", "application/x-ndjson", [2]string{"Accept", "application/x-ndjson, application/jsonl, text/csv, application/xml, text/xml, application/iso20022+xml"}},
		{"bulk, application/json", "/v1/payment-batches", "application/json", "", aPayment, 415, "Unsupported media type", "text/csv", [2]string{}},
		{"bulk, another charset", "/v1/payment-batches", "text/csv; charset=windows-1252", "", "a\n", 415, "Unsupported media type", "charset", [2]string{}},
		{"an action takes no body", pause, "", "", "", 200, "", "", [2]string{}},
		{"an action, a JSON type and no body", pause, "application/json", "", "", 200, "", "", [2]string{}},
		{"an action ignores a body", pause, "", "", "{}", 200, "", "", [2]string{}},
		{"flush takes no body", "/admin/rate-limit/cache/flush", "", "", "", 200, "", "", [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			rec := httptest.NewRecorder()
			bodyRouter(t, httpapi.RouterConfig{}).ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("%d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if tt.wantTitle != "" {
				p := problemOf(t, rec)
				if p.Title != tt.wantTitle || !strings.Contains(p.Detail, tt.wantInDetail) {
					t.Fatalf("title %q detail %q, want %q and %q", p.Title, p.Detail, tt.wantTitle, tt.wantInDetail)
				}
			}
			if h := tt.wantHeader; h[0] != "" && rec.Header().Get(h[0]) != h[1] {
				t.Fatalf("%s: %q, want %q", h[0], rec.Header().Get(h[0]), h[1])
			}
		})
	}
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) httpapi.Problem {
	t.Helper()
	var p httpapi.Problem
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q: %s", ct, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code {
		t.Fatalf("problem %s: %v", rec.Body, err)
	}
	return p
}

// endless is a body that never ends, counting what is read of it.
type endless struct{ n atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '\n'
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// TestBodyLimitsBeforeReading: a declared length over the route's limit
// is 413 with nothing read; a body of unknown length is cut at the limit.
func TestBodyLimitsBeforeReading(t *testing.T) {
	t.Parallel()
	const single, bulk = 1000, 10_000
	tests := []struct {
		path, ctype string
		limit       int64
	}{
		{"/v1/payments", "application/json", single},
		{"/v1/accounts", "application/json", single},
		{"/admin/fx-rates", "application/json", single},
		{"/admin/rate-limit/config", "application/json", single},
		{"/api/v1/slots", "application/json", single},
		{"/api/v1/slots/bulk", "application/json", 64 << 20},
		{"/admin/calendars", "application/json", 1 << 20},
		{"/admin/routing-rules", "application/json", 1 << 20},
		{"/v1/payment-batches", "application/x-ndjson", bulk},
		{"/v1/payment-batches", "text/csv", bulk},
		{"/v1/payment-batches", "application/xml", bulk},
	}
	for _, tt := range tests {
		for _, declared := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s %s declared %t", tt.path, tt.ctype, declared), func(t *testing.T) {
				t.Parallel()
				rt := bodyRouter(t, httpapi.RouterConfig{MaxBody: single, MaxBulkBody: bulk})
				body := &endless{}
				req := httptest.NewRequest("POST", tt.path, body)
				req.Header.Set("Content-Type", tt.ctype)
				req.ContentLength = -1 // chunked
				if declared {
					req.ContentLength = tt.limit + 1
				}
				rec := httptest.NewRecorder()
				rt.ServeHTTP(rec, req)
				if rec.Code != http.StatusRequestEntityTooLarge {
					t.Fatalf("%d, want 413: %s", rec.Code, rec.Body)
				}
				if p := problemOf(t, rec); p.Title != "Request body too large" || !strings.Contains(p.Detail, fmt.Sprint(tt.limit)) {
					t.Fatalf("problem %+v", p)
				}
				read := body.n.Load()
				if declared && read != 0 || read > tt.limit+1 {
					t.Fatalf("%d bytes read of a body over %d", read, tt.limit)
				}
			})
		}
	}
}

// TestOverLimitAnsweredBeforeTheBody: a client that declares a length
// over the limit gets 413 without sending a byte of the body: with
// Expect: 100-continue no 100 Continue comes first, and without it the
// answer does not wait for the body.
func TestOverLimitAnsweredBeforeTheBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(bodyRouter(t, httpapi.RouterConfig{}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name, path, ctype, expect string
		length                    int64
		want                      string
	}{
		{"a 600 MB file, 100-continue", "/v1/payment-batches", "application/x-ndjson", "100-continue", 600 << 20, "413"},
		{"a 600 MB file", "/v1/payment-batches", "application/x-ndjson", "", 600 << 20, "413"},
		{"a 1 MB payment, 100-continue", "/v1/payments", "application/json", "100-continue", 1 << 20, "413"},
		{"a 1 MB payment", "/v1/payments", "application/json", "", 1 << 20, "413"},
		{"a file with no Content-Type, 100-continue", "/v1/payment-batches", "", "100-continue", 1000, "415"},
		{"gzip, 100-continue", "/v1/payments", "application/json\r\nContent-Encoding: gzip", "100-continue", 1000, "415"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST " + tt.path + " HTTP/1.1\r\nHost: x\r\n" + fmt.Sprintf("Content-Length: %d\r\n", tt.length)
			if tt.ctype != "" {
				head += "Content-Type: " + tt.ctype + "\r\n"
			}
			if tt.expect != "" {
				head += "Expect: " + tt.expect + "\r\n"
			}
			if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer without the body: %v", err)
			}
			defer resp.Body.Close()
			if got := fmt.Sprint(resp.StatusCode); got != tt.want {
				t.Fatalf("%s, want %s before any of the body", resp.Status, tt.want)
			}
			var p httpapi.Problem
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Title == "Malformed request" || p.Title == "" {
				t.Fatalf("problem %+v (%v)", p, err)
			}
		})
	}
}

// TestProblemTitles: each problem says what it is, and the body's
// encoding mistakes are named.
func TestProblemTitles(t *testing.T) {
	t.Parallel()
	pay := func(field, value string) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(aPayment), &m)
		var v any
		_ = json.Unmarshal([]byte(value), &v)
		if path := strings.Split(field, "."); len(path) == 2 {
			m[path[0]].(map[string]any)[path[1]] = v
		} else {
			m[field] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	account := `{"accountId":"A","tenantId":"t","currency":"EUR","balance":"1","limits":[{"period":{},"amount":"1"}]}`
	tests := []struct {
		name, method, path, body string
		want                     int
		wantTitle, wantField     string
		wantInDetail             string
	}{
		{"syntax", "POST", "/v1/payments", `{"amount":`, 400, "Malformed JSON", "", "cut short"},
		{"a byte order mark", "POST", "/v1/payments", "\xEF\xBB\xBF" + aPayment, 400, "Malformed JSON", "", "byte order mark (U+FEFF); send UTF-8 JSON without it"},
		{"UTF-16", "POST", "/v1/payments", "\xFF\xFE{\x00}\x00", 400, "Malformed JSON", "", "UTF-16"},
		{"UTF-16 without a BOM", "POST", "/v1/payments", "{\x00\"\x00}\x00", 400, "Malformed JSON", "", "UTF-16"},
		{"a time as a number", "POST", "/v1/payments", pay("requestedExecutionTime", "20300101"), 400, "Malformed JSON", "requestedExecutionTime", "RFC 3339 time string"},
		{"a time as a bool", "POST", "/v1/payments", pay("requestedExecutionTime", "true"), 400, "Malformed JSON", "requestedExecutionTime", "RFC 3339 time string"},
		{"a time as an object", "POST", "/v1/payments", pay("requestedExecutionTime", "{}"), 400, "Malformed JSON", "requestedExecutionTime", "not a JSON object"},
		{"a time as an array", "POST", "/v1/payments", pay("requestedExecutionTime", "[]"), 400, "Malformed JSON", "requestedExecutionTime", "not a JSON array"},
		{"a time without an offset", "POST", "/v1/payments", pay("requestedExecutionTime", `"2030-01-01T00:00:00"`), 400, "Malformed JSON", "requestedExecutionTime", "no UTC offset"},
		{"a time that is not RFC 3339", "POST", "/v1/payments", pay("requestedExecutionTime", `"01/01/2030"`), 400, "Malformed JSON", "requestedExecutionTime", "RFC 3339"},
		{"an IBAN as a number", "POST", "/v1/payments", pay("creditor.iban", "12345"), 400, "Malformed JSON", "creditor.iban", "want a string, not a JSON number"},
		{"a period as an object", "POST", "/v1/accounts", account, 400, "Malformed JSON", "limits[0].period", "want a string, not a JSON object"},
		{"a bad limit", "GET", "/admin/fx-rates?limit=x", "", 400, "Invalid query", "limit", ""},
		{"a bad atomic", "POST", "/v1/payment-batches?atomic=x", aPayment, 400, "Invalid query", "atomic", ""},
		{"a NUL in the query", "GET", "/admin/fx-rates?x=%00", "", 400, "Invalid query", "x", ""},
		{"a NUL in the path", "GET", "/v1/accounts/a%00", "", 400, "Invalid path", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			if strings.Contains(tt.path, "batches") {
				req.Header.Set("Content-Type", "application/x-ndjson")
			}
			rec := httptest.NewRecorder()
			bodyRouter(t, httpapi.RouterConfig{}).ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("%d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			p := problemOf(t, rec)
			field := ""
			if len(p.Errors) > 0 {
				field = p.Errors[0].Field
			}
			if p.Title != tt.wantTitle || field != tt.wantField || !strings.Contains(p.Detail, tt.wantInDetail) {
				t.Fatalf("title %q field %q detail %q; want %q, %q, %q", p.Title, field, p.Detail, tt.wantTitle, tt.wantField, tt.wantInDetail)
			}
			for _, goWord := range []string{"json:", "UnmarshalJSON", "time.Time", "Go value", "Malformed request"} {
				if strings.Contains(rec.Body.String(), goWord) {
					t.Fatalf("the problem says %q: %s", goWord, rec.Body)
				}
			}
		})
	}
}

// TestTenantTokenBodies: the checks hold for a tenant's token as for
// anyone (they run after authentication, before the handler).
func TestTenantTokenBodies(t *testing.T) {
	t.Parallel()
	rt := bodyRouter(t, httpapi.RouterConfig{Auth: fakeTokens{"t": {TokenID: "t", TenantID: "acme", Scopes: []auth.Scope{auth.PaymentsWrite}}}})
	req := httptest.NewRequest("POST", "/v1/payment-batches", strings.NewReader(aPayment))
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Fatalf("%d, want 415: %s", rec.Code, rec.Body)
	}
	req = httptest.NewRequest("POST", "/v1/payment-batches", strings.NewReader(aPayment))
	rec = httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401 first", rec.Code)
	}
}

// TestEveryPostDecidesItsBody: every POST route either takes a body, and
// then refuses one without a Content-Type, or is one of the actions that
// take none; a new route must be one or the other.
func TestEveryPostDecidesItsBody(t *testing.T) {
	t.Parallel()
	noBody := map[string]bool{
		"POST /admin/processes/{id}/retry": true, "POST /admin/processes/{id}/compensate": true,
		"POST /admin/processes/{id}/pause": true, "POST /admin/processes/{id}/resume": true,
		"POST /admin/rate-limit/config/{name}/deactivate": true, "POST /admin/rate-limit/cache/flush": true,
		"POST /admin/rate-limit/config/{name}/repace": true,
		"POST /v1/payments/{id}/cancel":               true, "POST /v1/payment-batches/{id}/cancel": true,
	}
	for _, pattern := range contractRouter(t).Patterns() {
		method, path, _ := strings.Cut(pattern, " ")
		if method != "POST" && method != "PUT" && method != "PATCH" {
			continue
		}
		path = strings.NewReplacer("{id}", processOf["acme"].String(), "{name}", "default").Replace(path)
		req := httptest.NewRequest(method, path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer admin")
		rec := httptest.NewRecorder()
		contractRouter(t).ServeHTTP(rec, req)
		if refused := rec.Code == http.StatusUnsupportedMediaType; refused == noBody[pattern] {
			t.Errorf("%s: %d without a Content-Type; it takes no body: %t", pattern, rec.Code, noBody[pattern])
		}
	}
}
