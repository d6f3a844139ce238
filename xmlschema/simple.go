package xmlschema

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// primitive is a built-in XSD datatype a simple type derives from.
type primitive int

const (
	pString primitive = iota
	pDecimal
	pDate
	pDateTime
	pTime
	pBoolean
	pGYear
	pGYearMonth
	pBase64Binary
)

// builtins are the XSD datatypes supported, by their local name in the
// XML Schema namespace.
var builtins = map[string]primitive{
	"string": pString, "decimal": pDecimal, "date": pDate, "dateTime": pDateTime, "time": pTime,
	"boolean": pBoolean, "gYear": pGYear, "gYearMonth": pGYearMonth, "base64Binary": pBase64Binary,
}

// examples say what a valid value of each primitive looks like.
var examples = [...]string{
	pString:       "text",
	pDecimal:      "a decimal such as 125.00",
	pDate:         "a date such as 2026-11-22",
	pDateTime:     "a date-time such as 2026-11-22T16:00:00Z",
	pTime:         "a time such as 16:00:00Z",
	pBoolean:      "true or false",
	pGYear:        "a year such as 2026",
	pGYearMonth:   "a year and month such as 2026-11",
	pBase64Binary: "base64",
}

// simpleType is a named (or built-in) simple type: a primitive's lexical
// rules, then each derivation step's facets, all of which must hold.
type simpleType struct {
	name string // "Max35Text"; "xs:string" for a built-in
	prim primitive
	base *simpleType // the type this one restricts; nil for a built-in

	patterns                           []*regexp.Regexp // this step's patterns: one must match
	patternSrc                         []string
	enum                               map[string]bool
	enumList                           []string
	length                             int // -1: no such facet
	minLength                          int
	maxLength                          int
	totalDigits, fractionDigits        int
	minIncl, maxIncl, minExcl, maxExcl *decimalValue
}

func newSimpleType(name string, prim primitive, base *simpleType) *simpleType {
	return &simpleType{name: name, prim: prim, base: base, length: -1, minLength: -1, maxLength: -1, totalDigits: -1, fractionDigits: -1}
}

// isXMLSpace reports the four XML white-space characters.
func isXMLSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// collapse applies XSD's whiteSpace="collapse": trim, and one space for
// each inner run. Every primitive but string collapses.
func collapse(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r < 0x80 && isXMLSpace(byte(r)) })
	for i := 0; i < len(s); i++ {
		if isXMLSpace(s[i]) && (s[i] != ' ' || i+1 < len(s) && isXMLSpace(s[i+1])) {
			return collapseSlow(s)
		}
	}
	return s
}

