package bulkfile

import (
	"fmt"
	"strings"

	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// checkCreditorRef checks a structured creditor reference whose kind is
// known by its type or its form, and returns what is wrong ("" when
// nothing is, or when the kind has no check digits to verify):
//
//   - ISO 11649 (type SCOR, or "RF" and two digits): RF, two check
//     digits, up to 21 letters and digits, valid mod 97;
//   - the Swiss QR reference (type QRR): 27 digits, the last the
//     recursive mod-10 check digit of the other 26.
func checkCreditorRef(ref, typ string) string {
	switch {
	case typ == "QRR":
		if !checkQRR(ref) {
			return fmt.Sprintf("QR reference %q: want 27 digits whose last is the recursive mod-10 check digit of the others", plaintext.Clip(ref, 40))
		}
	case typ == "SCOR" || len(ref) >= 4 && strings.HasPrefix(ref, "RF") && isDigit(ref[2]) && isDigit(ref[3]):
		if !checkRF(ref) {
			return fmt.Sprintf("creditor reference %q: want an ISO 11649 reference, RF, two check digits and up to 21 letters or digits, whose check digits agree (mod 97)", plaintext.Clip(ref, 40))
		}
	}
	return ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// checkRF verifies an ISO 11649 reference: the reference moved behind
// "RF" and its check digits, letters as 10 to 35, is 1 mod 97.
func checkRF(ref string) bool {
	if len(ref) < 5 || len(ref) > 25 || !strings.HasPrefix(ref, "RF") || !isDigit(ref[2]) || !isDigit(ref[3]) {
		return false
	}
	rem := 0
	for _, c := range ref[4:] + ref[:4] {
		switch {
		case c >= '0' && c <= '9':
			rem = (rem*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			rem = (rem*100 + int(c-'A') + 10) % 97
		case c >= 'a' && c <= 'z':
			rem = (rem*100 + int(c-'a') + 10) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// qrrTable is the recursive mod-10 (Luhn-like) carry table the Swiss
// QR reference (formerly the ISR reference) uses.
var qrrTable = [10]int{0, 9, 4, 6, 8, 2, 7, 1, 3, 5}

// checkQRR verifies a Swiss QR reference's last digit.
func checkQRR(ref string) bool {
	if len(ref) != 27 {
		return false
	}
	carry := 0
	for i := 0; i < 26; i++ {
		if !isDigit(ref[i]) {
			return false
		}
		carry = qrrTable[(carry+int(ref[i]-'0'))%10]
	}
	return isDigit(ref[26]) && (10-carry)%10 == int(ref[26]-'0')
}
