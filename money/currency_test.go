package money_test

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/money"
)

// TestMinorUnits pins the ISO 4217 minor units intake, the ledger and the
// rail rely on, so a change in the upstream table shows here.
func TestMinorUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code   string
		digits int32
		ok     bool
	}{
		{"EUR", 2, true}, {"USD", 2, true}, {"GBP", 2, true}, {"CHF", 2, true},
		{"JPY", 0, true}, {"KRW", 0, true}, {"ISK", 0, true}, {"VND", 0, true}, {"XOF", 0, true},
		{"BHD", 3, true}, {"KWD", 3, true}, {"OMR", 3, true}, {"JOD", 3, true}, {"TND", 3, true}, {"IQD", 3, true},
		{"CLF", 4, true},
		{"COP", 2, true}, {"IDR", 2, true}, {"LBP", 2, true}, // ISO 4217, not CLDR's cash digits
		{"eur", 0, false}, {"EU", 0, false}, {"EURO", 0, false}, {"ZZZ", 0, false}, {"", 0, false},
		{"XAU", 0, false}, {"XAG", 0, false}, {"XDR", 0, false}, {"XXX", 0, false},
		// The amendments since moov-io/iso4217's table, and the guard
		// against what its Lookup answers besides (the rail's cases).
		{"SLE", 2, true}, {"XCG", 2, true}, {"VED", 2, true}, {"ZWG", 2, true}, {"HRK", 0, false},
		{"XTS", 0, false}, {"XPT", 0, false}, {"978", 0, false}, {" EUR", 0, false},
		// Withdrawn, or never in ISO 4217.
		{"EEK", 0, false}, {"VEF", 0, false}, {"JEP", 0, false},
		// ISO 4217's fund codes have minor units, and the rail pays them.
		{"CHE", 2, true}, {"USN", 2, true}, {"UYI", 0, true},
	}
	for _, tt := range tests {
		digits, ok := money.MinorUnits(tt.code)
		if digits != tt.digits || ok != tt.ok {
			t.Errorf("MinorUnits(%q) = %d, %v; want %d, %v", tt.code, digits, ok, tt.digits, tt.ok)
		}
	}
}

func TestRoundHalfEven(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, code, want string }{
		{"1.005", "EUR", "1"}, // tie: to even (1.00)
		{"1.015", "EUR", "1.02"},
		{"1.0051", "EUR", "1.01"},
		{"2.5", "JPY", "2"},
		{"3.5", "JPY", "4"},
		{"-2.5", "JPY", "-2"},
		{"1.0005", "BHD", "1"},
		{"1.0015", "BHD", "1.002"},
		{"0.00005", "CLF", "0"}, // tie between 0.0000 and 0.0001: to the even 0
		{"0.00015", "CLF", "0.0002"},
	}
	for _, tt := range tests {
		got := money.Round(decimal.RequireFromString(tt.in), tt.code)
		if !got.Equal(decimal.RequireFromString(tt.want)) {
			t.Errorf("Round(%s, %s) = %s, want %s", tt.in, tt.code, got, tt.want)
		}
	}
}

func TestCheckAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, code string
		ok       bool
	}{
		{"125.00", "EUR", true},
		{"125.50", "EUR", true},
		{"125.505", "EUR", false},
		{"100", "JPY", true},
		{"100.5", "JPY", false},
		{"1.234", "BHD", true},
		{"1.2345", "BHD", false},
		{"0", "EUR", false},
		{"-1", "EUR", false},
		{"1000000000000000", "EUR", false},
		{"999999999999999.99", "EUR", true},
		{"999999999999999", "EUR", true},      // 15 digits: below the max without rescaling
		{"1e15", "EUR", false},                // a positive exponent is compared
		{"1000000000000000.00", "EUR", false}, // 18 digits at 10⁻²
		{"1", "XAU", false},
	}
	for _, tt := range tests {
		err := money.CheckAmount(decimal.RequireFromString(tt.in), tt.code)
		if (err == nil) != tt.ok {
			t.Errorf("CheckAmount(%s, %s) = %v, want ok %v", tt.in, tt.code, err, tt.ok)
		}
	}
	// Absurd exponents are refused before any arithmetic (which would
	// rescale them to a billion digits).
	for _, s := range []string{"1e-999999999", "1e999999999"} {
		d := decimal.RequireFromString(s)
		if money.Plausible(d) || money.CheckAmount(d, "EUR") == nil || money.Fits(d, "EUR") {
			t.Errorf("%s accepted", s)
		}
	}
}
