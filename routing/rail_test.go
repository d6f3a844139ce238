package routing_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/routing"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestDayFor: a payment's execution date is its requested date in the
// rail's zone, moved to the next business day when the calendar closes
// it; the day opens and cuts off at the rail's clock times, summer time
// or not.
func TestDayFor(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	target2, _ := calendar.BuiltIn("TARGET2")
	rail := routing.Rail{Name: "SEPA", Type: routing.TypeSEPAJSON, TimeZone: "Europe/Berlin",
		Opens: 7 * time.Hour, Cutoff: 16 * time.Hour, Calendar: "TARGET2", Active: true}
	for _, tc := range []struct {
		name      string
		requested time.Time
		date      string
		opens     time.Time
		cutoff    time.Time
	}{
		{"a Friday", time.Date(2026, 11, 27, 15, 0, 0, 0, loc), "2026-11-27",
			time.Date(2026, 11, 27, 7, 0, 0, 0, loc), time.Date(2026, 11, 27, 16, 0, 0, 0, loc)},
		{"a Saturday: Monday", time.Date(2026, 11, 28, 10, 0, 0, 0, loc), "2026-11-30",
			time.Date(2026, 11, 30, 7, 0, 0, 0, loc), time.Date(2026, 11, 30, 16, 0, 0, 0, loc)},
		{"Christmas Day: the 28th (the 26th closes too, then a Sunday)", time.Date(2026, 12, 25, 9, 0, 0, 0, loc), "2026-12-28",
			time.Date(2026, 12, 28, 7, 0, 0, 0, loc), time.Date(2026, 12, 28, 16, 0, 0, 0, loc)},
		{"23:30 UTC is the next day in Berlin", time.Date(2026, 11, 26, 23, 30, 0, 0, time.UTC), "2026-11-27",
			time.Date(2026, 11, 27, 7, 0, 0, 0, loc), time.Date(2026, 11, 27, 16, 0, 0, 0, loc)},
		{"Good Friday 2027 and Easter Monday: Tuesday", time.Date(2027, 3, 26, 12, 0, 0, 0, loc), "2027-03-30",
			time.Date(2027, 3, 30, 7, 0, 0, 0, loc), time.Date(2027, 3, 30, 16, 0, 0, 0, loc)},
		{"summer time", time.Date(2026, 7, 1, 12, 0, 0, 0, loc), "2026-07-01",
			time.Date(2026, 7, 1, 5, 0, 0, 0, time.UTC), time.Date(2026, 7, 1, 14, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := rail.DayFor(tc.requested, &target2)
			if err != nil {
				t.Fatal(err)
			}
			if d.Date.String() != tc.date || !d.Opens.Equal(tc.opens) || !d.Cutoff.Equal(tc.cutoff) {
				t.Errorf("day %s opens %s cut-off %s; want %s, %s, %s", d.Date, d.Opens, d.Cutoff, tc.date, tc.opens, tc.cutoff)
			}
		})
	}
	// The day after a Friday is the Monday.
	fri, _ := rail.DayFor(time.Date(2026, 11, 27, 15, 0, 0, 0, loc), &target2)
	mon, err := rail.NextDay(fri, &target2)
	if err != nil || mon.Date.String() != "2026-11-30" {
		t.Errorf("after Friday: %s, %v", mon.Date, err)
	}
	if !fri.Late(fri.Cutoff) || fri.Late(fri.Cutoff.Add(-time.Millisecond)) {
		t.Errorf("a cut-off is the first late instant")
	}
	if got := fri.Start(fri.Opens.Add(-time.Hour)); !got.Equal(fri.Opens) {
		t.Errorf("a payment requested before the opening starts at %s", got)
	}
	// No cut-off and no calendar: any day, never late.
	open := routing.Rail{Name: "INST", Type: routing.TypeSEPAJSON}
	d, err := open.DayFor(time.Date(2026, 12, 25, 3, 0, 0, 0, time.UTC), nil)
	if err != nil || d.Date.String() != "2026-12-25" || d.Late(time.Date(2026, 12, 25, 23, 59, 0, 0, time.UTC)) {
		t.Errorf("a rail with no cut-off: %+v, %v", d, err)
	}
}

