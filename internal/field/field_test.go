package field_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/internal/field"
)

// TestErrorJSON pins an item of a problem's errors (httpapi/openapi.json).
func TestErrorJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(field.Error{Field: "creditor.iban", Detail: "required"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"field":"creditor.iban","detail":"required"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a", "acme", "p-1_2.3", "ABC", strings.Repeat("x", 64)} {
		if !field.ValidID(s) {
			t.Errorf("ValidID(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", strings.Repeat("x", 65), "a b", "a/b", "é", "a\x00", "a:b", "a+b"} {
		if field.ValidID(s) {
			t.Errorf("ValidID(%q) = true, want false", s)
		}
	}
}

// TestInvalid: the message starts with what was refused, or with
// "invalid" before the first field; errors.Is holds for the package's
// sentinel and no other; Err is nil when no field was found wrong.
func TestInvalid(t *testing.T) {
	t.Parallel()
	errMine, errOther := errors.New("mine"), errors.New("other")
	two := []field.Error{{Field: "currency", Detail: "want EUR"}, {Field: "amount", Detail: "must be greater than zero"}}
	for _, tt := range []struct {
		name    string
		invalid field.Invalid
		want    string
	}{
		{"what was refused", field.Invalid{What: "invalid payment", Fields: two}, "invalid payment: currency: want EUR; amount: must be greater than zero"},
		{"nothing named", field.Invalid{Fields: two[:1]}, "invalid currency: want EUR"},
		{"a package's prefix", field.Invalid{What: "webhook", Fields: two[:1]}, "webhook: currency: want EUR"},
	} {
		if got := tt.invalid.Error(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	err := fmt.Errorf("saving: %w", &field.Invalid{Fields: two, Kind: errMine})
	var bad *field.Invalid
	if !errors.As(err, &bad) || !errors.Is(err, errMine) || errors.Is(err, errOther) || errors.Is(&field.Invalid{}, nil) {
		t.Errorf("errors.Is and As: %v", err)
	}
	if !bad.Has("amount") || bad.Has("rail") {
		t.Errorf("Has: %+v", bad.Fields)
	}
	var collect field.Invalid
	if err := collect.Err(); err != nil {
		t.Errorf("Err with no field: %v, want nil", err)
	}
	collect.Add("rail", "no rail \"GHOST\"")
	if err := collect.Err(); err == nil || err.Error() != `invalid rail: no rail "GHOST"` {
		t.Errorf("Err with a field: %v", err)
	}
}
