package money

import (
	"fmt"

	gomoney "github.com/Rhymond/go-money"
	"github.com/shopspring/decimal"
)

// MaxAmount bounds every amount the ledger accepts (exclusive): sums of
// such amounts stay far inside the columns' twenty integer digits.
var MaxAmount = decimal.New(1, 15)

// MaxScale bounds the decimal exponent of any amount or rate the ledger
// looks at. A decimal string such as "1e-999999999" parses cheaply, but
// comparing it with anything rescales it to a billion digits; every check
// asks Plausible first.
const MaxScale = 24

// Plausible reports whether d's exponent is within ±MaxScale, so that
// arithmetic on it is cheap. Check it before anything else.
func Plausible(d decimal.Decimal) bool {
	e := d.Exponent()
	return e >= -MaxScale && e <= MaxScale
}

// noMinorUnit are ISO 4217 codes whose minor unit is "N.A.": commodities
// and units of account, not currencies an account can be kept in.
var noMinorUnit = map[string]bool{"XAU": true, "XAG": true, "XDR": true}

// MinorUnits returns the number of decimals of an ISO 4217 currency code
// (EUR 2, JPY 0, BHD 3, CLF 4); ok is false for anything else, lower-case
// codes included.
func MinorUnits(code string) (digits int32, ok bool) {
	if len(code) != 3 || noMinorUnit[code] {
		return 0, false
	}
	for _, c := range code {
		if c < 'A' || c > 'Z' {
			return 0, false
		}
	}
	cur := gomoney.GetCurrency(code)
	if cur == nil {
		return 0, false
	}
	return int32(cur.Fraction), true
}

// Valid reports whether code is a currency the ledger can keep accounts in.
func Valid(code string) bool {
	_, ok := MinorUnits(code)
	return ok
}

// Fits reports whether d has no more decimals than the currency's minor
// units (trailing zeros do not count: 1.50 fits EUR, 1.005 does not).
func Fits(d decimal.Decimal, code string) bool {
	digits, ok := MinorUnits(code)
	return ok && Plausible(d) && d.Equal(d.Truncate(digits))
}

// Round rounds d half-even to the currency's minor units. An unknown
// currency leaves d as it is.
func Round(d decimal.Decimal, code string) decimal.Decimal {
	digits, ok := MinorUnits(code)
	if !ok {
		return d
	}
	return d.RoundBank(digits)
}

// CheckAmount returns nil when d is a positive amount of the currency
// below MaxAmount with no more decimals than its minor units, else an
// error saying which rule it breaks.
func CheckAmount(d decimal.Decimal, code string) error {
	digits, ok := MinorUnits(code)
	switch {
	case !Plausible(d):
		return fmt.Errorf("not a plausible amount (exponent %d)", d.Exponent())
	case !ok:
		return fmt.Errorf("%q is not an ISO 4217 currency code such as EUR", code)
	case !d.IsPositive():
		return fmt.Errorf("must be greater than zero, got %s", d)
	case !d.LessThan(MaxAmount):
		return fmt.Errorf("must be below %s", MaxAmount)
	case !d.Equal(d.Truncate(digits)):
		return fmt.Errorf("%s has more decimals than %s's %d", d, code, digits)
	}
	return nil
}
