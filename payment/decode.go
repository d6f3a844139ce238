package payment

import (
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/strictjson"
)

// DecodeRequest reads one payment sent as JSON (the body of POST
// /v1/payments, a line of a JSON-lines file). A body that is not a
// payment's JSON is refused with a *strictjson.Error naming the field;
// whether the payment is valid is Validate's business.
func DecodeRequest(b []byte) (Request, error) {
	if r, ok := decodePlain(b); ok {
		return r, nil
	}
	var r Request
	if err := strictjson.Decode(b, &r); err != nil {
		return Request{}, err
	}
	return r, nil
}

// decodePlain reads a payment's JSON in the form nearly every line of a
// bulk file has, in one pass over its bytes: one object of Request's
// member names, each once and spelt as tagged, every value a string
// without escapes (creditor an object of the same kind). strictjson's
// walk and encoding/json's decode cost eight times as much, and a file of
// 500,000 payments is decoded on the intake's clock.
//
// It answers ok only where strictjson.Decode takes b and decodes it to
// the same Request (FuzzDecodePlain holds it to that). Anything else (an
// escape, a null, a name in another case, any mistake) is left to
// strictjson, which judges it and names what is wrong.
func decodePlain(b []byte) (r Request, ok bool) {
	if !utf8.Valid(b) {
		return Request{}, false
	}
	s := plainScanner{b: b}
	var seen uint16
	var seenCreditor uint8
	creditor := func(name []byte) bool {
		var bit uint8
		var dst *string
		switch string(name) {
		case "name":
			bit, dst = 1, &r.Creditor.Name
		case "iban":
			bit, dst = 2, &r.Creditor.IBAN
		case "bic":
			bit, dst = 4, &r.Creditor.BIC
		default:
			return false
		}
		if seenCreditor&bit != 0 {
			return false
		}
		seenCreditor |= bit
		return s.stringInto(dst)
	}
	member := func(name []byte) bool {
		var bit uint16
		var dst *string
		switch string(name) {
		case "paymentId":
			bit, dst = 1, &r.PaymentID
		case "tenantId":
			bit, dst = 2, &r.TenantID
		case "debtorAccount":
			bit, dst = 4, &r.DebtorAccount
		case "amount":
			bit, dst = 8, &r.Amount
		case "currency":
			bit, dst = 16, &r.Currency
		case "remittanceInfo":
			bit, dst = 32, &r.RemittanceInfo
		case "creditor":
			bit = 64
		case "requestedExecutionTime":
			bit = 128
		case "rail":
			bit, dst = 256, &r.Rail
		case "priority":
			bit, dst = 512, (*string)(&r.Priority)
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch bit {
		case 64:
			return s.object(creditor)
		case 128:
			// As encoding/json decodes a time: the quoted literal to
			// time.Time's own UnmarshalJSON.
			raw, ok := s.quoted()
			return ok && r.RequestedExecutionTime.UnmarshalJSON(raw) == nil
		}
		return s.stringInto(dst)
	}
	if !s.object(member) {
		return Request{}, false
	}
	s.space()
	if s.i != len(s.b) {
		return Request{}, false
	}
	return r, true
}

// plainScanner reads the plain JSON decodePlain takes; every method
// answers false on anything else.
type plainScanner struct {
	b []byte
	i int
}

// space skips JSON's whitespace.
func (s *plainScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// token takes the byte c after any whitespace.
func (s *plainScanner) token(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// quoted takes a string without escapes or control characters, quotes
// included.
func (s *plainScanner) quoted() ([]byte, bool) {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			raw := s.b[s.i : j+1]
			s.i = j + 1
			return raw, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// stringInto takes a string into dst.
func (s *plainScanner) stringInto(dst *string) bool {
	raw, ok := s.quoted()
	if ok {
		*dst = string(raw[1 : len(raw)-1])
	}
	return ok
}

// object takes an object, giving each member's name to member, which
// takes its value.
func (s *plainScanner) object(member func(name []byte) bool) bool {
	if !s.token('{') {
		return false
	}
	if s.token('}') {
		return true
	}
	for {
		name, ok := s.quoted()
		if !ok || !s.token(':') || !member(name[1:len(name)-1]) {
			return false
		}
		if s.token('}') {
			return true
		}
		if !s.token(',') {
			return false
		}
	}
}
