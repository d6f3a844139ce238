package payment_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/paydispatch/paydispatch/payment"
)

// A key is the version 5 UUID of the tenant's id in the keys' namespace,
// as it has been since keys were scoped to tenants: every stored payment,
// slot and workflow is named by it.
func TestKeyIsVersion5OfTenantAndID(t *testing.T) {
	t.Parallel()
	space := uuid.MustParse("5b0f6d7e-2f43-5c1a-9a51-0d4f3c6e8a27")
	tests := []struct{ tenant, id string }{
		{"acme", "acme-000"},
		{"", ""},
		{"t", strings.Repeat("x", 200)}, // past the stack buffer
		{"bänk", "zahlung-€-1"},
		{"a\x00b", "c"},
	}
	for _, tt := range tests {
		want := uuid.NewSHA1(space, []byte(tt.tenant+"\x00"+tt.id)).String()
		if got := payment.Key(tt.tenant, tt.id); got != want {
			t.Errorf("Key(%q, %q) = %s, want %s", tt.tenant, tt.id, got, want)
		}
	}
	// Pinned: a change of derivation would rename every stored payment.
	if got, want := payment.Key("acme", "acme-000"), "920cbd7e-4c55-52a7-9832-9b831659b0a5"; got != want {
		t.Errorf("Key(acme, acme-000) = %s, want %s", got, want)
	}
}
