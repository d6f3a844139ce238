package httpapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/payment"
)

// TestOpenAPIHasEveryRequestField: the contract's PaymentRequest (and
// Creditor) names every member of payment.Request and nothing else, the
// Payment view every detail of txdetail.Details, and docs/api.md each
// member: a field added to the type and not to the contract or the docs
// fails here (openapi.json is hand-written; the client is generated from
// it).
func TestOpenAPIHasEveryRequestField(t *testing.T) {
	t.Parallel()
	var spec struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &spec); err != nil {
		t.Fatal(err)
	}
	schemas := spec.Components.Schemas
	want := map[string]map[string]bool{"PaymentRequest": {}, "Creditor": {}}
	for _, f := range payment.RequestFields() {
		if parent, name, nested := strings.Cut(f.Path(), "."); nested {
			want["PaymentRequest"][parent] = true
			want["Creditor"][name] = true
		} else {
			want["PaymentRequest"][parent] = true
		}
	}
	for schema, members := range want {
		for name := range members {
			if _, ok := schemas[schema].Properties[name]; !ok {
				t.Errorf("openapi.json: %s lacks %s", schema, name)
			}
		}
		for name := range schemas[schema].Properties {
			if !members[name] {
				t.Errorf("openapi.json: %s has %s, which payment.Request does not", schema, name)
			}
		}
	}
	docs, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range txdetail.Fields {
		if _, ok := schemas["Payment"].Properties[f.Name]; !ok {
			t.Errorf("openapi.json: Payment lacks %s", f.Name)
		}
		if !strings.Contains(string(docs), "`"+f.Name+"`") {
			t.Errorf("docs/api.md does not name `%s`", f.Name)
		}
	}
	for name := range want["PaymentRequest"] {
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("docs/api.md does not name `%s`", name)
		}
	}
}
