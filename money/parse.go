package money

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// The bounds of a decimal from outside. Every column that holds money or
// a rate has at most twenty integer digits and twelve decimals; the
// bounds leave room above those so that the domain's own checks (minor
// units, MaxAmount, a rate's decimals) name the rule a value breaks.
const (
	// MaxDecimalLength bounds the text of a decimal, sign and point
	// included: it is checked before anything else is looked at.
	MaxDecimalLength = 48
	// MaxIntegerDigits and MaxFractionDigits bound the digits on each side
	// of the point (leading zeros count: the text is what costs).
	MaxIntegerDigits  = 24
	MaxFractionDigits = MaxScale
)

// Sign says whether a decimal may be negative.
type Sign bool

// The signs a field may take.
const (
	Unsigned Sign = false // amounts, fees, limits, rates
	Signed   Sign = true  // an opening balance of an account that may go below zero
)

// ErrNotDecimal is wrapped by every refusal of ParseDecimal.
var ErrNotDecimal = errors.New("not a plain decimal number")

// ParseDecimal reads a number sent from outside (a JSON string, a CSV
// field, an XML element's text, a flag) in the one form the API
// documents: digits, optionally a point followed by digits, and, where
// sign is Signed, a leading "-". Nothing else: no exponent ("1e3"), no
// "+", no bare ".5" or "5.", no spaces, no thousands separators. Its cost
// is bounded by MaxDecimalLength whatever the input: the text is checked
// character by character before any arithmetic, so "1e2147483647" costs
// what "1" does. The error says what to write instead and wraps
// ErrNotDecimal.
func ParseDecimal(s string, sign Sign) (decimal.Decimal, error) {
	if err := checkDecimal(s, sign); err != nil {
		return decimal.Decimal{}, fmt.Errorf("%w: %s", ErrNotDecimal, err)
	}
	if d, ok := parseSmall(s); ok {
		return d, nil
	}
	d, err := decimal.NewFromString(s)
	if err != nil { // unreachable for a checked text; kept so a change in the library cannot pass a bad value
		return decimal.Decimal{}, fmt.Errorf("%w: %q", ErrNotDecimal, s)
	}
	return d, nil
}

// parseSmall reads a checked decimal of at most 18 digits, every amount a
// payment file holds, as NewFromString would (the same coefficient and
// exponent: "1.50" is 150 × 10⁻²) without its big.Int: a million of them
// cost 1.1 s that way, most of a file's parsing.
func parseSmall(s string) (decimal.Decimal, bool) {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	point := strings.IndexByte(s, '.')
	digits, scale := len(s), int32(0)
	if point >= 0 {
		digits, scale = digits-1, int32(len(s)-point-1)
	}
	if digits > 18 { // an int64 holds any 18
		return decimal.Decimal{}, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if i != point {
			v = v*10 + int64(s[i]-'0')
		}
	}
	if neg {
		v = -v
	}
	return decimal.New(v, -scale), true
}

// checkDecimal says what is wrong with s's spelling, nil when nothing is.
func checkDecimal(s string, sign Sign) error {
	const example = `such as "125.00"`
	switch {
	case s == "":
		return fmt.Errorf("empty: send a decimal %s", example)
	case len(s) > MaxDecimalLength:
		return fmt.Errorf("%d characters, over the %d a decimal may have", len(s), MaxDecimalLength)
	}
	body := s
	if body[0] == '-' {
		if sign == Unsigned {
			return fmt.Errorf("%q: no sign; send a positive decimal %s", s, example)
		}
		body = body[1:]
	}
	intPart, frac, hasPoint := strings.Cut(body, ".")
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= '0' && c <= '9', c == '.':
		case c == 'e' || c == 'E':
			return fmt.Errorf("%q: no exponent; write the number out in digits %s", s, example)
		case c == '+':
			return fmt.Errorf("%q: no \"+\"; send the digits alone, %s", s, example)
		case c == '-':
			return fmt.Errorf("%q: a \"-\" only in front", s)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return fmt.Errorf("%q: no spaces", s)
		case c == ',' || c == '_' || c == '\'':
			return fmt.Errorf("%q: no digit separators; the decimal mark is \".\", %s", s, example)
		default:
			return fmt.Errorf("%q: digits and one \".\" only, %s", s, example)
		}
	}
	switch {
	case strings.Contains(frac, "."):
		return fmt.Errorf("%q: more than one \".\"", s)
	case intPart == "":
		return fmt.Errorf("%q: a digit before the point, such as \"0%s\"", s, body)
	case hasPoint && frac == "":
		return fmt.Errorf("%q: a digit after the point, such as %q, or no point", s, body+"0")
	case len(intPart) > MaxIntegerDigits:
		return fmt.Errorf("%q: more than %d digits before the point", s, MaxIntegerDigits)
	case len(frac) > MaxFractionDigits:
		return fmt.Errorf("%q: more than %d decimals", s, MaxFractionDigits)
	}
	return nil
}

// ParseAmount reads an amount of the currency from outside (ParseDecimal's
// form) and checks it with CheckAmount; zero is allowed when allowZero is
// set.
func ParseAmount(s, code string, allowZero bool) (decimal.Decimal, error) {
	d, err := ParseDecimal(s, Unsigned)
	if err != nil {
		return decimal.Decimal{}, err
	}
	if allowZero && d.IsZero() {
		return decimal.Zero, nil
	}
	if err := CheckAmount(d, code); err != nil {
		return decimal.Decimal{}, err
	}
	return d, nil
}
