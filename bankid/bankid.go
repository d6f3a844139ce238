// Package bankid validates the identifiers a payment is routed by: the
// IBAN of an account (ISO 13616) and the BIC of a bank (ISO 9362). Intake
// and the rail adapters check with the same rules, so what intake accepts
// a rail does not refuse for its format. Mask shortens an account number
// or IBAN for logs and errors.
//
// Written here because no maintained IBAN module is reachable from this
// project's module proxy; the rules are small and fixed by the standards.
package bankid

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Electronic turns an IBAN in its printed form ("de89 3704 …") into its
// electronic form: upper case, no spaces.
func Electronic(iban string) string {
	return strings.ToUpper(strings.ReplaceAll(iban, " ", ""))
}

// CheckIBAN validates an IBAN in its electronic form (see Electronic):
// upper-case letters and digits, the country's registered length, and the
// mod-97 check digits. The error never repeats the IBAN.
func CheckIBAN(iban string) error {
	if len(iban) < 5 {
		return errors.New("too short to be an IBAN")
	}
	for i := 0; i < len(iban); i++ {
		c := iban[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z') {
			return errors.New("only upper-case letters and digits, no spaces (electronic form)")
		}
	}
	want, ok := ibanLengths[iban[:2]]
	if !ok {
		return fmt.Errorf("%q is not an IBAN country", iban[:2])
	}
	if len(iban) != want {
		return fmt.Errorf("a %s IBAN has %d characters, this one %d", iban[:2], want, len(iban))
	}
	if iban[2] < '0' || iban[2] > '9' || iban[3] < '0' || iban[3] > '9' {
		return errors.New("check digits must be digits")
	}
	// Move the first four characters to the end, letters to 10..35, mod 97.
	rem := 0
	for _, c := range iban[4:] + iban[:4] {
		if c <= '9' {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	if rem != 1 {
		return errors.New("check digits do not match: mistyped IBAN")
	}
	return nil
}

// bicPattern is ISO 9362:2014 (BICFIDec2014Identifier): a 4-character
// party prefix, a 2-letter country code, a 2-character suffix, and an
// optional 3-character branch code.
var bicPattern = regexp.MustCompile(`^[A-Z0-9]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$`)

// CheckBIC validates a BIC's format: 8 or 11 upper-case letters and
// digits (ISO 9362). The error quotes at most 16 bytes of it.
func CheckBIC(bic string) error {
	if !bicPattern.MatchString(bic) {
		shown := bic
		if len(shown) > 16 {
			shown = shown[:16] + "…"
		}
		return fmt.Errorf("%q is not a BIC (8 or 11 upper-case characters, ISO 9362, e.g. COBADEFFXXX)", shown)
	}
	return nil
}

// ibanLengths is the IBAN registry's length per country.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
	"BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
	"EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
	"GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
	"JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
	"MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
	"NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
	"SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}
