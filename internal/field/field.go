// Package field holds what every check of input shares, whichever layer
// it runs in (intake, the ledger, the rail, the HTTP API): Error, which
// names a bad field and what is wrong with it, and ValidID, the rule of
// the ids clients choose. payment.FieldError, ledger.FieldError,
// rail.FieldError and httpapi.FieldError are aliases of Error, so a
// field error passes from one layer to the next without a conversion.
package field

// Error names a field of an input (a JSON path such as creditor.iban, a
// header or a query parameter) and what is wrong with it. Its JSON is the
// API's FieldError (httpapi/openapi.json). The detail never quotes a full
// account number or a payload.
type Error struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// IDRule says what ValidID accepts, for the answers that refuse an id.
const IDRule = "1 to 64 letters, digits, '-', '_' or '.'"

// ValidID reports whether s is a client-chosen id (a payment's, an
// account's, a tenant's): 1 to 64 letters, digits, '-', '_' or '.'.
// Every way a tenant id comes in (a payment, an account, a token, a
// webhook endpoint, a pacing config, a query parameter) checks it here.
func ValidID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