func collapseSlow(s string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		if isXMLSpace(s[i]) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// check validates a value of the type and says, when it is not valid, what
// is wrong and what is expected.
func (t *simpleType) check(raw string) string {
	v := raw
	if t.prim != pString {
		v = collapse(raw)
	}
	var (
		dec    decimalValue
		octets int
	)
	switch t.prim {
	case pString:
	case pDecimal:
		d, ok := parseDecimal(v)
		if !ok {
			return t.bad(v, "want "+examples[t.prim])
		}
		dec = d
	case pBase64Binary:
		n, ok := base64Octets(v)
		if !ok {
			return t.bad(v, "want base64 (A-Z, a-z, 0-9, +, /, = padding)")
		}
		octets = n
	case pBoolean:
		if v != "true" && v != "false" && v != "1" && v != "0" {
			return t.bad(v, "want true or false")
		}
	default:
		if !checkTemporal(t.prim, v) {
			return t.bad(v, "want "+examples[t.prim])
		}
	}
	var chars = -1 // counted once, when a facet needs it
	for s := t; s != nil; s = s.base {
		if len(s.patterns) > 0 {
			matched := false
			for _, re := range s.patterns {
				if re.MatchString(v) {
					matched = true
					break
				}
			}
			if !matched {
				return t.bad(v, "it must match the pattern "+strings.Join(s.patternSrc, " or "))
			}
		}
		if s.enum != nil && !s.enum[v] {
			return t.bad(v, "want one of "+listClipped(s.enumList, 12))
		}
		if s.length >= 0 || s.minLength >= 0 || s.maxLength >= 0 {
			n, unit := octets, "bytes"
			if t.prim == pString {
				if chars < 0 {
					chars = utf8.RuneCountInString(v)
				}
				n, unit = chars, "characters"
			}
			switch {
			case s.length >= 0 && n != s.length:
				return fmt.Sprintf("%s of %d %s: %s must be exactly %d", t.what(), n, unit, t.name, s.length)
			case s.minLength >= 0 && n < s.minLength:
				return fmt.Sprintf("%s of %d %s: %s must be at least %d", t.what(), n, unit, t.name, s.minLength)
			case s.maxLength >= 0 && n > s.maxLength:
				return fmt.Sprintf("%s of %d %s: %s allows at most %d", t.what(), n, unit, t.name, s.maxLength)
			}
		}
		if t.prim == pDecimal {
			if msg := s.checkDecimal(dec); msg != "" {
				return t.bad(v, msg)
			}
		}
	}
	return ""
}

func (t *simpleType) what() string {
	if t.prim == pBase64Binary {
		return "binary value"
	}
	return "value"
}

func (t *simpleType) bad(v, want string) string {
	return fmt.Sprintf("%q is not a valid %s: %s", plaintext.Clip(v, 40), t.name, want)
}

func (s *simpleType) checkDecimal(d decimalValue) string {
	if s.totalDigits >= 0 && d.totalDigits() > s.totalDigits {
		return fmt.Sprintf("at most %d digits", s.totalDigits)
	}
	if s.fractionDigits >= 0 && len(d.frac) > s.fractionDigits {
		return fmt.Sprintf("at most %d digits after the point", s.fractionDigits)
	}
	if s.minIncl != nil && d.cmp(*s.minIncl) < 0 {
		return "at least " + s.minIncl.String()
	}
	if s.maxIncl != nil && d.cmp(*s.maxIncl) > 0 {
		return "at most " + s.maxIncl.String()
	}
	if s.minExcl != nil && d.cmp(*s.minExcl) <= 0 {
		return "more than " + s.minExcl.String()
	}
	if s.maxExcl != nil && d.cmp(*s.maxExcl) >= 0 {
		return "less than " + s.maxExcl.String()
	}
	return ""
}

func listClipped(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:n], ", ") + fmt.Sprintf(" (and %d more)", len(list)-n)
}

// decimalValue is an xs:decimal as its digits: int without leading zeros,
// frac without trailing zeros, so that equal values have equal forms.
type decimalValue struct {
	neg       bool
	int, frac string
}

