package calendar

import (
	"errors"
	"fmt"
	"time"
)

// Date is a civil date: a day of the proleptic Gregorian calendar, in no
// time zone. Its zero value is not a valid date (IsZero). Dates compare
// with == and serve as map keys; their text (and JSON) is YYYY-MM-DD.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// ErrDateSyntax is what ParseDate and UnmarshalText refuse: anything but a
// real date written YYYY-MM-DD.
var ErrDateSyntax = errors.New("want a date YYYY-MM-DD")

// ParseDate reads a date written YYYY-MM-DD (RFC 3339 full-date: four-digit
// year, two-digit month and day), and refuses any other spelling and any
// day the month does not have. Its error never quotes the input, which may
// come from outside and be long.
func ParseDate(s string) (Date, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Date{}, ErrDateSyntax
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	date := Date{Year: y, Month: time.Month(m), Day: d}
	if !ok1 || !ok2 || !ok3 || !date.IsValid() {
		return Date{}, ErrDateSyntax
	}
	return date, nil
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// DateOf is the date t falls on in loc: a payment requested for
// 2026-03-28T23:30:00Z is due on 2026-03-29 in Europe/Berlin.
func DateOf(t time.Time, loc *time.Location) Date {
	y, m, d := t.In(loc).Date()
	return Date{Year: y, Month: m, Day: d}
}

// String is the date as YYYY-MM-DD (years past 9999 take more digits).
func (d Date) String() string {
	if d.Year < 0 || d.Year > 9999 || d.Month < 1 || d.Month > 12 || d.Day < 0 || d.Day > 99 {
		return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
	}
	// Every payment's context carries its date: fmt's reflection was a
	// tenth of a second of a 500,000-payment file's Phase A.
	m := int(d.Month)
	return string([]byte{
		byte('0' + d.Year/1000), byte('0' + d.Year/100%10), byte('0' + d.Year/10%10), byte('0' + d.Year%10), '-',
		byte('0' + m/10), byte('0' + m%10), '-', byte('0' + d.Day/10), byte('0' + d.Day%10),
	})
}

// MarshalText writes the date as String does.
func (d Date) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a date as ParseDate does.
func (d *Date) UnmarshalText(b []byte) error {
	v, err := ParseDate(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// IsValid reports whether d is a day of the calendar (not 31 April, not
// month 13, not the zero Date).
func (d Date) IsValid() bool {
	return d.Month >= time.January && d.Month <= time.December && d.Day >= 1 && d.Day <= 31 &&
		DateOf(d.utc(), time.UTC) == d
}

// IsZero reports whether d is the zero Date.
func (d Date) IsZero() bool { return d == Date{} }

// Compare is -1 when d is before e, +1 when after, 0 when they are equal.
func (d Date) Compare(e Date) int {
	switch {
	case d.Year != e.Year:
		return cmp(d.Year, e.Year)
	case d.Month != e.Month:
		return cmp(int(d.Month), int(e.Month))
	default:
		return cmp(d.Day, e.Day)
	}
}

func cmp(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Before reports whether d is before e.
func (d Date) Before(e Date) bool { return d.Compare(e) < 0 }

// After reports whether d is after e.
func (d Date) After(e Date) bool { return d.Compare(e) > 0 }

// AddDays is the date n days after d (before it when n is negative).
func (d Date) AddDays(n int) Date {
	return DateOf(time.Date(d.Year, d.Month, d.Day+n, 0, 0, 0, 0, time.UTC), time.UTC)
}

// Weekday is the day of the week of d.
func (d Date) Weekday() time.Weekday { return d.utc().Weekday() }

// In is the instant d begins in loc: At(0, loc).
func (d Date) In(loc *time.Location) time.Time { return d.At(0, loc) }

// At is the instant the clocks of loc read tod (the time of day, 0 to
// 24h: 15h30m is 15:30) on d. A cut-off or an opening time is a clock
// reading, not time elapsed since midnight, so a day that changes to or
// from summer time has the same 15:30 as any other. Where the reading does
// not exist (clocks moved forward over it), it is taken as if they had not
// moved yet, which lands as much later as the gap is long: 02:30 on
// 2026-03-29 in Europe/Berlin is 03:30 CEST. Where it happens twice (clocks
// set back), the first is taken: 02:30 on 2026-10-25 in Europe/Berlin is
// 02:30 CEST, an hour before 02:30 CET. Go's time.Date leaves both choices
// unspecified (it answers a skipped reading an hour early in New York and
// an hour late in Berlin); a rail's cut-off must not depend on them.
func (d Date) At(tod time.Duration, loc *time.Location) time.Time {
	wall := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, int(tod), time.UTC)
	t := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, int(tod), loc)
	_, off := t.Zone()
	shown := t.UTC().Add(time.Duration(off) * time.Second) // t's reading, as if in UTC
	switch {
	case shown.Before(wall):
		// A missing reading, and t is wall read in the zone after the gap:
		// read it in the zone before, t's own.
		return t.Add(wall.Sub(shown))
	case shown.After(wall):
		// A missing reading, already read in the zone before the gap.
		return t
	}
	// A real reading; when the clocks were set back just before t's
	// zone began, the same reading came once before, in the zone that
	// ended.
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	if _, prev := start.Add(-time.Nanosecond).Zone(); prev > off {
		if first := wall.Add(-time.Duration(prev) * time.Second); first.Before(start) {
			return first.In(loc)
		}
	}
	return t
}

func (d Date) utc() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }
