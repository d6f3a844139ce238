// Package plaintext checks and shortens text taken from outside: Valid
// before it is stored (a NUL or invalid UTF-8 cannot reach PostgreSQL,
// and no rail carries control characters), Clip before it is echoed in a
// response, an error or a log line, so that a hostile input cannot fill
// them or break their encoding.
package plaintext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Valid reports whether s is UTF-8 without control characters.
func Valid(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// Clip returns s cut to at most n bytes of valid UTF-8 (invalid bytes
// become U+FFFD), with "…" marking a cut.
func Clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
