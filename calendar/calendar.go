package calendar

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
)

// Errors callers tell apart.
var (
	// ErrNotFound: no calendar of that name, built in or stored.
	ErrNotFound = errors.New("no such calendar")
	// ErrBuiltIn: the name is a built-in calendar's, which no one changes.
	ErrBuiltIn = errors.New("built-in calendar")
	// ErrInvalid: a calendar failed Validate (errors.Is holds for its
	// *field.Invalid); nothing was stored.
	ErrInvalid = errors.New("invalid calendar")
	// ErrNoBusinessDay: no business day within SearchDays of the date
	// asked about.
	ErrNoBusinessDay = errors.New("no business day")
)

// Limits of a calendar an operator defines.
const (
	// MaxClosingDays bounds a calendar's row (40 kB) and its validation.
	MaxClosingDays = 10_000
	// MinYear and MaxYear bound the years of closing days: none is needed
	// before the Unix epoch, and YYYY-MM-DD stops at 9999.
	MinYear = 1970
	MaxYear = 9999
	// SearchDays is how many days NextOpen looks at before giving up:
	// two years, so even a calendar closed for a whole year answers, and
	// one that closes every day it lists cannot loop for long.
	SearchDays = 2 * 366
)

// maxDayErrors bounds the closing days Validate names one by one, so that
// a list of 10,000 wrong days is not answered with 10,000 errors.
const maxDayErrors = 20

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// Calendar says which days a payment rail does business: every day but
// the weekend's days and the closing days. A built-in calendar computes
// its closing days for any year instead of listing them.
type Calendar struct {
	Name string
	// Weekend is the days of the week closed every week, in order,
	// without duplicates; at least one day stays open.
	Weekend []time.Weekday
	// ClosingDays is the other days closed, in order, without
	// duplicates, as Validate leaves them (Open searches them in halves).
	// Empty for a built-in calendar: ClosingDaysIn lists its days.
	ClosingDays []Date
	// BuiltIn: defined in code (TARGET2, WEEKDAYS), not by an operator;
	// Put refuses its name.
	BuiltIn bool
	// CreatedAt and UpdatedAt are set by the store; zero for a built-in.
	CreatedAt time.Time
	UpdatedAt time.Time

	// rule is a built-in calendar's closing days of a year, in order.
	rule func(year int) []Date
}

// Validate checks an operator's calendar, reporting every problem, and
// puts its weekend and closing days in order without duplicates (the
// order Open relies on). The built-in names are Put's concern, not this.
func (c *Calendar) Validate() error {
	invalid := field.Invalid{What: "invalid calendar", Kind: ErrInvalid}
	add := func(field, format string, args ...any) {
		invalid.Add(field, fmt.Sprintf(format, args...))
	}
	if !namePattern.MatchString(c.Name) {
		add("name", "want 1-100 letters, digits, '_', '.', ':' or '-'")
	}
	var seen [7]bool
	for i, w := range c.Weekend {
		if len(c.Weekend) > 7 {
			break // surely too many: one error below, not one per day
		}
		switch {
		case w < time.Sunday || w > time.Saturday:
			add(fmt.Sprintf("weekend[%d]", i), "want a day of the week, 0 (Sunday) to 6 (Saturday)")
		case seen[w]:
			add(fmt.Sprintf("weekend[%d]", i), "%s is listed twice", w)
		default:
			seen[w] = true
		}
	}
	if len(c.Weekend) > 6 {
		add("weekend", "at most 6 days: at least one day of the week must stay open")
	}
	if len(c.ClosingDays) > MaxClosingDays {
		add("closingDays", "at most %d days", MaxClosingDays)
	} else {
		bad := 0
		for i, d := range c.ClosingDays {
			if d.IsValid() && d.Year >= MinYear && d.Year <= MaxYear {
				continue
			}
			if bad++; bad <= maxDayErrors {
				add(fmt.Sprintf("closingDays[%d]", i), "want a date from %d-01-01 to %d-12-31", MinYear, MaxYear)
			}
		}
		if bad > maxDayErrors {
			add("closingDays", "%d more are not dates from %d-01-01 to %d-12-31", bad-maxDayErrors, MinYear, MaxYear)
		}
	}
	if err := invalid.Err(); err != nil {
		return err
	}
	c.normalize()
	return nil
}

// normalize puts the weekend and the closing days in order, without
// duplicates.
func (c *Calendar) normalize() {
	slices.Sort(c.Weekend)
	c.Weekend = slices.Compact(c.Weekend)
	slices.SortFunc(c.ClosingDays, Date.Compare)
	c.ClosingDays = slices.Compact(c.ClosingDays)
}

// Open reports whether d is a business day.
func (c Calendar) Open(d Date) bool {
	if slices.Contains(c.Weekend, d.Weekday()) {
		return false
	}
	if c.rule != nil {
		return !slices.Contains(c.rule(d.Year), d)
	}
	_, closed := slices.BinarySearchFunc(c.ClosingDays, d, Date.Compare)
	return !closed
}

// NextOpen is the first business day on or after d: a payment requested
// for d executes then. It gives up after SearchDays days
// (ErrNoBusinessDay), and refuses a d that is not a date.
func (c Calendar) NextOpen(d Date) (Date, error) {
	if !d.IsValid() {
		return Date{}, fmt.Errorf("calendar %s: %s: %w", c.Name, d, ErrDateSyntax)
	}
	for i := 0; i < SearchDays; i++ {
		if day := d.AddDays(i); c.Open(day) {
			return day, nil
		}
	}
	return Date{}, fmt.Errorf("calendar %s: %w in the %d days from %s", c.Name, ErrNoBusinessDay, SearchDays, d)
}

// NextOpenAfter is the first business day strictly after d: the day after
// a cut-off has passed.
func (c Calendar) NextOpenAfter(d Date) (Date, error) {
	if !d.IsValid() {
		return Date{}, fmt.Errorf("calendar %s: %s: %w", c.Name, d, ErrDateSyntax)
	}
	return c.NextOpen(d.AddDays(1))
}

// ClosingDaysIn lists the closing days of year, in order, weekends left
// out unless a closing day falls on one.
func (c Calendar) ClosingDaysIn(year int) []Date {
	if c.rule != nil {
		return c.rule(year)
	}
	from, _ := slices.BinarySearchFunc(c.ClosingDays, Date{Year: year, Month: time.January, Day: 1}, Date.Compare)
	to, _ := slices.BinarySearchFunc(c.ClosingDays, Date{Year: year + 1, Month: time.January, Day: 1}, Date.Compare)
	return slices.Clone(c.ClosingDays[from:to])
}
