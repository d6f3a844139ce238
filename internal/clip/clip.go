// Package clip shortens text taken from outside before it is echoed in a
// response, an error or a log line, so that a hostile input cannot fill
// them or break their encoding.
package clip

import (
	"strings"
	"unicode/utf8"
)

// Text returns s cut to at most n bytes of valid UTF-8 (invalid bytes
// become U+FFFD), with "…" marking a cut.
func Text(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
