package payment_test

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/payment"
)

// A fingerprint's bytes never change: the fingerprints stored by earlier
// builds (payment_fingerprint) must equal a new payment's for the
// duplicate control to find it. 100 and 100.00 are one amount; the IBAN
// is compared in its electronic form, the date in UTC.
func TestFingerprintIsStable(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 3, 5, 23, 30, 0, 0, time.FixedZone("CET", 3600))
	r := payment.Request{DebtorAccount: "acct-1", Currency: "eur", Creditor: payment.Creditor{IBAN: "de89 3704 0044 0532 0130 00"},
		RequestedExecutionTime: at}
	const want = "8707c589cb8c26ec50cb45caf524d927c00080ac37c6c70cd773e2c0efe350e6" // as the build before computed it
	for _, amount := range []string{"100", "100.00"} {
		got := payment.Fingerprint(r, decimal.RequireFromString(amount))
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("Fingerprint with %s = %x, want %s", amount, got, want)
		}
	}
}
