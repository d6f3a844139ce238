package calendar_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
)

func dates(ss ...string) []calendar.Date {
	out := make([]calendar.Date, len(ss))
	for i, s := range ss {
		out[i] = date(s)
	}
	return out
}

func TestEaster(t *testing.T) {
	t.Parallel()
	// Published Easter Sundays, the earliest (22 March) and latest (25
	// April) possible among them.
	for _, want := range []string{
		"1818-03-22", "1886-04-25", "1943-04-25", "1954-04-18", "1961-04-02", "1999-04-04",
		"2000-04-23", "2008-03-23", "2011-04-24", "2019-04-21", "2024-03-31", "2025-04-20",
		"2026-04-05", "2027-03-28", "2038-04-25", "2049-04-18", "2100-03-28", "2285-03-22",
	} {
		d := date(want)
		if got := calendar.Easter(d.Year); got != d {
			t.Errorf("Easter(%d) = %s, want %s", d.Year, got, want)
		}
	}
	// Always a Sunday from 22 March to 25 April.
	for y := 1583; y <= 9999; y++ {
		e := calendar.Easter(y)
		if !e.IsValid() || e.Weekday() != time.Sunday || e.Before(calendar.Date{Year: y, Month: 3, Day: 22}) || e.After(calendar.Date{Year: y, Month: 4, Day: 25}) {
			t.Fatalf("Easter(%d) = %s, a %s", y, e, e.Weekday())
		}
	}
}

func TestTARGET2(t *testing.T) {
	t.Parallel()
	t2, ok := calendar.BuiltIn(calendar.NameTARGET2)
	if !ok || !t2.BuiltIn || len(t2.ClosingDays) != 0 {
		t.Fatalf("BuiltIn(TARGET2) = %+v, %v", t2, ok)
	}
	for _, tt := range []struct {
		year int
		want []string
	}{
		{2024, []string{"2024-01-01", "2024-03-29", "2024-04-01", "2024-05-01", "2024-12-25", "2024-12-26"}},
		{2025, []string{"2025-01-01", "2025-04-18", "2025-04-21", "2025-05-01", "2025-12-25", "2025-12-26"}},
		{2026, []string{"2026-01-01", "2026-04-03", "2026-04-06", "2026-05-01", "2026-12-25", "2026-12-26"}},
		{2027, []string{"2027-01-01", "2027-03-26", "2027-03-29", "2027-05-01", "2027-12-25", "2027-12-26"}},
		// Easter on 25 April: Easter Monday on 26 April.
		{2038, []string{"2038-01-01", "2038-04-23", "2038-04-26", "2038-05-01", "2038-12-25", "2038-12-26"}},
		// Easter on 22 March: Good Friday on 20 March.
		{2285, []string{"2285-01-01", "2285-03-20", "2285-03-23", "2285-05-01", "2285-12-25", "2285-12-26"}},
	} {
		got := t2.ClosingDaysIn(tt.year)
		if !slices.Equal(got, dates(tt.want...)) {
			t.Errorf("TARGET2 %d: %v, want %v", tt.year, got, tt.want)
		}
		for _, d := range got {
			if t2.Open(d) {
				t.Errorf("TARGET2 open on %s", d)
			}
		}
	}
	for _, tt := range []struct {
		day  string
		open bool
	}{
		{"2026-04-02", true},  // Maundy Thursday
		{"2026-04-03", false}, // Good Friday
		{"2026-04-04", false}, // Saturday
		{"2026-04-05", false}, // Easter Sunday
		{"2026-04-06", false}, // Easter Monday
		{"2026-04-07", true},
		{"2026-05-14", true}, // Ascension Day: open on TARGET2
		{"2026-12-24", true}, // Christmas Eve: open
		{"2026-12-31", true}, // New Year's Eve: open
		{"2025-05-01", false},
		{"2026-01-06", true},
		{"2026-10-03", false}, // a Saturday (German Unity Day: not TARGET2's)
	} {
		if got := t2.Open(date(tt.day)); got != tt.open {
			t.Errorf("TARGET2 open on %s: %v, want %v", tt.day, got, tt.open)
		}
	}
}

