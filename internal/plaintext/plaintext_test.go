package plaintext_test

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"short", "short"},
		{"exactly10!", "exactly10!"},
		{"eleven char", "eleven cha…"},
		{"ééééééé", "ééééé…"},          // 14 bytes: cut at a rune boundary, not in one
		{"a\xffb", "a\uFFFDb"},         // invalid bytes replaced, not echoed
		{"\xff\xff\xff\xff", "\uFFFD"}, // a run of invalid bytes is one U+FFFD
	}
	for _, tt := range tests {
		got := plaintext.Clip(tt.in, 10)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, 10) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"": true, "Jane Doe": true, "Zoë Ñúñez, 株式会社": true,
		"a\x00b": false, "tab\there": false, "line\nbreak": false, "del\x7f": false, "\u0085next line": false, "\xff": false,
	} {
		if got := plaintext.Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

func ExampleClip() {
	fmt.Println(plaintext.Clip("DE89370400440532013000 and then a long tail", 22))
	// Output: DE89370400440532013000…
}
