// Package field holds what every check of input shares, whichever layer
// it runs in (intake, the ledger, the rail, routing, pacing, the HTTP
// API): Error, which names a bad field and what is wrong with it;
// Invalid, the one validation error, which lists them; and ValidID, the
// rule of the ids clients choose.
package field

import "strings"

// Error names a field of an input (a JSON path such as creditor.iban, a
// header or a query parameter) and what is wrong with it. Its JSON is an
// item of a problem's errors (httpapi/openapi.json). The detail never
// quotes a full account number or a payload.
type Error struct {
	Field  string `json:"field"`
	Detail string `json:"detail"`
}

// Invalid is an input refused by its checks, with every field found
// wrong. It is the one validation error: whatever checks input returns
// it, so that the HTTP API and the CLI answer it the same way wherever it
// comes from.
type Invalid struct {
	// What begins the message, naming what was refused: "invalid
	// payment" gives "invalid payment: currency: want EUR"; empty gives
	// "invalid currency: want EUR". Each package keeps the start its
	// messages always had, since the CLI prints them and a payment's
	// rejection reason quotes routing's.
	What   string
	Fields []Error
	// Kind is the refusing package's sentinel (routing.ErrInvalid, say),
	// which errors.Is matches; nil: none.
	Kind error
}

func (e *Invalid) Error() string {
	var b strings.Builder
	if e.What == "" {
		b.WriteString("invalid ")
	} else {
		b.WriteString(e.What)
		b.WriteString(": ")
	}
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Field)
		b.WriteString(": ")
		b.WriteString(f.Detail)
	}
	return b.String()
}

// Is makes errors.Is(err, e.Kind) hold.
func (e *Invalid) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Has reports whether name is among the fields found wrong.
func (e *Invalid) Has(name string) bool {
	for _, f := range e.Fields {
		if f.Field == name {
			return true
		}
	}
	return false
}

// Add records that name is wrong, and how.
func (e *Invalid) Add(name, detail string) {
	e.Fields = append(e.Fields, Error{Field: name, Detail: detail})
}

// Err returns e, or nil when no field was found wrong: the end of a check
// that collects with Add.
func (e *Invalid) Err() error {
	if len(e.Fields) == 0 {
		return nil
	}
	return e
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
