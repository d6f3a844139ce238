package payment

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/txdetail"
)

// TestCanonicalIsMarshal: a request's canonical bytes are json.Marshal's,
// whatever its strings hold (a file's id and fingerprint, stored, hash
// them).
func TestCanonicalIsMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 15, 0, 0, 123456789, time.UTC)
	base := Request{PaymentID: "p-1", TenantID: "acme", DebtorAccount: "ACC-1", Amount: "1.00", Currency: "EUR",
		Creditor: Creditor{Name: "J", IBAN: "DE89370400440532013000", BIC: "COBADEFFXXX"}, RequestedExecutionTime: at, RemittanceInfo: "INV-1"}
	tests := []struct {
		name string
		edit func(r *Request)
	}{
		{"every field", func(*Request) {}},
		{"no id, no options", func(r *Request) {
			r.PaymentID, r.Creditor.IBAN, r.Creditor.BIC, r.RemittanceInfo = "", "", "", ""
		}},
		{"a rail, a priority and a detail", func(r *Request) {
			r.Rail, r.Priority, r.Details = "SEPA", PriorityHigh, txdetail.Details{PurposeCode: "SALA"}
		}},
		{"HTML and quotes", func(r *Request) { r.Creditor.Name = `<Smith & "Sons"> \ co` }},
		{"control characters", func(r *Request) { r.RemittanceInfo = "a\tb\nc\x00d\x1f\x7f" }},
		{"line separators", func(r *Request) { r.Creditor.Name = "Jürgen\u2028Müller\u2029" }},
		{"bad UTF-8", func(r *Request) { r.Creditor.Name = "\xff\xfe ok \xc3" }},
		{"an offset and no fraction", func(r *Request) {
			r.RequestedExecutionTime = time.Date(2030, 1, 1, 16, 0, 0, 0, time.FixedZone("", 3600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := base
			tt.edit(&r)
			assertCanonicalIsMarshal(t, r)
		})
	}
}

// FuzzCanonical: any request's canonical bytes are json.Marshal's of its
// canonical form.
func FuzzCanonical(f *testing.F) {
	f.Add(`{"paymentId":"p-1","tenantId":"acme","debtorAccount":"A","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89"},"remittanceInfo":"<&>"}`, int64(1893452400), int64(5), false)
	f.Add("{\"creditor\":{\"name\":\"\\u2028\\ufffd\\u0000\"},\"rail\":\"R\",\"priority\":\"LOW\",\"purposeCode\":\"SALA\"}", int64(-62135596800), int64(0), true)
	f.Fuzz(func(t *testing.T, body string, unix, nanos int64, routed bool) {
		var r Request
		if json.Unmarshal([]byte(body), &r) != nil {
			return
		}
		r.RequestedExecutionTime = time.Unix(unix, nanos%1e9).In(time.FixedZone("", int(unix%50_000)))
		r.routed = routed
		want, wantErr := json.Marshal(canonicalForm(r))
		got, err := canonical(r)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("canonical: %s, %v; json.Marshal of its form: %s, %v", got, err, want, wantErr)
		}
	})
}

func assertCanonicalIsMarshal(t *testing.T, r Request) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := appendRequestJSON(nil, r)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical bytes differ from json.Marshal's:\n got %s\nwant %s", got, want)
	}
}
