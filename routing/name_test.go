package routing_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/routing"
)

// A rail's name is 1 to 64 of A-Z, a-z, 0-9, '_', '.', ':' and '-',
// the rule the API and the CLI document.
func TestValidName(t *testing.T) {
	t.Parallel()
	rule := regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	tests := []struct {
		name string
		want bool
	}{
		{"SEPA_INST", true},
		{"rail.v2:eu-west", true},
		{"", false},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"sepa inst", false},
		{"sépa", false},
		{"a/b", false},
		{"a\x00", false},
		{"a\n", false},
	}
	for _, tt := range tests {
		if got := routing.ValidName(tt.name); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Every byte, alone and after a valid one, as the rule decides.
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)})} {
			if got, want := routing.ValidName(s), rule.MatchString(s); got != want {
				t.Errorf("ValidName(%q) = %v, the rule says %v", s, got, want)
			}
		}
	}
}
