package payment

import (
	"errors"
	"fmt"
	"strings"
)

// CheckIBAN validates an IBAN (ISO 13616): country code, the country's
// registered length, and the mod-97 check digits. Written here because no
// maintained IBAN module is reachable from this project's module proxy;
// the rule itself is small and fixed by the standard.
func CheckIBAN(iban string) error {
	s := strings.ToUpper(strings.ReplaceAll(iban, " ", ""))
	if len(s) < 5 {
		return errors.New("too short to be an IBAN")
	}
	want, ok := ibanLengths[s[:2]]
	if !ok {
		return fmt.Errorf("%q is not an IBAN country", s[:2])
	}
	if len(s) != want {
		return fmt.Errorf("a %s IBAN has %d characters, this one %d", s[:2], want, len(s))
	}
	// Move the first four characters to the end, letters to 10..35, mod 97.
	rem := 0
	for _, c := range s[4:] + s[:4] {
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A'+10)) % 97
		default:
			return fmt.Errorf("%q is not allowed in an IBAN", c)
		}
	}
	if rem != 1 {
		return errors.New("check digits do not match: mistyped IBAN")
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
