package bankid_test

import (
	"strings"
	"testing"

	"github.com/paydispatch/paydispatch/bankid"
	"github.com/paydispatch/paydispatch/internal/testkit/fuzzcost"
)

func TestCheckIBAN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		iban    string
		wantErr string // "" = valid
	}{
		{"GB82WEST12345698765432", ""},
		{"NL91ABNA0417164300", ""},
		{"FR1420041010050500013M02606", ""},
		{"BE68539007547034", ""},
		{"DE89370400440532013000", ""},
		{"", "too short"},
		{"GB82", "too short"},
		{"GB82WEST12345698765433", "check digits do not match"},
		{"GB82WEST1234569876543!", "only upper-case letters and digits"},
		{"gb82WEST12345698765432", "only upper-case letters and digits"},
		{"GB82 WEST 1234 5698 7654 32", "only upper-case letters and digits"},
		{"XX82WEST12345698765432", `"XX" is not an IBAN country`},
		{"GB82WEST1234569876543", "a GB IBAN has 22 characters, this one 21"},
		{"GBX2WEST12345698765432", "check digits must be digits"},
	}
	for _, tt := range tests {
		t.Run(tt.iban, func(t *testing.T) {
			t.Parallel()
			err := bankid.CheckIBAN(tt.iban)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("CheckIBAN(%q) = %v, want %q", tt.iban, err, tt.wantErr)
			}
			if err != nil && len(tt.iban) > 8 && strings.Contains(err.Error(), tt.iban) {
				t.Fatalf("the error repeats the IBAN: %v", err)
			}
		})
	}
}

func TestElectronic(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"de89 3704 0044 0532 0130 00": "DE89370400440532013000",
		"DE89370400440532013000":      "DE89370400440532013000",
		"":                            "",
	} {
		if got := bankid.Electronic(in); got != want {
			t.Errorf("Electronic(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckBIC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bic string
		ok  bool
	}{
		{"COBADEFFXXX", true},
		{"COBADEFF", true},
		{"1234DEFF", true}, // ISO 9362:2014 allows digits in the party prefix
		{"cobadeffxxx", false},
		{"COBADEFFXX", false},
		{"COBA12FF", false}, // the country is letters
		{"", false},
		{"COBADEFFXXX ", false},
	}
	for _, tt := range tests {
		if err := bankid.CheckBIC(tt.bic); (err == nil) != tt.ok {
			t.Errorf("CheckBIC(%q) = %v, want ok %t", tt.bic, err, tt.ok)
		}
	}
	if err := bankid.CheckBIC(strings.Repeat("A", 100)); err == nil || len(err.Error()) > 120 {
		t.Errorf("a long BIC: %v (the error must be short)", err)
	}
}

// FuzzCheckIBAN: any input gets an answer and never a panic; what is
// valid stays valid in its electronic form, and a valid IBAN with one
// digit changed is refused (mod 97 catches every single-digit error).
func FuzzCheckIBAN(f *testing.F) {
	for _, s := range []string{"DE89370400440532013000", "de89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "", "XX", "ÄÖ89370400440532013000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzcost.Default.Check(t, len(s), func() { _ = bankid.CheckIBAN(bankid.Electronic(s)) })
		e := bankid.Electronic(s)
		if bankid.CheckIBAN(e) != nil {
			return
		}
		if bankid.Electronic(e) != e {
			t.Fatalf("Electronic is not idempotent on %q", e)
		}
		for i := 4; i < len(e); i++ {
			if e[i] >= '0' && e[i] <= '9' {
				changed := e[:i] + string('0'+(e[i]-'0'+1)%10) + e[i+1:]
				if bankid.CheckIBAN(changed) == nil {
					t.Fatalf("%q with one digit changed (%q) is accepted", e, changed)
				}
				break
			}
		}
	})
}

func TestMask(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"DE89370400440532013000": "DE89…3000",
		"ACC-1":                  "…-1",
		"12345678":               "…78",
		"1234":                   "…",
		"":                       "",
		"ÄÖÜ-konto-99":           "ÄÖÜ-…o-99",
	}
	for in, want := range cases {
		if got := bankid.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}
