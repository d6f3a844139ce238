package bankid

import "unicode/utf8"

// Mask hides an account number, IBAN or other identifier for logs and
// errors, keeping just enough to tell two apart: the first four and last
// four characters of a long value ("DE89…3000"), the last two of a short
// one ("…-1"), nothing of a value of four characters or fewer.
func Mask(s string) string {
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return ""
	case n <= 4:
		return "…"
	}
	r := []rune(s)
	if n <= 8 {
		return "…" + string(r[n-2:])
	}
	return string(r[:4]) + "…" + string(r[n-4:])
}