func TestNextOpen(t *testing.T) {
	t.Parallel()
	t2, _ := calendar.BuiltIn(calendar.NameTARGET2)
	wd, _ := calendar.BuiltIn(calendar.NameWEEKDAYS)
	// A calendar closed from 2026-06-01 through 2027-06-01 (a year and a
	// day), open on Sundays only.
	var longRun []calendar.Date
	for d := date("2026-06-01"); !d.After(date("2027-06-01")); d = d.AddDays(1) {
		longRun = append(longRun, d)
	}
	long := calendar.Calendar{Name: "long", Weekend: []time.Weekday{1, 2, 3, 4, 5, 6}, ClosingDays: longRun}
	if err := long.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		c         calendar.Calendar
		from      string
		next      string // NextOpen
		nextAfter string // NextOpenAfter
	}{
		{"a business day", t2, "2026-04-02", "2026-04-02", "2026-04-07"},
		{"Good Friday to Tuesday", t2, "2026-04-03", "2026-04-07", "2026-04-07"},
		{"Christmas on a Friday", t2, "2026-12-25", "2026-12-28", "2026-12-28"},
		{"Christmas Eve", t2, "2026-12-24", "2026-12-24", "2026-12-28"},
		{"Christmas on a Wednesday, into the new year", t2, "2024-12-25", "2024-12-27", "2024-12-27"},
		{"New Year's Eve on a Friday", t2, "2027-12-31", "2027-12-31", "2028-01-03"},
		{"a Saturday", wd, "2026-12-26", "2026-12-28", "2026-12-28"},
		{"Christmas on WEEKDAYS", wd, "2026-12-25", "2026-12-25", "2026-12-28"},
		{"a year and a day closed", long, "2026-06-01", "2027-06-06", "2027-06-06"},
		{"the day before a long run", long, "2026-05-31", "2026-05-31", "2027-06-06"},
	} {
		next, err := tt.c.NextOpen(date(tt.from))
		if err != nil || next != date(tt.next) {
			t.Errorf("%s: NextOpen(%s) = %s, %v; want %s", tt.name, tt.from, next, err, tt.next)
		}
		after, err := tt.c.NextOpenAfter(date(tt.from))
		if err != nil || after != date(tt.nextAfter) {
			t.Errorf("%s: NextOpenAfter(%s) = %s, %v; want %s", tt.name, tt.from, after, err, tt.nextAfter)
		}
	}

	// Closed for longer than the search: an error, not a hang.
	var allDays []calendar.Date
	for d := date("2026-01-01"); len(allDays) < calendar.MaxClosingDays; d = d.AddDays(1) {
		allDays = append(allDays, d)
	}
	closed := calendar.Calendar{Name: "closed", ClosingDays: allDays}
	if err := closed.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(calendar.Date) (calendar.Date, error){closed.NextOpen, closed.NextOpenAfter} {
		if d, err := f(date("2026-01-01")); !errors.Is(err, calendar.ErrNoBusinessDay) || !d.IsZero() {
			t.Errorf("a calendar closed for %d days: %s, %v", calendar.MaxClosingDays, d, err)
		}
	}
	// The last day the search looks at still counts.
	edge := calendar.Calendar{Name: "edge", ClosingDays: allDays[:calendar.SearchDays-1]}
	if err := edge.Validate(); err != nil {
		t.Fatal(err)
	}
	if d, err := edge.NextOpen(date("2026-01-01")); err != nil || d != date("2026-01-01").AddDays(calendar.SearchDays-1) {
		t.Errorf("open on the search's last day: %s, %v", d, err)
	}
	if _, err := t2.NextOpen(calendar.Date{Year: 2026, Month: 2, Day: 30}); !errors.Is(err, calendar.ErrDateSyntax) {
		t.Errorf("NextOpen of 30 February: %v", err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	many := make([]calendar.Date, calendar.MaxClosingDays+1)
	for i := range many {
		many[i] = date("2026-01-01")
	}
	wrong := make([]calendar.Date, 30)
	for i := range wrong {
		wrong[i] = calendar.Date{Year: 1900 + i, Month: 1, Day: 1}
	}
	wrongFields := []string{}
	for i := range 20 {
		wrongFields = append(wrongFields, fmt.Sprintf("closingDays[%d]", i))
	}
	for _, tt := range []struct {
		name   string
		c      calendar.Calendar
		fields []string // the fields named, in order; none: valid
	}{
		{"minimal", calendar.Calendar{Name: "X"}, nil},
		{"every name character", calendar.Calendar{Name: "SEPA_DE.bank:1-a"}, nil},
		{"a name of 100", calendar.Calendar{Name: strings.Repeat("n", 100)}, nil},
		{"six weekend days", calendar.Calendar{Name: "x", Weekend: []time.Weekday{0, 1, 2, 3, 4, 5}}, nil},
		{"closing days at the limits", calendar.Calendar{Name: "x", ClosingDays: dates("1970-01-01", "9999-12-31")}, nil},
		{"no name", calendar.Calendar{}, []string{"name"}},
		{"a name of 101", calendar.Calendar{Name: strings.Repeat("n", 101)}, []string{"name"}},
		{"a space", calendar.Calendar{Name: "a b"}, []string{"name"}},
		{"a slash", calendar.Calendar{Name: "a/b"}, []string{"name"}},
		{"not ASCII", calendar.Calendar{Name: "é"}, []string{"name"}},
		{"a NUL", calendar.Calendar{Name: "a\x00"}, []string{"name"}},
		{"a newline at the end", calendar.Calendar{Name: "a\n"}, []string{"name"}},
		{"seven weekend days", calendar.Calendar{Name: "x", Weekend: []time.Weekday{0, 1, 2, 3, 4, 5, 6}}, []string{"weekend"}},
		{"a day twice", calendar.Calendar{Name: "x", Weekend: []time.Weekday{6, 0, 6}}, []string{"weekend[2]"}},
		{"not a day of the week", calendar.Calendar{Name: "x", Weekend: []time.Weekday{7, -1}}, []string{"weekend[0]", "weekend[1]"}},
		{"31 April", calendar.Calendar{Name: "x", ClosingDays: []calendar.Date{{Year: 2026, Month: 4, Day: 31}}}, []string{"closingDays[0]"}},
		{"the zero Date", calendar.Calendar{Name: "x", ClosingDays: []calendar.Date{{}}}, []string{"closingDays[0]"}},
		{"before 1970", calendar.Calendar{Name: "x", ClosingDays: dates("2026-01-01", "1969-12-31")}, []string{"closingDays[1]"}},
		{"after 9999", calendar.Calendar{Name: "x", ClosingDays: []calendar.Date{{Year: 10000, Month: 1, Day: 1}}}, []string{"closingDays[0]"}},
		{"too many", calendar.Calendar{Name: "x", ClosingDays: many}, []string{"closingDays"}},
		{"30 wrong days: 20 named, the rest counted", calendar.Calendar{Name: "x", ClosingDays: wrong}, append(wrongFields, "closingDays")},
		{"eight weekend days: one error", calendar.Calendar{Name: "x", Weekend: []time.Weekday{0, 1, 2, 3, 4, 5, 6, 6}}, []string{"weekend"}},
		{"every problem", calendar.Calendar{Name: "", Weekend: []time.Weekday{9}, ClosingDays: []calendar.Date{{Year: 2026, Month: 13, Day: 1}}},
			[]string{"name", "weekend[0]", "closingDays[0]"}},
	} {
		err := tt.c.Validate()
		if tt.fields == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var ve *field.Invalid
		if !errors.As(err, &ve) || !errors.Is(err, calendar.ErrInvalid) {
			t.Errorf("%s: %v, want a *field.Invalid", tt.name, err)
			continue
		}
		// One validation error type: the fields are internal/field's
		// Errors, as the API reports them.
		names := func(fs []field.Error) (out []string) {
			for _, f := range fs {
				out = append(out, f.Field)
				if f.Detail == "" {
					t.Errorf("%s: %s has no detail", tt.name, f.Field)
				}
			}
			return out
		}
		if got := names(ve.Fields); !slices.Equal(got, tt.fields) {
			t.Errorf("%s: fields %v, want %v (%v)", tt.name, got, tt.fields, err)
		}
	}

	// Validate puts the weekend and the closing days in order, once each.
	c := calendar.Calendar{Name: "x", Weekend: []time.Weekday{6, 0}, ClosingDays: dates("2026-12-25", "2026-01-01", "2026-12-25", "2025-12-31", "2026-01-01")}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Weekend, []time.Weekday{0, 6}) || !slices.Equal(c.ClosingDays, dates("2025-12-31", "2026-01-01", "2026-12-25")) {
		t.Errorf("normalized: %v %v", c.Weekend, c.ClosingDays)
	}
}

