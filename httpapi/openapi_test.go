package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/console"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger/service"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/webhook"
)

// contractRouter is a router with every route serve mounts, on fakes.
func contractRouter(t *testing.T) *httpapi.Router {
	t.Helper()
	return contractRouterFor(t, fakeTokens{"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}}})
}

// contractRouterFor is contractRouter for the tokens given.
func contractRouterFor(t *testing.T, tokens fakeTokens) *httpapi.Router {
	t.Helper()
	led := &fakeLedger{accounts: map[string]service.NewAccount{}}
	rt := newRouter(t, httpapi.RouterConfig{Auth: tokens, Services: httpapi.Services{
		Payments:        &validatingPayments{fakePayments{byID: map[string]payment.Request{}}},
		Levers:          fakeLevers{},
		Pacer:           &fakePacer{},
		DispatchConfigs: newFakeDispatchConfigs(),
		Accounts:        led,
		FXRates:         led,
		Processes:       fakeProcesses{},
		Audit:           &fakeAudit{},
		Webhooks:        contractHooks,
		EventTypes:      payment.EventTypes(),
		DeadLetters:     newFakeDeadLetters(),
		Rails:           newFakeRails(),
		Console: console.New(consoleQueue{newFakeDispatchConfigs()}, &fakePacer{configs: []pacing.Limit{
			{Name: "fifty", MaxPerWindow: 50, Window: time.Second, Headroom: 100, Active: true, Version: 1}}}, nil, consoleRails{}),
		Metrics:  http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
		Contract: true,
	}})
	return rt
}

// consoleQueue is the dispatch settings' fake with a queue's depth, for
// the console's figures.
type consoleQueue struct{ *fakeDispatchConfigs }

func (consoleQueue) Depth(context.Context, string) (queue.Depth, error) {
	return queue.Depth{ByStatus: map[queue.Status]int64{queue.StatusReady: 12, queue.StatusCompleted: 30}}, nil
}

// consoleRails are two rails' figures: one past its cut-off, one with
// none and nothing waiting.
type consoleRails struct{}

func (consoleRails) RailFigures(context.Context) ([]console.RailFigure, error) {
	cutoff := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	finish, margin := cutoff.Add(90*time.Second), int64(-90)
	return []console.RailFigure{
		{Name: "DEFAULT", Type: "SEPA_JSON", Active: true, RateLimitConfig: "fifty", RatePerSecond: 50, BusinessDay: "2026-11-23"},
		{Name: "SEPA", Type: "PACS008", Active: true, Waiting: 4500, WaitingLater: 20, Held: 3, RateLimitConfig: "sepa", RatePerSecond: 40,
			BusinessDay: "2026-11-23", Cutoff: &cutoff, ProjectedFinish: &finish, PastCutoff: true, MarginSeconds: &margin},
	}, nil
}

// contractHooks holds one endpoint of acme's.
var contractHooks = func() *fakeWebhooks {
	f := &fakeWebhooks{}
	_, _, _ = f.RegisterTx(context.Background(), nil, webhook.NewEndpoint{TenantID: "acme", URL: "https://hooks.acme.example/pd"})
	return f
}()

type openAPIDoc struct {
	Paths map[string]map[string]struct {
		Scope     string                     `json:"x-scope"`
		Responses map[string]json.RawMessage `json:"responses"`
	} `json:"paths"`
}

// TestOpenAPIMatchesTheRoutes: the route table, walked: every row is a
// method and a path, once, with a scope (or Public) and a handler; every
// route in it is in the contract with the scope it really needs, and the
// contract names no route that is not in it.
func TestOpenAPIMatchesTheRoutes(t *testing.T) {
	t.Parallel()
	rt := contractRouter(t)
	scopes := []auth.Scope{httpapi.Public, auth.PaymentsWrite, auth.PaymentsRead, auth.PaymentsApprove, auth.AccountsWrite, auth.WebhooksWrite, auth.Admin}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	var registered []string
	for _, route := range rt.Routes() {
		method, path, ok := strings.Cut(route.Pattern, " ")
		if !ok || !slices.Contains(methods, method) || !strings.HasPrefix(path, "/") {
			t.Errorf("route %q is not a method and a path", route.Pattern)
		}
		if !slices.Contains(scopes, route.Scope) {
			t.Errorf("%s: scope %q is neither a scope nor Public", route.Pattern, route.Scope)
		}
		if route.Handler == nil {
			t.Errorf("%s has no handler", route.Pattern)
		}
		if slices.Contains(registered, route.Pattern) {
			t.Errorf("%s is in the table twice", route.Pattern)
		}
		registered = append(registered, route.Pattern)
	}
	slices.Sort(registered)
	if patterns := rt.Patterns(); !slices.Equal(patterns, registered) {
		t.Errorf("the router serves %v, its table holds %v", patterns, registered)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			pattern := strings.ToUpper(method) + " " + path
			documented = append(documented, pattern)
			scope, public := rt.RouteScope(pattern)
			if public != (op.Scope == "") || !public && string(scope) != op.Scope {
				t.Errorf("%s: the contract says scope %q, the router needs %q (public %t)", pattern, op.Scope, scope, public)
			}
			for status := range op.Responses {
				if _, err := strconv.Atoi(status); err != nil {
					t.Errorf("%s: response %q is not a status", pattern, status)
				}
			}
		}
	}
	slices.Sort(documented)
	for _, p := range registered {
		if !slices.Contains(documented, p) {
			t.Errorf("route %s is missing from openapi.json", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(registered, p) {
			t.Errorf("openapi.json names %s, which no handler serves", p)
		}
	}
}

// TestResponsesMatchTheContract: real answers of each endpoint, success
// and failure, validate against the contract's schema for their status.
func TestResponsesMatchTheContract(t *testing.T) {
	t.Parallel()
	var raw any
	if err := json.Unmarshal(httpapi.OpenAPI, &raw); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("https://paydispatch.dev/openapi.json", raw); err != nil {
		t.Fatal(err)
	}
	rt := contractRouter(t)
	pid := processOf["acme"].String()
	hookID := contractHooks.eps[0].ID.String()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	pay := `{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR",` +
		`"creditor":{"name":"J","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":"` + future + `"}`
	tests := []struct {
		method, path, docPath, body, token string
	}{
		{"GET", "/healthz", "/healthz", "", ""},
		{"GET", "/readyz", "/readyz", "", ""},
		{"POST", "/v1/payments", "/v1/payments", pay, "admin"},
		{"POST", "/v1/payments", "/v1/payments", `{"amount":12}`, "admin"},
		{"POST", "/v1/payments", "/v1/payments", `{"amount":"1"}`, "admin"},
		{"POST", "/v1/payments", "/v1/payments", pay, ""},
		{"POST", "/v1/payment-batches", "/v1/payment-batches", pay + "\n", "admin"},
		{"GET", "/v1/payments/p-1", "/v1/payments/{id}", "", "admin"},
		{"GET", "/v1/payment-batches/b", "/v1/payment-batches/{id}", "", "admin"},
		{"GET", "/v1/payment-batches/nope", "/v1/payment-batches/{id}", "", "admin"},
		{"GET", "/v1/payment-batches/b/rejections", "/v1/payment-batches/{id}/rejections", "", "admin"},
		{"GET", "/v1/payments/nope", "/v1/payments/{id}", "", "admin"},
		{"GET", "/v1/payments?tenantId=acme&status=SCHEDULED&limit=10", "/v1/payments", "", "admin"},
		{"GET", "/v1/payments?status=RECEIVED", "/v1/payments", "", "admin"},
		{"GET", "/v1/payments?tenantId=acme&cursor=nope", "/v1/payments", "", "admin"},
		{"POST", "/v1/accounts", "/v1/accounts", `{"accountId":"ACC-1","tenantId":"acme","currency":"EUR","balance":"10.00","limits":[{"period":"DAY","amount":"5.00"}]}`, "admin"},
		{"POST", "/v1/accounts", "/v1/accounts", `{"accountId":"bad id"}`, "admin"},
		{"GET", "/v1/accounts/ACC-1", "/v1/accounts/{id}", "", "admin"},
		{"GET", "/v1/processes/" + pid, "/v1/processes/{id}", "", "admin"},
		{"POST", "/admin/processes/" + pid + "/pause", "/admin/processes/{id}/pause", "", "admin"},
		{"POST", "/admin/fx-rates", "/admin/fx-rates", `{"base":"EUR","quote":"USD","rate":"1.08"}`, "admin"},
		{"GET", "/admin/fx-rates", "/admin/fx-rates", "", "admin"},
		{"GET", "/admin/audit", "/admin/audit", "", "admin"},
		{"GET", "/admin/audit?limit=0", "/admin/audit", "", "admin"},
		{"POST", "/admin/rate-limit/config", "/admin/rate-limit/config", `{"configName":"default","maxPerWindow":100,"windowSize":"PT4S"}`, "admin"},
		{"GET", "/admin/rate-limit/config/default", "/admin/rate-limit/config/{name}", "", "admin"},
		{"GET", "/admin/dispatch/config", "/admin/dispatch/config", "", "admin"},
		{"PATCH", "/admin/dispatch/config/PAYMENT", "/admin/dispatch/config/{itemType}", `{"exec_mode":"BATCH"}`, "admin"},
		{"PATCH", "/admin/dispatch/config/PAYMENT", "/admin/dispatch/config/{itemType}", `{"exec_mode":"NO"}`, "admin"},
		{"GET", "/admin/dispatch/config/NOPE", "/admin/dispatch/config/{itemType}", "", "admin"},
		{"POST", "/admin/webhooks", "/admin/webhooks", `{"tenantId":"acme","url":"https://hooks.acme.example/pd","eventTypes":["payment.cancelled"]}`, "admin"},
		{"POST", "/admin/webhooks", "/admin/webhooks", `{"tenantId":"acme","url":"ftp://x"}`, "admin"},
		{"GET", "/admin/webhooks", "/admin/webhooks", "", "admin"},
		{"GET", "/admin/webhooks/" + hookID, "/admin/webhooks/{id}", "", "admin"},
		{"GET", "/admin/webhooks/" + uuid.NewString(), "/admin/webhooks/{id}", "", "admin"},
		{"POST", "/admin/webhooks/" + hookID + "/rotate-secret", "/admin/webhooks/{id}/rotate-secret", `{}`, "admin"},
		{"GET", "/admin/webhooks/" + hookID + "/deliveries", "/admin/webhooks/{id}/deliveries", "", "admin"},
		{"POST", "/admin/webhooks/" + hookID + "/redrive", "/admin/webhooks/{id}/redrive", `{"deliveryIds":[2]}`, "admin"},
		{"GET", "/admin/dead-letters?source=outbox&limit=5", "/admin/dead-letters", "", "admin"},
		{"GET", "/admin/dead-letters?source=inbox", "/admin/dead-letters", "", "admin"},
		{"POST", "/admin/dead-letters/requeue", "/admin/dead-letters/requeue", `{"ids":["dispatch:PAYMENT:p-1"],"rateLimitConfig":"redrive"}`, "admin"},
		{"POST", "/admin/dead-letters/requeue", "/admin/dead-letters/requeue", `{"ids":["dispatch:PAYMENT:gone"]}`, "admin"},
		{"POST", "/admin/dead-letters/requeue", "/admin/dead-letters/requeue", `{"filter":{"source":"outbox"},"rateLimitConfig":"nope"}`, "admin"},
		{"GET", "/admin/console/stats", "/admin/console/stats", "", "admin"},
		{"GET", "/admin/console/stats", "/admin/console/stats", "", ""},
		{"GET", "/console/nope.js", "/console/{file}", "", ""},
		{"POST", "/api/v1/slots", "/api/v1/slots", `{"eventId":"e-1","configName":"default","requestedTime":"2030-01-01T00:00:00Z"}`, "admin"},
		{"POST", "/v1/payments", "/v1/payments", strings.Replace(pay, `"p-1"`, `"p-2","rail":"SEPA"`, 1), "admin"},
		{"GET", "/v1/payments?tenantId=acme&status=HELD&rail=SEPA", "/v1/payments", "", "admin"},
		{"GET", "/v1/payments?tenantId=acme&rail=no%20such", "/v1/payments", "", "admin"},
		{"POST", "/admin/rails", "/admin/rails", `{"name":"SEPA","type":"SEPA_JSON","rateLimitConfig":"sepa","timeZone":"Europe/Berlin","opens":"07:00","cutoff":"16:00:00","calendar":"TARGET2"}`, "admin"},
		{"POST", "/admin/rails", "/admin/rails", `{"name":"SEPA","type":"PACS008","endpoint":"https://rail.example/pacs","active":false}`, "admin"},
		{"POST", "/admin/rails", "/admin/rails", `{"name":"bad name","type":"FAX","opens":"25:00"}`, "admin"},
		{"GET", "/admin/rails", "/admin/rails", "", "admin"},
		{"GET", "/admin/rails/SEPA", "/admin/rails/{name}", "", "admin"},
		{"GET", "/admin/rails/NOPE", "/admin/rails/{name}", "", "admin"},
		{"POST", "/admin/calendars", "/admin/calendars", `{"name":"BANK","weekend":["SAT","sunday"],"closingDays":["2026-12-24"]}`, "admin"},
		{"POST", "/admin/calendars", "/admin/calendars", `{"name":"BANK"}`, "admin"},
		{"POST", "/admin/calendars", "/admin/calendars", `{"name":"target2"}`, "admin"},
		{"POST", "/admin/calendars", "/admin/calendars", `{"name":"BANK","weekend":["Caturday"],"closingDays":["2026-02-30"]}`, "admin"},
		{"GET", "/admin/calendars", "/admin/calendars", "", "admin"},
		{"GET", "/admin/calendars/TARGET2", "/admin/calendars/{name}", "", "admin"},
		{"GET", "/admin/calendars/BANK", "/admin/calendars/{name}", "", "admin"},
		{"GET", "/admin/calendars/NOPE", "/admin/calendars/{name}", "", "admin"},
		{"POST", "/admin/routing-rules", "/admin/routing-rules", `{"rules":[{"tenantId":"acme","currency":"EUR","minAmount":"0","maxAmount":"99999.99","source":"FILE","rail":"SEPA"},{"rail":"DEFAULT"}]}`, "admin"},
		{"POST", "/admin/routing-rules", "/admin/routing-rules", `{"rules":[{"minAmount":10,"rail":"SEPA"}]}`, "admin"},
		{"GET", "/admin/routing-rules", "/admin/routing-rules", "", "admin"},
		{"POST", "/admin/cutoff-rules", "/admin/cutoff-rules", `{"tenantId":"acme","rule":"hold"}`, "admin"},
		{"POST", "/admin/cutoff-rules", "/admin/cutoff-rules", `{"tenantId":"acme","rule":"SKIP"}`, "admin"},
		{"GET", "/admin/cutoff-rules?limit=5", "/admin/cutoff-rules", "", "admin"},
		{"POST", "/admin/payments/release", "/admin/payments/release", `{"tenantId":"acme","rail":"SEPA"}`, "admin"},
		{"POST", "/v1/payments/approve", "/v1/payments/approve", `{"tenantId":"acme","paymentIds":["p-1"],"dryRun":true}`, "admin"},
		{"POST", "/v1/payments/approve", "/v1/payments/approve", `{"tenantId":"acme","paymentIds":["own"]}`, "admin"},
		{"POST", "/v1/payments/approve", "/v1/payments/approve", `{"batchId":"nope"}`, "admin"},
		{"POST", "/v1/payments/approve", "/v1/payments/approve", `{"paymentIds":["p-1"]}`, "admin"},
		{"POST", "/v1/payments/deny", "/v1/payments/deny", `{"tenantId":"acme","paymentIds":["p-1"],"reason":"not ours"}`, "admin"},
		{"POST", "/v1/payments/deny", "/v1/payments/deny", `{"tenantId":"acme"}`, "admin"},
		{"POST", "/admin/approval-rules", "/admin/approval-rules", `{"tenantId":"acme","rules":[{"name":"big","minAmount":"1000.00","currency":"EUR","approvals":2}]}`, "admin"},
		{"POST", "/admin/approval-rules", "/admin/approval-rules", `{"tenantId":"acme","rules":[{"name":"big","approvals":0}]}`, "admin"},
		{"GET", "/admin/approval-rules?tenantId=acme", "/admin/approval-rules", "", "admin"},
		{"GET", "/admin/approval-rules", "/admin/approval-rules", "", "admin"},
		{"POST", "/admin/payments/release", "/admin/payments/release", `{"batchId":"nope"}`, "admin"},
		{"POST", "/admin/payments/release", "/admin/payments/release", `{"paymentIds":["p-1"]}`, "admin"},
		{"POST", "/admin/payments/reject", "/admin/payments/reject", `{"tenantId":"acme","paymentIds":["p-1"],"reason":"sanctions match"}`, "admin"},
		{"POST", "/admin/payments/reject", "/admin/payments/reject", `{"tenantId":"acme","paymentIds":[]}`, "admin"},
		{"POST", "/admin/pauses", "/admin/pauses", `{"scope":"TENANT","id":"acme"}`, "admin"},
		{"POST", "/admin/pauses", "/admin/pauses", `{"scope":"tenant","id":"acme"}`, "admin"},
		{"POST", "/admin/pauses", "/admin/pauses", `{"scope":"BATCH","id":"nope"}`, "admin"},
		{"POST", "/admin/pauses", "/admin/pauses", `{"scope":"RAIL"`, "admin"},
		{"GET", "/admin/pauses", "/admin/pauses", "", "admin"},
		{"DELETE", "/admin/pauses/TENANT/acme", "/admin/pauses/{scope}/{id}", "", "admin"},
		{"DELETE", "/admin/pauses/TENANT/globex", "/admin/pauses/{scope}/{id}", "", "admin"},
		{"DELETE", "/admin/pauses/FILE/b", "/admin/pauses/{scope}/{id}", "", "admin"},
		{"POST", "/v1/payments/p-1/priority?tenantId=acme", "/v1/payments/{id}/priority", `{"priority":"HIGH"}`, "admin"},
		{"POST", "/v1/payments/p-1/priority?tenantId=acme", "/v1/payments/{id}/priority", `{"priority":"URGENT"}`, "admin"},
		{"POST", "/v1/payments/p-1/priority", "/v1/payments/{id}/priority", `{"priority":"HIGH"}`, "admin"},
		{"POST", "/v1/payments/p-done/priority?tenantId=acme", "/v1/payments/{id}/priority", `{"priority":"HIGH"}`, "admin"},
		{"POST", "/v1/payments/nope/priority?tenantId=acme", "/v1/payments/{id}/priority", `{"priority":"HIGH"}`, "admin"},
		{"POST", "/v1/payment-batches/b/priority", "/v1/payment-batches/{id}/priority", `{"priority":"LOW"}`, "admin"},
		{"POST", "/v1/payment-batches/nope/priority", "/v1/payment-batches/{id}/priority", `{"priority":"LOW"}`, "admin"},
		{"POST", "/v1/payment-batches/b/priority", "/v1/payment-batches/{id}/priority", `{}`, "admin"},
		{"GET", "/v1/payments?tenantId=acme&priority=HIGH", "/v1/payments", "", "admin"},
		{"GET", "/v1/payments?tenantId=acme&priority=URGENT", "/v1/payments", "", "admin"},
		{"POST", "/v1/payment-batches?priority=HIGH", "/v1/payment-batches", strings.Replace(pay, `"p-1"`, `"p-3"`, 1) + "\n", "admin"},
		{"POST", "/v1/payment-batches?priority=URGENT", "/v1/payment-batches", pay + "\n", "admin"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		if strings.HasSuffix(tt.docPath, "batches") {
			req.Header.Set("Content-Type", "application/x-ndjson")
		}
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, req)
		ct := "application/json"
		if rec.Code >= 400 {
			ct = "application/problem+json"
		}
		if got := rec.Header().Get("Content-Type"); got != ct {
			t.Errorf("%s %s: %d with content type %q, want %q", tt.method, tt.path, rec.Code, got, ct)
			continue
		}
		loc := "https://paydispatch.dev/openapi.json#" + responsePointer(raw, tt.docPath, tt.method, rec.Code) +
			"/content/" + pointer(ct) + "/schema"
		sch, err := c.Compile(loc)
		if err != nil {
			t.Errorf("%s %s answered %d, which the contract does not describe: %v", tt.method, tt.path, rec.Code, err)
			continue
		}
		body, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			t.Errorf("%s %s: %v", tt.method, tt.path, err)
			continue
		}
		if err := sch.Validate(body); err != nil {
			t.Errorf("%s %s → %d does not match the contract: %v\n%s", tt.method, tt.path, rec.Code, err, rec.Body)
		}
	}
}

// responsePointer is the JSON pointer of the contract's response for
// status, following a reference to a shared response
// (#/components/responses/Unauthorized).
func responsePointer(doc any, path, method string, status int) string {
	ptr := "/paths/" + pointer(path) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(status)
	paths, _ := doc.(map[string]any)["paths"].(map[string]any)
	op, _ := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	resp, _ := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if ref, ok := resp["$ref"].(string); ok {
		return strings.TrimPrefix(ref, "#")
	}
	return ptr
}

// pointer escapes a JSON pointer token.
func pointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// operationDoc is what TestOperationsAreNamedAndListTheirErrors reads of
// each operation.
type operationDoc struct {
	OperationID string   `json:"operationId"`
	Tags        []string `json:"tags"`
	Summary     string   `json:"summary"`
	Scope       string   `json:"x-scope"`
	Security    []map[string][]string
	RequestBody *struct {
		Content map[string]json.RawMessage `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Ref     string                     `json:"$ref"`
		Content map[string]json.RawMessage `json:"content"`
	} `json:"responses"`
}

// TestOperationsAreNamedAndListTheirErrors: every operation has an
// operationId (lowerCamelCase, unique: a generated client's method name),
// a declared tag and a summary; its security names the scope it needs,
// declared by the bearer scheme; and every error the router really
// answers to a bad request of it (a bad query value, no token, a token
// without its scope, a body of another type, too long or malformed) is
// among its responses, as problem+json.
func TestOperationsAreNamedAndListTheirErrors(t *testing.T) {
	t.Parallel()
	var doc struct {
		Tags       []struct{ Name string } `json:"tags"`
		Paths      map[string]map[string]operationDoc
		Components struct {
			Responses       map[string]struct{ Content map[string]json.RawMessage }
			SecuritySchemes struct {
				Bearer struct {
					Scopes map[string]string `json:"x-scopes"`
				} `json:"bearer"`
			} `json:"securitySchemes"`
		}
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range auth.Scopes {
		if doc.Components.SecuritySchemes.Bearer.Scopes[string(s)] == "" {
			t.Errorf("the bearer scheme does not declare scope %s in x-scopes", s)
		}
	}
	tags := map[string]bool{}
	for _, tag := range doc.Tags {
		tags[tag.Name] = true
	}
	rt := contractRouterFor(t, fakeTokens{
		"admin":   {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"noscope": {TokenID: "n", TenantID: "acme"},
	})
	ids := map[string]string{}
	lowerCamel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	for path, ops := range doc.Paths {
		for method, op := range ops {
			name := strings.ToUpper(method) + " " + path
			switch {
			case !lowerCamel.MatchString(op.OperationID):
				t.Errorf("%s: operationId %q is not lowerCamelCase", name, op.OperationID)
			case ids[op.OperationID] != "":
				t.Errorf("%s: operationId %q is %s's too", name, op.OperationID, ids[op.OperationID])
			}
			ids[op.OperationID] = name
			if len(op.Tags) == 0 || op.Summary == "" {
				t.Errorf("%s: tags %v, summary %q", name, op.Tags, op.Summary)
			}
			for _, tag := range op.Tags {
				if !tags[tag] {
					t.Errorf("%s: tag %q is not among the document's tags", name, tag)
				}
			}
			if op.Scope != "" && (len(op.Security) != 1 || !slices.Equal(op.Security[0]["bearer"], []string{op.Scope})) {
				t.Errorf("%s: security %v, want bearer [%s]", name, op.Security, op.Scope)
			}
			for status, r := range op.Responses {
				content := r.Content
				if ref, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
					content = doc.Components.Responses[ref].Content
				}
				if status >= "400" && (len(content) != 1 || content["application/problem+json"] == nil) {
					t.Errorf("%s: %s is not application/problem+json alone", name, status)
				}
			}
			for _, probe := range errorProbes(op) {
				target := strings.NewReplacer("{id}", "x", "{name}", "x", "{itemType}", "x", "{file}", "x").Replace(path) + probe.query
				req := httptest.NewRequest(strings.ToUpper(method), target, strings.NewReader(probe.body))
				if probe.contentType != "" {
					req.Header.Set("Content-Type", probe.contentType)
				}
				if probe.length > 0 {
					req.ContentLength = probe.length
				}
				if probe.token != "" {
					req.Header.Set("Authorization", "Bearer "+probe.token)
				}
				rec := httptest.NewRecorder()
				rt.ServeHTTP(rec, req)
				if _, listed := op.Responses[strconv.Itoa(rec.Code)]; !listed {
					t.Errorf("%s, %s: answered %d, which its responses do not list: %s", name, probe.what, rec.Code, rec.Body)
				}
			}
		}
	}
}

type errorProbe struct {
	what, query, token, contentType, body string
	length                                int64
}

// errorProbes are bad requests of op, each of which the router refuses
// before any handler's own checks.
func errorProbes(op operationDoc) []errorProbe {
	ps := []errorProbe{{what: "a control character in the query", query: "?q=%01", token: "admin"}}
	if op.Scope != "" {
		ps = append(ps,
			errorProbe{what: "no token"},
			errorProbe{what: "a token without its scope", token: "noscope"})
	}
	if op.RequestBody != nil {
		ps = append(ps,
			errorProbe{what: "a body of another type", token: "admin", contentType: "image/png", body: "x"},
			errorProbe{what: "a body over the limit", token: "admin", contentType: firstKey(op.RequestBody.Content), body: "{}", length: 1 << 40})
		if op.RequestBody.Content["application/json"] != nil {
			ps = append(ps, errorProbe{what: "malformed JSON", token: "admin", contentType: "application/json", body: "{"})
		}
	}
	return ps
}

func firstKey(m map[string]json.RawMessage) string {
	keys := slices.Sorted(maps.Keys(m))
	return keys[0]
}

// The contract's fake keeps no pain.001 file: every status report is of
// an unknown batch.
func (fakePayments) RecordPain001(context.Context, string, payment.Pain001Origin, []payment.Request, []int) error {
	return nil
}

func (fakePayments) StatusReportOf(context.Context, string) (payment.Pain001Report, error) {
	return payment.Pain001Report{}, payment.ErrNotFound
}

// fakeLevers moves nothing: 3 waiting payments, moved. TENANT acme is
// paused; the file "b" is acme's; payment p-1 waits, p-done ended.
type fakeLevers struct{}

func (fakeLevers) RepaceConfig(context.Context, string, payment.Record) (payment.Repaced, error) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	return payment.Repaced{Moved: 3, FirstSlot: &at, LastSlot: &at}, nil
}

func (fakeLevers) Pause(_ context.Context, s payment.PauseScope, _ payment.Record) (payment.Paused, error) {
	if err := s.Validate(); err != nil {
		return payment.Paused{}, err
	}
	if s.Kind == payment.PauseBatch && s.ID != "b" {
		return payment.Paused{}, payment.ErrNotFound
	}
	return payment.Paused{Payments: 3, Parked: 2}, nil
}

func (f fakeLevers) Resume(ctx context.Context, s payment.PauseScope, r payment.Record) (payment.Repaced, error) {
	if s != (payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}) {
		return payment.Repaced{}, payment.ErrNotFound
	}
	return f.RepaceConfig(ctx, "", r)
}

func (fakeLevers) Pauses(context.Context) ([]payment.Pause, error) {
	return []payment.Pause{{PauseScope: payment.PauseScope{Kind: payment.PauseTenant, ID: "acme"}, PausedAt: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}}, nil
}

func (f fakeLevers) SetPriority(ctx context.Context, _, id string, p payment.Priority, r payment.Record) (payment.Reprioritized, error) {
	switch {
	case !p.Valid():
		return payment.Reprioritized{}, &field.Invalid{What: "invalid payment", Fields: []field.Error{{Field: "priority", Detail: "HIGH, NORMAL or LOW"}}}
	case id == "p-done":
		return payment.Reprioritized{}, payment.ErrNotWaiting
	case id != "p-1":
		return payment.Reprioritized{}, payment.ErrNotFound
	}
	moved, _ := f.RepaceConfig(ctx, "", r)
	return payment.Reprioritized{Changed: 1, Repaced: moved}, nil
}

func (f fakeLevers) SetBatchPriority(ctx context.Context, id, tenant string, p payment.Priority, r payment.Record) (payment.Reprioritized, error) {
	if id != "b" {
		return payment.Reprioritized{}, payment.ErrNotFound
	}
	return f.SetPriority(ctx, tenant, "p-1", p, r)
}

func (fakeLevers) Batch(_ context.Context, id string) (payment.BatchView, error) {
	if id != "b" {
		return payment.BatchView{}, payment.ErrNotFound
	}
	return payment.BatchView{BatchID: "b", Tenants: []string{"acme"}}, nil
}