func TestRailValidate(t *testing.T) {
	t.Parallel()
	good := routing.Rail{Name: "SEPA-EU", Type: routing.TypePACS008, Endpoint: "https://bank.example/rail", TimeZone: "Europe/Berlin",
		Opens: 7 * time.Hour, Cutoff: 16*time.Hour + 30*time.Second, Calendar: "TARGET2", PacingConfig: "sepa", Active: true}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(r *routing.Rail)
	}{
		{"name", func(r *routing.Rail) { r.Name = "no spaces" }},
		{"name", func(r *routing.Rail) { r.Name = "pacs008" }},
		{"name", func(r *routing.Rail) { r.Name = "PAYMENT_EVENT" }},
		{"type", func(r *routing.Rail) { r.Type = "SWIFT" }},
		{"endpoint", func(r *routing.Rail) { r.Endpoint = "ftp://bank.example" }},
		{"endpoint", func(r *routing.Rail) { r.Endpoint = "https://user:pw@bank.example" }},
		{"endpoint", func(r *routing.Rail) { r.Endpoint = "https://bank.example/?a=1" }},
		{"timeZone", func(r *routing.Rail) { r.TimeZone = "Mars/Olympus" }},
		{"timeZone", func(r *routing.Rail) { r.TimeZone = "Local" }},
		{"timeZone", func(r *routing.Rail) { r.TimeZone = "../../etc/passwd" }},
		{"opens", func(r *routing.Rail) { r.Opens = -time.Hour }},
		{"cutoff", func(r *routing.Rail) { r.Cutoff = 6 * time.Hour }},
		{"cutoff", func(r *routing.Rail) { r.Cutoff = 16*time.Hour + time.Millisecond }},
		{"rateLimitConfig", func(r *routing.Rail) { r.PacingConfig = "a b" }},
	} {
		r := good
		tc.edit(&r)
		var ve *field.Invalid
		if err := r.Validate(); !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field || !errors.Is(err, routing.ErrInvalid) {
			t.Errorf("%+v: %v, want one error on %s", r, err, tc.field)
		}
	}
}

func TestParseTimeOfDay(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"16:00": 16 * time.Hour, "15:59:59": 16*time.Hour - time.Second, "00:00": 0, "24:00:00": 24 * time.Hour} {
		if got, err := routing.ParseTimeOfDay(in); err != nil || got != want {
			t.Errorf("%s: %v, %v", in, got, err)
		}
		if in != "16:00" && in != "00:00" && routing.FormatTimeOfDay(want) != in {
			t.Errorf("%v formats as %s", want, routing.FormatTimeOfDay(want))
		}
	}
	for _, in := range []string{"", "16", "16:0", "4pm", "24:00:01", "23:60", "12:30:60", "12-30", "1a:00", "16:00:00Z", "-1:00"} {
		if _, err := routing.ParseTimeOfDay(in); err == nil {
			t.Errorf("%q taken", in)
		}
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	dec := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	high := routing.Rule{Currency: "EUR", MinAmount: dec("100000"), Rail: "TARGET2-HV"}
	files := routing.Rule{TenantID: "acme", Source: routing.SourceFile, MaxAmount: dec("99999.99"), Rail: "SEPA"}
	for _, tc := range []struct {
		p    routing.Payment
		rule routing.Rule
		want bool
	}{
		{routing.Payment{TenantID: "x", Currency: "EUR", Amount: decimal.RequireFromString("100000")}, high, true},
		{routing.Payment{TenantID: "x", Currency: "EUR", Amount: decimal.RequireFromString("99999.99")}, high, false},
		{routing.Payment{TenantID: "x", Currency: "CHF", Amount: decimal.RequireFromString("500000")}, high, false},
		{routing.Payment{TenantID: "acme", Currency: "EUR", Amount: decimal.RequireFromString("99999.99"), Source: routing.SourceFile}, files, true},
		{routing.Payment{TenantID: "acme", Currency: "EUR", Amount: decimal.RequireFromString("10"), Source: routing.SourceAPI}, files, false},
		{routing.Payment{TenantID: "other", Currency: "EUR", Amount: decimal.RequireFromString("10"), Source: routing.SourceFile}, files, false},
	} {
		if got := tc.rule.Matches(tc.p); got != tc.want {
			t.Errorf("%+v matches %+v: %v", tc.rule, tc.p, got)
		}
	}
	err := routing.ValidateRules([]routing.Rule{{Rail: "ok"}, {Rail: "", Currency: "eur", Source: "FAX", MinAmount: dec("10"), MaxAmount: dec("5"), TenantID: "<b>"}})
	var ve *field.Invalid
	if !errors.As(err, &ve) || len(ve.Fields) != 5 || ve.Fields[0].Field != "rules[1].rail" {
		t.Errorf("bad rules: %v", err)
	}
	if r, err := routing.ParseCutoffRule("hold"); err != nil || r != routing.Hold {
		t.Errorf("hold: %v, %v", r, err)
	}
	if _, err := routing.ParseCutoffRule("LATER"); !errors.Is(err, routing.ErrInvalid) {
		t.Errorf("LATER: %v", err)
	}
}
