package payment

import "github.com/paydispatch/paydispatch/internal/strictjson"

// DecodeRequest reads one payment sent as JSON (the body of POST
// /v1/payments, a line of a JSON-lines file). A body that is not a
// payment's JSON is refused with a *strictjson.Error naming the field;
// whether the payment is valid is Validate's business.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if err := strictjson.Decode(b, &r); err != nil {
		return Request{}, err
	}
	return r, nil
}
