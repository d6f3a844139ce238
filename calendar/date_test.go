package calendar_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
)

func date(s string) calendar.Date {
	d, err := calendar.ParseDate(s)
	if err != nil {
		panic(s + ": " + err.Error())
	}
	return d
}

func TestParseDate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want calendar.Date
		ok   bool
	}{
		{"2026-12-25", calendar.Date{Year: 2026, Month: time.December, Day: 25}, true},
		{"2024-02-29", calendar.Date{Year: 2024, Month: time.February, Day: 29}, true},
		{"2000-02-29", calendar.Date{Year: 2000, Month: time.February, Day: 29}, true},
		{"0001-01-01", calendar.Date{Year: 1, Month: time.January, Day: 1}, true},
		{"9999-12-31", calendar.Date{Year: 9999, Month: time.December, Day: 31}, true},
		{"2023-02-29", calendar.Date{}, false}, // not a leap year
		{"1900-02-29", calendar.Date{}, false}, // a century, not a leap year
		{"2026-04-31", calendar.Date{}, false},
		{"2026-13-01", calendar.Date{}, false},
		{"2026-00-10", calendar.Date{}, false},
		{"2026-01-00", calendar.Date{}, false},
		{"0000-00-00", calendar.Date{}, false},
		{"2026-1-05", calendar.Date{}, false},
		{"2026-01-5", calendar.Date{}, false},
		{"26-01-05", calendar.Date{}, false},
		{"+2026-01-05", calendar.Date{}, false},
		{"2026/01/05", calendar.Date{}, false},
		{"2026-01-05T00:00:00Z", calendar.Date{}, false},
		{" 2026-01-05", calendar.Date{}, false},
		{"2026-01-05 ", calendar.Date{}, false},
		{"2026-0a-05", calendar.Date{}, false},
		{"2026-+1-05", calendar.Date{}, false},
		{"２０２６-01-05", calendar.Date{}, false},
		{"", calendar.Date{}, false},
	} {
		got, err := calendar.ParseDate(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseDate(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, calendar.ErrDateSyntax) {
			t.Errorf("ParseDate(%q): %v, want ErrDateSyntax", tt.in, err)
		}
		if tt.ok && got.String() != tt.in {
			t.Errorf("ParseDate(%q).String() = %q", tt.in, got.String())
		}
	}
	// The error names what is wanted and never echoes the input.
	_, err := calendar.ParseDate(strings.Repeat("x", 1<<20))
	if err == nil || len(err.Error()) > 40 {
		t.Errorf("a long input: %v", err)
	}
}

