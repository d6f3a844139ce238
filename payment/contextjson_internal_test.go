package payment

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestStoredPhaseAJSON: the context Phase A stores with a payment, encoded
// by hand, is the JSON value encoding/json gives (PostgreSQL keeps it as
// jsonb, so the value is what counts): every field, empty and set, and
// strings with quotes, backslashes, control characters, HTML's
// characters, non-ASCII text and bytes that are not UTF-8.
func TestStoredPhaseAJSON(t *testing.T) {
	t.Parallel()
	odd := []string{"", "DE", `a"b`, `back\slash`, "tab\tnew\nline\x00\x1f", "<&>", "Zoë Ünal – 東京\u2028\u2029", "bad\xffutf8\xc3", "\x7f"}
	var cases []storedPhaseA
	for i, s := range odd {
		cases = append(cases,
			storedPhaseA{Enrichment: Enrichment{CreditorCountry: s, CreditorIBAN: s}, Amount: s},
			storedPhaseA{Enrichment: Enrichment{CreditorCountry: "DE", CreditorIBAN: "DE89370400440532013000", AccountKey: s,
				AccountCurrency: s, LimitBased: i%2 == 0, FXNeeded: i%3 == 0}, Amount: "125.5", Rules: []string{s, "MAX_AMOUNT"},
				PacingConfig: s, TenantPacingConfig: s, ExecutionDate: s, TraceParent: s},
			storedPhaseA{Rules: []string{}, PacingConfig: "payments", TraceParent: s})
	}
	for _, sp := range cases {
		want, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		got := sp.appendJSON(nil)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%+v: %s is not JSON: %v", sp, got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%+v:\n got %s\nwant %s", sp, got, want)
		}
	}
}
