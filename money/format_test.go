package money_test

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/money"
)

// TestString: String and StringFixed write what the library's String
// and StringFixed do, on the small path and off it.
func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d          decimal.Decimal
		str, fixed string // fixed: to 2 places
	}{
		{decimal.New(150, -2), "1.5", "1.50"},
		{decimal.New(5, -2), "0.05", "0.05"},
		{decimal.New(0, -2), "0", "0.00"},
		{decimal.New(-125, -1), "-12.5", "-12.50"},
		{decimal.New(7, 0), "7", "7.00"},
		{decimal.New(5, 1), "50", "50.00"},          // a positive exponent: the library's
		{decimal.New(12345, -3), "12.345", "12.35"}, // more decimals than asked: the library's rounding
		{decimal.New(99999999999999999, -4), "9999999999999.9999", "10000000000000.00"},
		{decimal.RequireFromString("123456789012345678901.5"), "123456789012345678901.5", "123456789012345678901.50"},
	} {
		if got := money.String(tc.d); got != tc.str || got != tc.d.String() {
			t.Errorf("String(%s × 10^%d) = %q, want %q (the library: %q)", tc.d.Coefficient(), tc.d.Exponent(), got, tc.str, tc.d.String())
		}
		if got := money.StringFixed(tc.d, 2); got != tc.fixed || got != tc.d.StringFixed(2) {
			t.Errorf("StringFixed(%s × 10^%d, 2) = %q, want %q (the library: %q)", tc.d.Coefficient(), tc.d.Exponent(), got, tc.fixed, tc.d.StringFixed(2))
		}
	}
}

// FuzzString: for any coefficient and exponent, String and StringFixed
// to 0–6 places write exactly what the library writes.
func FuzzString(f *testing.F) {
	for _, c := range []struct {
		v   int64
		exp int32
	}{{150, -2}, {0, -3}, {-5, -4}, {99999999999999999, -2}, {100000000000000000, -1}, {1, 3}, {-9223372036854775808, -5}} {
		f.Add(c.v, c.exp)
	}
	f.Fuzz(func(t *testing.T, v int64, exp int32) {
		if exp < -40 || exp > 40 {
			return
		}
		d := decimal.New(v, exp)
		if got, want := money.String(d), d.String(); got != want {
			t.Fatalf("String(%d × 10^%d) = %q, the library %q", v, exp, got, want)
		}
		for places := range int32(7) {
			if got, want := money.StringFixed(d, places), d.StringFixed(places); got != want {
				t.Fatalf("StringFixed(%d × 10^%d, %d) = %q, the library %q", v, exp, places, got, want)
			}
		}
	})
}
