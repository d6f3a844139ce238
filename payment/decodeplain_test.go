package payment

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/strictjson"
)

// TestDecodePlain: the common form is read by the one-pass path; every
// other form is left to strictjson, which takes or refuses it.
func TestDecodePlain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		plain bool // decodePlain takes it
	}{
		{"a payment", `{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"Jürgen","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":"2030-01-01T16:00:00+01:00","remittanceInfo":"INV-1"}`, true},
		{"spaced out", " {\n\t\"amount\" : \"1.00\" ,\r\n \"creditor\" : { } } \n", true},
		{"empty", `{}`, true},
		{"an escape", `{"creditor":{"name":"J\u00fcrgen"}}`, false},
		{"a null", `{"remittanceInfo":null}`, false},
		{"another case", `{"Amount":"1.00"}`, false},
		{"twice", `{"amount":"1.00","amount":"2.00"}`, false},
		{"twice in the creditor", `{"creditor":{"iban":"X","iban":"Y"}}`, false},
		{"unknown", `{"amout":"1.00"}`, false},
		{"a number", `{"amount":1.00}`, false},
		{"a bad time", `{"requestedExecutionTime":"16:00"}`, false},
		{"trailing data", `{} {}`, false},
		{"a byte order mark", "\xEF\xBB\xBF{}", false},
		{"not UTF-8", "{\"creditor\":{\"name\":\"\xff\"}}", false},
		{"a control character", "{\"amount\":\"1\t00\"}", false},
		{"cut short", `{"amount":"1.00"`, false},
		{"a trailing comma", `{"amount":"1.00",}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := decodePlain([]byte(tt.in)); ok != tt.plain {
				t.Fatalf("decodePlain took it: %v, want %v", ok, tt.plain)
			}
			sameAsStrict(t, []byte(tt.in))
		})
	}
}

// FuzzDecodePlain: whatever decodePlain takes, strictjson takes too and
// decodes to the same payment; so the one-pass path never lets in what
// the strict decoder refuses, nor reads a line differently.
func FuzzDecodePlain(f *testing.F) {
	f.Add([]byte(`{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":"2030-01-01T16:00:00+01:00","remittanceInfo":"INV-1"}`))
	f.Add([]byte(`{"amount":"1","Amount":"2"}`))
	f.Add([]byte(`{"creditor":{"name":"a"},"creditor":{}}`))
	f.Add([]byte(`{"requestedExecutionTime":"2030-01-01T16:00:00.123456789-23:59"}`))
	f.Add([]byte(" { \"currency\" : \"EUR\" } \t"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsStrict(t, b)
	})
}

// sameAsStrict fails when decodePlain takes b and strictjson refuses it
// or reads it otherwise.
func sameAsStrict(t *testing.T, b []byte) {
	t.Helper()
	plain, ok := decodePlain(b)
	if !ok {
		return
	}
	var strict Request
	if err := strictjson.Decode(b, &strict); err != nil {
		t.Fatalf("decodePlain took what strictjson refuses (%v):\n%q", err, b)
	}
	pt, st := plain.RequestedExecutionTime, strict.RequestedExecutionTime
	if !pt.Equal(st) || pt.Location().String() != st.Location().String() || pt.Format("Z07:00") != st.Format("Z07:00") {
		t.Fatalf("time %v, strictjson's %v", pt, st)
	}
	plain.RequestedExecutionTime, strict.RequestedExecutionTime = pt, pt
	if plain != strict {
		t.Fatalf("decodePlain read %+v, strictjson %+v", plain, strict)
	}
}
