package payment

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/paydispatch/paydispatch/internal/txdetail"
	"github.com/paydispatch/paydispatch/money"
)

// canonical is the request's JSON with normalized values, for comparison:
// the time in UTC, the amount as its columns give it back (requestOf), a
// rail the routing rules chose left out (the client did not send it).
// A file's id and fingerprint hash every payment's, and both are stored:
// the bytes are json.Marshal's, exactly (TestCanonicalIsMarshal,
// FuzzCanonical), written without its reflection, which was a tenth of a
// bulk file's handler.
func canonical(r Request) ([]byte, error) {
	return appendCanonical(make([]byte, 0, 320), r)
}

// appendCanonical appends r's canonical form to b: the file hashes encode
// every payment of a file into one buffer each, with no allocation a
// payment.
func appendCanonical(b []byte, r Request) ([]byte, error) {
	return appendRequestJSON(b, canonicalForm(r))
}

// canonicalForm is r with the normalized values canonical encodes.
func canonicalForm(r Request) Request {
	if r.routed {
		r.Rail = ""
	}
	r.Priority = ""
	r.RequestedExecutionTime = r.RequestedExecutionTime.UTC()
	if d, err := money.ParseDecimal(r.Amount, money.Unsigned); err == nil {
		r.Amount = amountText(d, r.Currency)
	}
	return r
}

// appendRequestJSON appends r as json.Marshal encodes it.
func appendRequestJSON(b []byte, r Request) ([]byte, error) {
	at, err := r.RequestedExecutionTime.MarshalJSON()
	if err != nil {
		return nil, &json.MarshalerError{Type: reflect.TypeFor[time.Time](), Err: err}
	}
	b = append(b, '{')
	if r.PaymentID != "" {
		b = appendMarshalString(append(b, `"paymentId":`...), r.PaymentID)
		b = append(b, ',')
	}
	b = appendMarshalString(append(b, `"tenantId":`...), r.TenantID)
	b = appendMarshalString(append(b, `,"debtorAccount":`...), r.DebtorAccount)
	b = appendMarshalString(append(b, `,"amount":`...), r.Amount)
	b = appendMarshalString(append(b, `,"currency":`...), r.Currency)
	b = appendMarshalString(append(b, `,"creditor":{"name":`...), r.Creditor.Name)
	b = appendOmitEmpty(b, `,"iban":`, r.Creditor.IBAN)
	b = appendOmitEmpty(b, `,"bic":`, r.Creditor.BIC)
	b = append(append(b, `},"requestedExecutionTime":`...), at...)
	b = appendOmitEmpty(b, `,"remittanceInfo":`, r.RemittanceInfo)
	b = appendOmitEmpty(b, `,"rail":`, r.Rail)
	b = appendOmitEmpty(b, `,"priority":`, string(r.Priority))
	for i, f := range txdetail.Fields {
		b = appendOmitEmpty(b, detailMembers[i], f.Get(&r.Details))
	}
	return append(b, '}'), nil
}

// detailMembers are the details' member names as appendRequestJSON
// writes them, in txdetail.Fields' order.
var detailMembers = func() []string {
	out := make([]string, len(txdetail.Fields))
	for i, f := range txdetail.Fields {
		out[i] = `,"` + f.Name + `":`
	}
	return out
}()

// appendOmitEmpty appends the member name and s, unless s is empty.
func appendOmitEmpty(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendMarshalString(append(b, name...), s)
}

// appendMarshalString appends s as json.Marshal encodes a string: plain
// printable ASCII as it is, anything else (quotes, backslashes, control
// and HTML characters, U+2028, bad UTF-8) by json.Marshal itself.
func appendMarshalString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
