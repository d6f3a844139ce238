package clip_test

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/clip"
)

func TestText(t *testing.T) {
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
		got := clip.Text(tt.in, 10)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Text(%q, 10) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func ExampleText() {
	fmt.Println(clip.Text("DE89370400440532013000 and then a long tail", 22))
	// Output: DE89370400440532013000…
}