func TestDateJSON(t *testing.T) {
	t.Parallel()
	var v struct{ Days []calendar.Date }
	if err := json.Unmarshal([]byte(`{"Days":["2026-12-25","2027-01-01"]}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Days[0] != date("2026-12-25") || v.Days[1] != date("2027-01-01") {
		t.Fatalf("decoded %v", v.Days)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"Days":["2026-12-25","2027-01-01"]}` {
		t.Fatalf("encoded %s, %v", b, err)
	}
	for _, bad := range []string{`{"Days":["2026-02-30"]}`, `{"Days":["tomorrow"]}`, `{"Days":[20261225]}`} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

func TestDateArithmetic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		from string
		n    int
		want string
	}{
		{"2026-12-31", 1, "2027-01-01"},
		{"2027-01-01", -1, "2026-12-31"},
		{"2024-02-28", 1, "2024-02-29"},
		{"2023-02-28", 1, "2023-03-01"},
		{"2026-03-28", 1, "2026-03-29"}, // across Europe's change to summer time: days are days
		{"2026-01-01", 365, "2027-01-01"},
		{"2024-01-01", 366, "2025-01-01"},
		{"2026-05-01", 0, "2026-05-01"},
		{"2026-05-01", -10_000, "1998-12-14"},
	} {
		if got := date(tt.from).AddDays(tt.n); got != date(tt.want) {
			t.Errorf("%s + %d days = %s, want %s", tt.from, tt.n, got, tt.want)
		}
	}
	a, b := date("2026-04-30"), date("2026-05-01")
	if a.Compare(b) != -1 || b.Compare(a) != 1 || a.Compare(a) != 0 || !a.Before(b) || a.After(b) || !b.After(a) {
		t.Error("2026-04-30 and 2026-05-01 compare wrongly")
	}
	if date("2025-12-31").Compare(date("2026-01-01")) != -1 || date("2026-02-01").Compare(date("2026-01-31")) != 1 {
		t.Error("year and month do not come first")
	}
	if got := date("2026-12-25").Weekday(); got != time.Friday {
		t.Errorf("2026-12-25 is a %s, want Friday", got)
	}
	if !(calendar.Date{}).IsZero() || (calendar.Date{}).IsValid() || date("2026-01-01").IsZero() {
		t.Error("the zero Date")
	}
}

// TestDateAt: a time of day is what the clocks show, on any day; the hour
// summer time skips lands as late as the gap is long, the hour it repeats
// is taken the first time; DateOf is the inverse.
func TestDateAt(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	lordHowe, err := time.LoadLocation("Australia/Lord_Howe") // a half-hour change
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		day  string
		tod  time.Duration
		loc  *time.Location
		want string // UTC
	}{
		{"2026-03-28", 15*time.Hour + 30*time.Minute, berlin, "2026-03-28T14:30:00Z"},  // CET
		{"2026-03-29", 0, berlin, "2026-03-28T23:00:00Z"},                              // midnight, still CET
		{"2026-03-29", 15*time.Hour + 30*time.Minute, berlin, "2026-03-29T13:30:00Z"},  // CEST
		{"2026-03-29", 2*time.Hour + 30*time.Minute, berlin, "2026-03-29T01:30:00Z"},   // skipped: 03:30 CEST
		{"2026-03-29", 3 * time.Hour, berlin, "2026-03-29T01:00:00Z"},                  // the first hour of CEST
		{"2026-10-25", 2*time.Hour + 30*time.Minute, berlin, "2026-10-25T00:30:00Z"},   // repeated: the first, CEST
		{"2026-10-25", 2 * time.Hour, berlin, "2026-10-25T00:00:00Z"},                  // repeated: the first, CEST
		{"2026-10-25", 3 * time.Hour, berlin, "2026-10-25T02:00:00Z"},                  // once, CET
		{"2026-10-25", time.Hour + 59*time.Minute, berlin, "2026-10-24T23:59:00Z"},     // once, CEST
		{"2026-10-25", 15*time.Hour + 30*time.Minute, berlin, "2026-10-25T14:30:00Z"},  // CET
		{"2026-03-08", 2*time.Hour + 30*time.Minute, newYork, "2026-03-08T07:30:00Z"},  // skipped: 03:30 EDT
		{"2026-11-01", time.Hour + 30*time.Minute, newYork, "2026-11-01T05:30:00Z"},    // repeated: the first, EDT
		{"2026-04-05", time.Hour + 45*time.Minute, lordHowe, "2026-04-04T14:45:00Z"},   // repeated half hour: the first, +11
		{"2026-10-04", 2*time.Hour + 15*time.Minute, lordHowe, "2026-10-03T15:45:00Z"}, // skipped half hour: 02:45 +11
		{"2026-06-15", 17 * time.Hour, time.UTC, "2026-06-15T17:00:00Z"},
	} {
		got := date(tt.day).At(tt.tod, tt.loc)
		if want, _ := time.Parse(time.RFC3339, tt.want); !got.Equal(want) {
			t.Errorf("%s at %v in %s = %s, want %s", tt.day, tt.tod, tt.loc, got.UTC().Format(time.RFC3339), tt.want)
		}
	}
	// A day's length in Berlin: 23 hours in spring, 25 in autumn.
	for _, tt := range []struct {
		day   string
		hours time.Duration
	}{{"2026-03-29", 23}, {"2026-10-25", 25}, {"2026-06-01", 24}} {
		d := date(tt.day)
		if got := d.AddDays(1).In(berlin).Sub(d.In(berlin)); got != tt.hours*time.Hour {
			t.Errorf("%s lasts %v in Berlin, want %dh", tt.day, got, tt.hours)
		}
	}
	for _, tt := range []struct {
		at   string
		loc  *time.Location
		want string
	}{
		{"2026-03-28T23:30:00Z", berlin, "2026-03-29"},
		{"2026-03-28T22:59:59Z", berlin, "2026-03-28"},
		{"2026-10-24T22:00:00Z", berlin, "2026-10-25"}, // midnight CEST
		{"2026-10-24T21:59:59Z", berlin, "2026-10-24"},
		{"2026-12-25T03:00:00Z", newYork, "2026-12-24"},
		{"2026-12-25T03:00:00Z", time.UTC, "2026-12-25"},
	} {
		at, _ := time.Parse(time.RFC3339, tt.at)
		if got := calendar.DateOf(at, tt.loc); got != date(tt.want) {
			t.Errorf("DateOf(%s, %s) = %s, want %s", tt.at, tt.loc, got, tt.want)
		}
	}
}

