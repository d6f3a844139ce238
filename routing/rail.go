package routing

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	// A rail's time zone is an IANA name; the binary carries the zone
	// database, so a host without one (a scratch container) reads it too.
	_ "time/tzdata"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
)

// The rail types: how a rail's instructions are written and sent. An
// adapter serves each (package rail).
const (
	TypeSEPAJSON = "SEPA_JSON"
	TypePACS008  = "PACS008"
)

// Types lists the rail types a rail may have.
var Types = []string{TypeSEPAJSON, TypePACS008}

// DefaultRail is the rail a fresh database has: every payment goes to it
// until an operator configures others.
const DefaultRail = "DEFAULT"

// Errors callers tell apart.
var (
	ErrNotFound = errors.New("no such rail")
	ErrInactive = errors.New("rail is inactive")
	// ErrNoRoute: no routing rule matches the payment, or the one that
	// does names a rail that is missing or inactive.
	ErrNoRoute = errors.New("no rail for the payment")
	ErrInvalid = errors.New("invalid")
)

// invalid lists what is wrong with a rail, a rule or a routing request,
// field by field, as a *field.Invalid; errors.Is(err, ErrInvalid) holds
// for it.
func invalid(fields ...field.Error) error {
	return &field.Invalid{What: "invalid", Fields: fields, Kind: ErrInvalid}
}

// Rail is a rail as configured.
type Rail struct {
	Name string
	Type string
	// Endpoint is the rail's root URL; empty: the process's own rail
	// endpoint (PAYDISPATCH_RAIL_URL, or the embedded simulator).
	Endpoint string
	// PacingConfig is the rate-limit config that is the rail's
	// connection's limit; empty: PAYMENT's default config.
	PacingConfig string
	// TimeZone is an IANA zone name; the rail's clock times are read in it.
	TimeZone string
	// Opens and Cutoff are times of day in the zone (0 to 24h, whole
	// seconds). Cutoff zero: none, the rail takes payments around the
	// clock. Payments execute from Opens and must reach the rail before
	// Cutoff.
	Opens, Cutoff time.Duration
	// Calendar names its business days (package calendar); empty: every
	// day is one.
	Calendar string
	Active   bool
	Version  int
	// CreatedAt and UpdatedAt are set by the store.
	CreatedAt, UpdatedAt time.Time
}

// ValidName reports whether s can name a rail: 1 to 64 of A-Z, a-z,
// 0-9, '_', '.', ':' and '-'. Every payment that names its rail is
// checked, twice for a file's: a byte loop, not a regular expression.
func ValidName(s string) bool { return validName(s, 64) }

// validOtherName is ValidName for a rate-limit config's or a calendar's
// name, as theirs take it: up to 100 bytes.
func validOtherName(s string) bool { return validName(s, 100) }

func validName(s string, most int) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// reservedNames are the outbox rail types the relayer serves before any
// rail name (instructions from before rails, the event stream): a rail of
// that name would never be sent to.
var reservedNames = []string{TypeSEPAJSON, TypePACS008, "PAYMENT_EVENT"}

func reserved(name string) bool {
	for _, r := range reservedNames {
		if strings.EqualFold(name, r) {
			return true
		}
	}
	return false
}

// Validate lists every field of r that is wrong.
func (r Rail) Validate() error {
	var errs []field.Error
	add := func(f, format string, args ...any) {
		errs = append(errs, field.Error{Field: f, Detail: fmt.Sprintf(format, args...)})
	}
	switch {
	case !ValidName(r.Name):
		add("name", "want 1-64 letters, digits, '_', '.', ':' or '-'")
	case reserved(r.Name):
		add("name", "%s is reserved (an outbox rail type the relayer serves itself): choose another name", r.Name)
	}
	if !validType(r.Type) {
		add("type", "want one of %s", strings.Join(Types, ", "))
	}
	if r.Endpoint != "" {
		if err := checkEndpoint(r.Endpoint); err != nil {
			add("endpoint", "%s", err.Error())
		}
	}
	if r.PacingConfig != "" && !validOtherName(r.PacingConfig) {
		add("rateLimitConfig", "want the name of a rate-limit config")
	}
	if _, err := r.Location(); err != nil {
		add("timeZone", "want an IANA time zone name, e.g. Europe/Berlin")
	}
	if r.Opens < 0 || r.Opens >= 24*time.Hour || r.Opens%time.Second != 0 {
		add("opens", "want a time of day, HH:MM:SS")
	}
	if r.Cutoff != 0 && (r.Cutoff <= r.Opens || r.Cutoff > 24*time.Hour || r.Cutoff%time.Second != 0) {
		add("cutoff", "want a time of day after opens, HH:MM:SS")
	}
	if r.Calendar != "" && !validOtherName(r.Calendar) {
		add("calendar", "want the name of a calendar")
	}
	if len(errs) > 0 {
		return invalid(errs...)
	}
	return nil
}

