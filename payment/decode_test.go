package payment_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/internal/strictjson"
	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
	"github.com/paydispatch/paydispatch/payment"
)

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, wantField string
		wantErr             bool
	}{
		{"a payment", `{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000"},"requestedExecutionTime":"2030-01-01T00:00:00Z"}`, "", false},
		{"amount as a number", `{"amount":1.00}`, "amount", true},
		{"a bad time", `{"requestedExecutionTime":"16:00"}`, "requestedExecutionTime", true},
		{"the amount twice", `{"amount":"1.00","amount":"1000.00"}`, "amount", true},
		{"a misspelt field", `{"amout":"1.00"}`, "amout", true},
		{"creditor as a string", `{"creditor":"Jane"}`, "creditor", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := payment.DecodeRequest([]byte(tt.in))
			var se *strictjson.Error
			switch {
			case !tt.wantErr && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr && (!errors.As(err, &se) || se.Field != tt.wantField):
				t.Fatalf("got %v, want a refusal naming %q", err, tt.wantField)
			}
		})
	}
}

// FuzzDecodeRequest: any body is a payment or a *strictjson.Error, never
// a panic; a decoded payment survives a round trip unchanged, so nothing
// in the body was silently dropped or altered.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"paymentId":"p-1","tenantId":"acme","debtorAccount":"ACC-1","amount":"1.00","currency":"EUR","creditor":{"name":"J","iban":"DE89370400440532013000","bic":"COBADEFFXXX"},"requestedExecutionTime":"2030-01-01T16:00:00+01:00","remittanceInfo":"INV-1"}`))
	f.Add([]byte(`{"amount":"1","amount":"2"}`))
	f.Add([]byte("{\"creditor\":{\"name\":\"\xff\"}}"))
	f.Add([]byte(`{"requestedExecutionTime":"9999-12-31T23:59:59.999999999Z"}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzcost.Default.Check(t, len(b), func() {
			if r, err := payment.DecodeRequest(b); err == nil {
				_, _ = payment.Validate(r, time.Now())
			}
		})
		r, err := payment.DecodeRequest(b)
		if err != nil {
			var se *strictjson.Error
			if !errors.As(err, &se) {
				t.Fatalf("a refusal that is not a *strictjson.Error: %T %v", err, err)
			}
			return
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("a decoded payment does not encode: %v", err)
		}
		r2, err := payment.DecodeRequest(again)
		if err != nil {
			t.Fatalf("a decoded payment, encoded, is refused: %v\n%s", err, again)
		}
		if !r2.RequestedExecutionTime.Equal(r.RequestedExecutionTime) {
			t.Fatalf("time %v became %v", r.RequestedExecutionTime, r2.RequestedExecutionTime)
		}
		r2.RequestedExecutionTime = r.RequestedExecutionTime
		if r2 != r {
			t.Fatalf("%+v became %+v", r, r2)
		}
	})
}