func TestOpenAndClosingDaysIn(t *testing.T) {
	t.Parallel()
	c := calendar.Calendar{Name: "x", Weekend: []time.Weekday{time.Friday, time.Saturday},
		ClosingDays: dates("2027-01-03", "2026-12-31", "2025-03-30", "2026-03-30", "2026-01-01", "2026-01-01")}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		day  string
		open bool
	}{
		{"2026-01-01", false}, // a closing day (Thursday)
		{"2026-01-02", false}, // Friday
		{"2026-01-03", false}, // Saturday
		{"2026-01-04", true},  // Sunday
		{"2026-03-30", false},
		{"2026-03-31", true},
		{"2027-01-03", false},
		{"2025-12-31", true},
	} {
		if got := c.Open(date(tt.day)); got != tt.open {
			t.Errorf("open on %s: %v, want %v", tt.day, got, tt.open)
		}
	}
	for _, tt := range []struct {
		year int
		want []calendar.Date
	}{
		{2025, dates("2025-03-30")},
		{2026, dates("2026-01-01", "2026-03-30", "2026-12-31")},
		{2027, dates("2027-01-03")},
		{2028, nil},
	} {
		if got := c.ClosingDaysIn(tt.year); !slices.Equal(got, tt.want) {
			t.Errorf("ClosingDaysIn(%d) = %v, want %v", tt.year, got, tt.want)
		}
	}
	wd, _ := calendar.BuiltIn(calendar.NameWEEKDAYS)
	if got := wd.ClosingDaysIn(2026); len(got) != 0 {
		t.Errorf("WEEKDAYS closes on %v", got)
	}
	if _, ok := calendar.BuiltIn("target2"); ok {
		t.Error("BuiltIn(target2): a built-in's name is spelt exactly")
	}
	// Built-ins are values: changing one changes no other caller's.
	a, _ := calendar.BuiltIn(calendar.NameTARGET2)
	a.Weekend[0] = time.Wednesday
	if b, _ := calendar.BuiltIn(calendar.NameTARGET2); !b.Open(date("2026-04-01")) || b.Open(date("2026-04-05")) {
		t.Error("a caller's change to a built-in reached the next caller")
	}
}
