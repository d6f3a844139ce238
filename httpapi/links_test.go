package httpapi_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/payment"
)

// executedPayments gives payment "done" an execution.
type executedPayments struct{ fakePayments }

func (f *executedPayments) Status(ctx context.Context, tenant, id string) (payment.View, error) {
	v, err := f.fakePayments.Status(ctx, tenant, id)
	if id == "done" {
		v.Status, v.ExecutionRef = payment.StatusDelivered, "exec-payment-k/run-1"
	}
	return v, err
}

// TestPaymentLinksToTemporalUI: GET /v1/payments/{id} links an executed
// payment's execution to its page in Temporal's Web UI, as the contract
// says; a payment not executed yet, or a router without a UI, has no link.
func TestPaymentLinksToTemporalUI(t *testing.T) {
	t.Parallel()
	pays := &executedPayments{fakePayments{byID: map[string]payment.Request{"done": {TenantID: "acme"}, "waiting": {TenantID: "acme"}}}}
	router := func(link bool) *httpapi.Router {
		cfg := httpapi.RouterConfig{Auth: fakeTokens{"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}}}}
		if link {
			cfg.ExecutionPage = func(wf, run string) string {
				return "http://127.0.0.1:8233/namespaces/default/workflows/" + wf + "/" + run + "/history"
			}
		}
		cfg.Services = httpapi.Services{Payments: pays}
		return newRouter(t, cfg)
	}
	var doc any
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://paydispatch.dev/openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("https://paydispatch.dev/openapi.json#/components/schemas/Payment")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id   string
		link bool
		want string
	}{
		{"done", true, "http://127.0.0.1:8233/namespaces/default/workflows/exec-payment-k/run-1/history"},
		{"waiting", true, ""},
		{"done", false, ""},
	} {
		rec := call(router(tt.link), "GET", "/v1/payments/"+tt.id+"?tenantId=acme", "", "Bearer admin")
		var got struct {
			Links *struct{ TemporalUI string } `json:"links"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != 200 || err != nil {
			t.Fatalf("%s: %d %v", tt.id, rec.Code, err)
		}
		link := ""
		if got.Links != nil {
			link = cmp.Or(got.Links.TemporalUI, "(empty)")
		}
		if link != tt.want {
			t.Errorf("%s (UI known: %t): link %q, want %q\n%s", tt.id, tt.link, link, tt.want, rec.Body)
		}
		body, _ := jsonschema.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
		if err := schema.Validate(body); err != nil {
			t.Errorf("%s: does not match the contract: %v\n%s", tt.id, err, rec.Body)
		}
	}
}
