package calendar_test

import (
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
)

// FuzzParseDate: whatever the input, ParseDate takes exactly the
// YYYY-MM-DD spellings of real dates, the ones time.Parse takes with the
// same layout, and each reads back as it was written.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2026-12-25", "2024-02-29", "2023-02-29", "0000-01-01", "9999-12-31", "2026-1-01", "", "2026-12-25T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := calendar.ParseDate(s)
		ref, refErr := time.Parse(time.DateOnly, s)
		// time.Parse also takes year 0000's dates, which ParseDate takes
		// too; it is the reference for everything but its error text.
		if (err == nil) != (refErr == nil) {
			t.Fatalf("ParseDate(%q): %v; time.Parse: %v", s, err, refErr)
		}
		if err != nil {
			if !d.IsZero() {
				t.Fatalf("ParseDate(%q) = %v with an error", s, d)
			}
			return
		}
		if y, m, dd := ref.Date(); d != (calendar.Date{Year: y, Month: m, Day: dd}) {
			t.Fatalf("ParseDate(%q) = %v, time.Parse %v", s, d, ref)
		}
		if !d.IsValid() || d.String() != s {
			t.Fatalf("ParseDate(%q) = %v (valid %v)", s, d, d.IsValid())
		}
		var u calendar.Date
		if err := u.UnmarshalText([]byte(s)); err != nil || u != d {
			t.Fatalf("UnmarshalText(%q) = %v, %v", s, u, err)
		}
	})
}
