package money

import (
	"fmt"
	"sync"

	"github.com/moov-io/iso4217"
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

// MinorUnits returns the number of decimals of an active ISO 4217
// currency (EUR 2, JPY 0, BHD 3, CLF 4); ok is false for anything else:
// lower-case or numeric codes, withdrawn currencies, and the codes ISO
// gives no minor unit. It is the one currency table of intake, the ledger
// and the rail (see the package doc).
func MinorUnits(code string) (digits int32, ok bool) {
	if len(code) != 3 || !upper(code[0]) || !upper(code[1]) || !upper(code[2]) {
		return 0, false
	}
	d := minorUnits()[codeIndex(code)]
	if d < 0 {
		return 0, false
	}
	return int32(d), true
}

// minorUnits is every three-letter code's minor units (-1: none), read
// once: intake asks three times a payment, and iso4217.Lookup's search
// was a twentieth of a bulk file's handler.
var minorUnits = sync.OnceValue(func() *[26 * 26 * 26]int8 {
	var t [26 * 26 * 26]int8
	code := []byte("AAA")
	for i := range t {
		code[0], code[1], code[2] = 'A'+byte(i/676), 'A'+byte(i/26%26), 'A'+byte(i%26)
		t[i] = -1
		if d, ok := lookupMinorUnits(string(code)); ok {
			t[i] = int8(d)
		}
	}
	return &t
})

// codeIndex is an upper-case three-letter code's place in minorUnits.
func codeIndex(code string) int {
	return int(code[0]-'A')*676 + int(code[1]-'A')*26 + int(code[2]-'A')
}

// lookupMinorUnits is MinorUnits from the tables, for a code of three
// upper-case letters.
func lookupMinorUnits(code string) (digits int32, ok bool) {
	if a, ok := amendments[code]; ok {
		return a.digits, a.active
	}
	if noMinorUnit[code] {
		return 0, false
	}
	// Lookup also answers numeric codes and lower case, which
	// MinorUnits refuses before.
	cc, ok := iso4217.Lookup(code)
	if !ok || cc.Code != code {
		return 0, false
	}
	return int32(cc.DecimalPlaces), true
}

func upper(c byte) bool { return c >= 'A' && c <= 'Z' }

type amendment struct {
	digits int32
	active bool
}

// amendments: ISO 4217 changes after moov-io/iso4217's table.
var amendments = map[string]amendment{
	"HRK": {active: false},           // Croatia adopted the euro on 2023-01-01
	"SLE": {digits: 2, active: true}, // new leone (2022 redenomination)
	"VED": {digits: 2, active: true}, // digital bolívar (2021)
	"ZWG": {digits: 2, active: true}, // Zimbabwe Gold (2024)
	"XCG": {digits: 2, active: true}, // Caribbean guilder (2025, replaces ANG)
}

// noMinorUnit: the codes whose minor unit is "N.A." in ISO 4217 (precious
// metals, bond-market units, SDR, XTS for testing, XXX for no currency):
// no account is kept and no credit transfer is paid in them.
var noMinorUnit = map[string]bool{
	"XAG": true, "XAU": true, "XPD": true, "XPT": true,
	"XBA": true, "XBB": true, "XBC": true, "XBD": true,
	"XDR": true, "XSU": true, "XUA": true, "XTS": true, "XXX": true,
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
	case !belowMax(d):
		return fmt.Errorf("must be below %s", MaxAmount)
	case !d.Equal(d.Truncate(digits)):
		return fmt.Errorf("%s has more decimals than %s's %d", d, code, digits)
	}
	return nil
}

// belowMax is d < MaxAmount (10¹⁵). A coefficient below 10¹⁵ with no
// positive exponent is below it without the comparison's rescaling (a
// big.Int product an amount, a third of a file's checks). NumDigits
// estimates with a logarithm and can read one short at a power of ten, so
// 17 bounds the coefficient to 18 digits: an int64.
func belowMax(d decimal.Decimal) bool {
	if d.Exponent() <= 0 && d.NumDigits() <= 17 && d.CoefficientInt64() < 1e15 {
		return true
	}
	return d.LessThan(MaxAmount)
}
