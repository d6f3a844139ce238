package money

import (
	"strconv"

	"github.com/shopspring/decimal"
)

// String is d.String() (no exponent, trailing zeros dropped: 1.50 is
// "1.5"). A coefficient of at most 17 digits, every amount's, is written
// without the library's big.Int copy and its conversion: three of them an
// amount in a file's intake (its fingerprint, its context, its column)
// cost a tenth of a second for every 100,000 payments.
func String(d decimal.Decimal) string {
	if b, ok := appendSmall(make([]byte, 0, 24), d, 0, true); ok {
		return string(b)
	}
	return d.String()
}

// StringFixed is d.StringFixed(places) for places ≥ 0: d rounded to that
// many decimals, all of them written ("1.5" to 2 is "1.50"). d with no
// more decimals than that, every amount in its currency's minor units,
// is written without the library's rounding and big.Int.
func StringFixed(d decimal.Decimal, places int32) string {
	if places >= 0 && -d.Exponent() <= places {
		if b, ok := appendSmall(make([]byte, 0, 24), d, places, false); ok {
			return string(b)
		}
	}
	return d.StringFixed(places)
}

// appendSmall writes d with at least places decimals (trailing zeros
// dropped when trim) as the library's string does, when d's coefficient
// has at most 17 digits and its exponent is not positive; ok is false
// otherwise. NumDigits can read one short at a power of ten, so 17 bounds
// the coefficient to 18 digits: an int64.
func appendSmall(b []byte, d decimal.Decimal, places int32, trim bool) ([]byte, bool) {
	exp := d.Exponent()
	if exp > 0 || d.NumDigits() > 17 {
		return b, false
	}
	v := d.CoefficientInt64()
	if v < 0 {
		b, v = append(b, '-'), -v
	}
	var buf [40]byte
	digits := strconv.AppendInt(buf[:0], v, 10)
	for scale := -exp; scale < places; scale++ { // zeros to the places asked
		digits, exp = append(digits, '0'), exp-1
	}
	frac := int(-exp)
	intLen := len(digits) - frac
	if intLen <= 0 {
		b = append(b, '0')
	} else {
		b = append(b, digits[:intLen]...)
	}
	// The fraction: its leading zeros (a coefficient shorter than the
	// scale), then its digits.
	lead := max(-intLen, 0)
	fraction := digits[max(intLen, 0):]
	if trim {
		for len(fraction) > 0 && fraction[len(fraction)-1] == '0' {
			fraction = fraction[:len(fraction)-1]
		}
		if len(fraction) == 0 {
			lead = 0
		}
	}
	if lead+len(fraction) > 0 {
		b = append(b, '.')
		for range lead {
			b = append(b, '0')
		}
		b = append(b, fraction...)
	}
	return b, true
}
