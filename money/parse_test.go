package money_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
	"github.com/paydispatch/paydispatch/money"
)

func TestParseDecimal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		sign money.Sign
		want string // the value, or "" when refused
		says string // a part of the refusal
	}{
		{"125.00", money.Unsigned, "125", ""},
		{"0.5", money.Unsigned, "0.5", ""},
		{"0", money.Unsigned, "0", ""},
		{"007.50", money.Unsigned, "7.5", ""},
		{"-12.5", money.Signed, "-12.5", ""},
		{"999999999999999999999999", money.Unsigned, "999999999999999999999999", ""},
		{"0.000000000000000000000001", money.Unsigned, "0.000000000000000000000001", ""},
		{"-12.5", money.Unsigned, "", "no sign"},
		{"1e3", money.Unsigned, "", "no exponent"},
		{"1E3", money.Unsigned, "", "no exponent"},
		{"1e-2", money.Unsigned, "", "no exponent"},
		{"1e2147483647", money.Unsigned, "", "no exponent"},
		{"1e10000000", money.Signed, "", "no exponent"},
		{"+5", money.Unsigned, "", `no "+"`},
		{"+5", money.Signed, "", `no "+"`},
		{".5", money.Unsigned, "", `"0.5"`},
		{"5.", money.Unsigned, "", `"5.0"`},
		{"-.5", money.Signed, "", `"0.5"`},
		{"1.2.3", money.Unsigned, "", `more than one "."`},
		{"1-2", money.Signed, "", "only in front"},
		{"--1", money.Signed, "", "only in front"},
		{"-", money.Signed, "", "a digit before"},
		{"", money.Unsigned, "", "empty"},
		{" 5", money.Unsigned, "", "no spaces"},
		{"5 ", money.Unsigned, "", "no spaces"},
		{"1,000.00", money.Unsigned, "", "no digit separators"},
		{"1_000", money.Unsigned, "", "no digit separators"},
		{"NaN", money.Unsigned, "", "digits and one"},
		{"Infinity", money.Unsigned, "", "digits and one"},
		{"0x10", money.Unsigned, "", "digits and one"},
		{"１２", money.Unsigned, "", "digits and one"}, // full-width digits
		{"1234567890123456789012345", money.Unsigned, "", "more than 24 digits before"},
		{"0.0000000000000000000000001", money.Unsigned, "", "more than 24 decimals"},
		{strings.Repeat("9", 49), money.Unsigned, "", "over the 48"},
		{strings.Repeat("0", 1<<20) + "1", money.Unsigned, "", "over the 48"},
	}
	for _, tt := range tests {
		d, err := money.ParseDecimal(tt.in, tt.sign)
		name := tt.in
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		switch {
		case tt.want != "" && err != nil:
			t.Errorf("ParseDecimal(%q): %v", name, err)
		case tt.want != "" && d.String() != tt.want:
			t.Errorf("ParseDecimal(%q) = %s, want %s", name, d, tt.want)
		case tt.want == "" && err == nil:
			t.Errorf("ParseDecimal(%q) = %s, want a refusal saying %q", name, d, tt.says)
		case tt.want == "" && !strings.Contains(err.Error(), tt.says):
			t.Errorf("ParseDecimal(%q): %q, want it to say %q", name, err, tt.says)
		case tt.want == "" && !errors.Is(err, money.ErrNotDecimal):
			t.Errorf("ParseDecimal(%q): %v does not wrap ErrNotDecimal", name, err)
		case err != nil && len(err.Error()) > 200:
			t.Errorf("ParseDecimal(%q): the message is %d bytes long", name, len(err.Error()))
		}
	}
}

func TestParseAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, code  string
		allowZero bool
		ok        bool
	}{
		{"125.00", "EUR", false, true},
		{"100", "JPY", false, true},
		{"1.005", "BHD", false, true},
		{"0.001", "EUR", false, false}, // more decimals than EUR's 2
		{"100.50", "JPY", false, false},
		{"100.00", "JPY", false, true}, // trailing zeros are not decimals
		{"0.00", "EUR", true, true},
		{"0.00", "EUR", false, false},
		{"1e2", "EUR", false, false},
		{"999999999999999.99", "EUR", false, true},
		{"1000000000000000", "EUR", false, false}, // MaxAmount
		{"5", "eur", false, false},
	}
	for _, tt := range tests {
		_, err := money.ParseAmount(tt.in, tt.code, tt.allowZero)
		if (err == nil) != tt.ok {
			t.Errorf("ParseAmount(%q, %s) = %v, want ok %v", tt.in, tt.code, err, tt.ok)
		}
	}
}

// FuzzParseDecimal checks that whatever it is given, ParseDecimal returns
// quickly with a value that prints back to what it read, and that its cost
// does not grow with what follows the first MaxDecimalLength bytes.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"125.00", "-0.5", "1e2147483647", ".5", "5.", "+1", "0.001", "9999999999999999999999999"} {
		f.Add(s)
	}
	for _, s := range []string{"999999999999999999", "99999999999999999.9", "-0.000000000001", "1234567890123456789", "-00.10", "0"} {
		f.Add(s) // around the small path's 18 digits
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Not even linear: the text past MaxDecimalLength is never looked at.
		fuzzcost.Bound{BaseTime: time.Millisecond, BaseAllocs: 20}.Check(t, len(s), func() { _, _ = money.ParseDecimal(s, money.Signed) })
		d, err := money.ParseDecimal(s, money.Signed)
		if err != nil {
			if !errors.Is(err, money.ErrNotDecimal) || !utf8.ValidString(err.Error()) && utf8.ValidString(s) {
				t.Fatalf("ParseDecimal(%q): %v", s, err)
			}
			return
		}
		if len(s) > money.MaxDecimalLength || strings.ContainsAny(s, "eE+ ") {
			t.Fatalf("ParseDecimal(%q) accepted it", s)
		}
		// The same coefficient and exponent as the library's own parse
		// (ParseDecimal reads small numbers without it).
		if lib := decimal.RequireFromString(s); lib.Coefficient().Cmp(d.Coefficient()) != 0 || lib.Exponent() != d.Exponent() {
			t.Fatalf("ParseDecimal(%q) = %s × 10^%d, the library reads %s × 10^%d", s, d.Coefficient(), d.Exponent(), lib.Coefficient(), lib.Exponent())
		}
		back, err := money.ParseDecimal(d.String(), money.Signed)
		if err != nil || !back.Equal(d) {
			t.Fatalf("ParseDecimal(%q) = %s, which reads back as %s, %v", s, d, back, err)
		}
	})
}