func validType(t string) bool {
	for _, x := range Types {
		if t == x {
			return true
		}
	}
	return false
}

// checkEndpoint takes an absolute http or https URL with a host and no
// query, fragment or credentials.
func checkEndpoint(s string) error {
	if len(s) > 2048 {
		return errors.New("want at most 2048 characters")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errors.New("want an absolute http or https URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("want an http or https URL")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("want a host")
	case u.User != nil:
		return errors.New("credentials in the URL are not kept: a rail's are the deployment's")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("want no query or fragment")
	}
	return nil
}

// Location is the rail's time zone.
func (r Rail) Location() (*time.Location, error) {
	if r.TimeZone == "" {
		return time.UTC, nil
	}
	// time.LoadLocation also takes a path-like name and "Local": only
	// names of the zone database are a rail's.
	if r.TimeZone == "Local" || strings.HasPrefix(r.TimeZone, "/") || strings.Contains(r.TimeZone, "..") || len(r.TimeZone) > 64 {
		return nil, fmt.Errorf("routing: time zone %q", r.TimeZone)
	}
	if loc, ok := locations.Load(r.TimeZone); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(r.TimeZone)
	if err != nil {
		return nil, err
	}
	// Read once per zone: Phase A asks for every payment of a file.
	locations.Store(r.TimeZone, loc)
	return loc, nil
}

// locations caches the zones read (a zone's rules do not change while
// the process runs; a handful of zones are in use).
var locations sync.Map

// ParseTimeOfDay reads "HH:MM" or "HH:MM:SS" (00:00 to 24:00:00).
func ParseTimeOfDay(s string) (time.Duration, error) {
	bad := fmt.Errorf("routing: time of day %q: want HH:MM:SS", clip(s))
	if len(s) != 5 && len(s) != 8 {
		return 0, bad
	}
	num := func(p string) (int, bool) {
		if len(p) != 2 || p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9' {
			return 0, false
		}
		return int(p[0]-'0')*10 + int(p[1]-'0'), true
	}
	h, ok1 := num(s[0:2])
	m, ok2 := num(s[3:5])
	sec, ok3 := 0, true
	if len(s) == 8 {
		if s[5] != ':' {
			return 0, bad
		}
		sec, ok3 = num(s[6:8])
	}
	if s[2] != ':' || !ok1 || !ok2 || !ok3 || m > 59 || sec > 59 || h > 24 || (h == 24 && (m > 0 || sec > 0)) {
		return 0, bad
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, nil
}

// FormatTimeOfDay writes d as HH:MM:SS.
func FormatTimeOfDay(d time.Duration) string {
	s := int(d / time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
}

func clip(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

// Day is one business day of a rail: its date in the rail's zone, the
// instant it opens and the instant of its cut-off (zero: none).
type Day struct {
	Date   calendar.Date
	Opens  time.Time
	Cutoff time.Time
}

// Start is when a payment requested at t can execute on d: t, or the
// opening when t is earlier.
func (d Day) Start(t time.Time) time.Time {
	if t.Before(d.Opens) {
		return d.Opens
	}
	return t
}

// Late reports whether an instruction that reaches the rail at t is past
// the day's cut-off.
func (d Day) Late(t time.Time) bool { return !d.Cutoff.IsZero() && !t.Before(d.Cutoff) }

// DayFor is the business day a payment requested at t executes on: t's
// date in the rail's zone, or the calendar's next business day when it
// closes that date. cal is the rail's calendar (nil: every day open).
func (r Rail) DayFor(t time.Time, cal *calendar.Calendar) (Day, error) {
	loc, err := r.Location()
	if err != nil {
		return Day{}, err
	}
	d := calendar.DateOf(t, loc)
	if cal != nil {
		if d, err = cal.NextOpen(d); err != nil {
			return Day{}, fmt.Errorf("routing: rail %s: %w", r.Name, err)
		}
	}
	return r.day(d, loc), nil
}

// DayOn is the rail's business day on the date d (a payment's execution
// date), whether or not its calendar keeps d open.
func (r Rail) DayOn(d calendar.Date) (Day, error) {
	loc, err := r.Location()
	if err != nil {
		return Day{}, err
	}
	return r.day(d, loc), nil
}

// NextDay is the business day after d.
func (r Rail) NextDay(d Day, cal *calendar.Calendar) (Day, error) {
	loc, err := r.Location()
	if err != nil {
		return Day{}, err
	}
	next := d.Date.AddDays(1)
	if cal != nil {
		if next, err = cal.NextOpen(next); err != nil {
			return Day{}, fmt.Errorf("routing: rail %s: %w", r.Name, err)
		}
	}
	return r.day(next, loc), nil
}

func (r Rail) day(d calendar.Date, loc *time.Location) Day {
	day := Day{Date: d, Opens: d.At(r.Opens, loc)}
	if r.Cutoff != 0 {
		day.Cutoff = d.At(r.Cutoff, loc)
	}
	return day
}
