package field_test

import (
	"encoding/json"
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