// TestDateAtAgainstTheClock checks At on every quarter hour of the days
// around each change of offset, in zones whose clocks jump forward and
// back, by half an hour, at midnight (Santiago, São Paulo in 2018) and
// over a whole day (Apia skipped 2011-12-30), against a search of the
// instants: the first whose reading is the one asked for, else (a
// skipped reading) the reading taken in the zone before the jump.
func TestDateAtAgainstTheClock(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		zone string
		year int
	}{
		{"Europe/Berlin", 2026}, {"America/New_York", 2026}, {"Australia/Lord_Howe", 2026},
		{"America/Santiago", 2026}, {"America/Sao_Paulo", 2018}, {"Pacific/Apia", 2011}, {"Asia/Kolkata", 2026},
	} {
		loc, err := time.LoadLocation(tt.zone)
		if err != nil {
			t.Fatal(err)
		}
		offset := func(u time.Time) time.Duration { _, o := u.In(loc).Zone(); return time.Duration(o) * time.Second }
		checked := 0
		for d := (calendar.Date{Year: tt.year, Month: time.January, Day: 1}); d.Year == tt.year; d = d.AddDays(1) {
			noon := func(d calendar.Date) time.Time {
				return time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC)
			}
			if offset(noon(d.AddDays(-2))) == offset(noon(d.AddDays(2))) {
				continue
			}
			checked++
			for tod := time.Duration(0); tod < 24*time.Hour; tod += 15 * time.Minute {
				wall := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, int(tod), time.UTC)
				var want, lastBefore time.Time
				for u := wall.Add(-27 * time.Hour); u.Before(wall.Add(27 * time.Hour)); u = u.Add(15 * time.Minute) {
					reading := u.Add(offset(u))
					if reading.Equal(wall) {
						want = u
						break
					}
					if reading.Before(wall) {
						lastBefore = u
					}
				}
				if want.IsZero() {
					want = wall.Add(-offset(lastBefore))
				}
				if got := d.At(tod, loc); !got.Equal(want) {
					t.Errorf("%s %s at %v: %s, want %s", tt.zone, d, tod, got.UTC(), want.UTC())
				}
			}
		}
		if checked == 0 && tt.zone != "Asia/Kolkata" {
			t.Errorf("%s %d: no change of offset found", tt.zone, tt.year)
		}
	}
}

// String writes what fmt's %04d-%02d-%02d writes, for every date a
// payment can carry and for those it cannot.
func TestDateStringIsPadded(t *testing.T) {
	t.Parallel()
	for _, d := range []calendar.Date{
		{Year: 2026, Month: time.November, Day: 30}, {Year: 1, Month: time.January, Day: 1},
		{Year: 9999, Month: time.December, Day: 31}, {}, {Year: 10000, Month: time.March, Day: 5},
		{Year: -1, Month: time.March, Day: 5}, {Year: 2026, Month: 13, Day: 1}, {Year: 2026, Month: 1, Day: 100},
	} {
		if got, want := d.String(), fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day); got != want {
			t.Errorf("%#v.String() = %q, want %q", d, got, want)
		}
	}
}