// parseDecimal reads xs:decimal's lexical form: an optional sign, digits
// with an optional point ("1.", ".5" and "+1" are all valid XSD).
func parseDecimal(s string) (decimalValue, bool) {
	var d decimalValue
	if s != "" && (s[0] == '+' || s[0] == '-') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "" && fp == "" || !allDigits(ip) || !allDigits(fp) {
		return d, false
	}
	d.int = strings.TrimLeft(ip, "0")
	d.frac = strings.TrimRight(fp, "0")
	if d.int == "" && d.frac == "" {
		d.neg = false // -0 is 0
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// totalDigits is the digit count totalDigits limits: |i| < 10^n for the
// value i×10^-f, f its fraction digits (XSD 1.0 part 2, 4.3.11).
func (d decimalValue) totalDigits() int {
	if d.int == "" {
		return max(1, len(d.frac))
	}
	return len(d.int) + len(d.frac)
}

func (d decimalValue) cmp(e decimalValue) int {
	if d.neg != e.neg {
		if d.neg {
			return -1
		}
		return 1
	}
	c := d.cmpAbs(e)
	if d.neg {
		return -c
	}
	return c
}

func (d decimalValue) cmpAbs(e decimalValue) int {
	if len(d.int) != len(e.int) {
		if len(d.int) < len(e.int) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(d.int, e.int); c != 0 {
		return c
	}
	return strings.Compare(d.frac, e.frac) // no trailing zeros: lexical order is numeric order
}

func (d decimalValue) String() string {
	s := d.int
	if s == "" {
		s = "0"
	}
	if d.frac != "" {
		s += "." + d.frac
	}
	if d.neg {
		s = "-" + s
	}
	return s
}

// base64Octets checks xs:base64Binary's lexical form (collapsed: single
// spaces may separate characters) and returns the octets it encodes.
func base64Octets(s string) (int, bool) {
	n, pad := 0, 0
	var last, beforePad byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			continue
		case c == '=':
			pad++
			if pad > 2 {
				return 0, false
			}
			if pad == 1 {
				beforePad = last
			}
		case pad > 0:
			return 0, false // data after padding
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/':
			last = c
		default:
			return 0, false
		}
		n++
	}
	if n%4 != 0 {
		return 0, false
	}
	// The bits the padding leaves over must be zero (XSD's B16 and B04).
	switch pad {
	case 1:
		if !strings.ContainsRune("AEIMQUYcgkosw048", rune(beforePad)) {
			return 0, false
		}
	case 2:
		if !strings.ContainsRune("AQgw", rune(beforePad)) {
			return 0, false
		}
	}
	return n/4*3 - pad, true
}

// checkTemporal checks the lexical forms of the date and time primitives
// (XSD 1.0 part 2, 3.2.7 to 3.2.11), calendar included: no 2026-02-30.
func checkTemporal(p primitive, s string) bool {
	var (
		year, month, day int
		ok               bool
	)
	switch p {
	case pTime:
		s, ok = timeOfDay(s)
		return ok && timezone(s)
	case pGYear:
		if _, s, ok = yearPart(s); !ok {
			return false
		}
		return timezone(s)
	}
	if year, s, ok = yearPart(s); !ok || len(s) < 3 || s[0] != '-' {
		return false
	}
	if month, ok = twoDigits(s[1:3]); !ok || month < 1 || month > 12 {
		return false
	}
	s = s[3:]
	if p == pGYearMonth {
		return timezone(s)
	}
	if len(s) < 3 || s[0] != '-' {
		return false
	}
	if day, ok = twoDigits(s[1:3]); !ok || day < 1 || day > daysIn(year, month) {
		return false
	}
	s = s[3:]
	if p == pDate {
		return timezone(s)
	}
	if s == "" || s[0] != 'T' {
		return false
	}
	s, ok = timeOfDay(s[1:])
	return ok && timezone(s)
}

// yearPart reads '-'? yyyy, four or more digits, no leading zero beyond
// four, not 0000.
func yearPart(s string) (int, string, bool) {
	s = strings.TrimPrefix(s, "-")
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n < 4 || n > 4 && s[0] == '0' || n > 9 {
		return 0, "", false
	}
	y := 0
	for i := 0; i < n; i++ {
		y = y*10 + int(s[i]-'0')
	}
	if y == 0 {
		return 0, "", false
	}
	return y, s[n:], true
}

func twoDigits(s string) (int, bool) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// timeOfDay reads hh:mm:ss(.s+)?; 24:00:00 is the end of the day.
func timeOfDay(s string) (string, bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return "", false
	}
	h, ok1 := twoDigits(s[0:2])
	m, ok2 := twoDigits(s[3:5])
	sec, ok3 := twoDigits(s[6:8])
	if !ok1 || !ok2 || !ok3 || h > 24 || m > 59 || sec > 59 {
		return "", false
	}
	s = s[8:]
	fracZero := true
	if strings.HasPrefix(s, ".") {
		n := 1
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			if s[n] != '0' {
				fracZero = false
			}
			n++
		}
		if n == 1 {
			return "", false
		}
		s = s[n:]
	}
	if h == 24 && (m != 0 || sec != 0 || !fracZero) {
		return "", false
	}
	return s, true
}

// timezone accepts what may end a date or time: nothing, Z, or ±hh:mm
// (up to ±14:00).
func timezone(s string) bool {
	switch {
	case s == "" || s == "Z":
		return true
	case len(s) != 6 || s[0] != '+' && s[0] != '-' || s[3] != ':':
		return false
	}
	h, ok1 := twoDigits(s[1:3])
	m, ok2 := twoDigits(s[4:6])
	return ok1 && ok2 && m <= 59 && (h < 14 || h == 14 && m == 0)
}
