package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/queue"
	"github.com/paydispatch/paydispatch/routing"
)

// Rails is what the routes of rails, calendars, routing rules and
// tenants' cut-off rules need (RailStore). Changes are made in tx, the
// transaction of the change and its audit entry (see auditAPI).
type Rails interface {
	PutRail(ctx context.Context, tx pgx.Tx, r routing.Rail) (routing.Rail, error)
	ListRails(ctx context.Context) ([]routing.Rail, error)
	// RailStatus is the rail of that name with what waits for it
	// (routing.ErrNotFound when there is none).
	RailStatus(ctx context.Context, name string) (RailStatus, error)
	PutCalendar(ctx context.Context, tx pgx.Tx, c calendar.Calendar) (calendar.Calendar, error)
	Calendar(ctx context.Context, name string) (calendar.Calendar, error)
	ListCalendars(ctx context.Context) ([]calendar.Calendar, error)
	PutRules(ctx context.Context, tx pgx.Tx, rules []routing.Rule) ([]routing.Rule, error)
	ListRules(ctx context.Context) ([]routing.Rule, error)
	SetCutoffRule(ctx context.Context, tx pgx.Tx, tenant string, rule routing.CutoffRule) (routing.TenantCutoffRule, error)
	ListCutoffRules(ctx context.Context) ([]routing.TenantCutoffRule, error)
	// SetControlSettings and ListControlSettings: the tenants' settings
	// of Phase A's controls (payment.ControlSettings).
	SetControlSettings(ctx context.Context, tx pgx.Tx, c payment.ControlSettingsChange) (payment.ControlSettings, error)
	ListControlSettings(ctx context.Context) ([]payment.ControlSettings, error)
	// Flush drops this process's routing snapshot once a change has
	// committed, so that its intake routes by the change at once (other
	// processes read it within their snapshot's 5 s).
	Flush()
}

// RailJSON is a rail as the API shows it: its times of day HH:MM:SS in
// its zone; "" for the endpoint, the rate-limit config or the calendar is
// the process's rail endpoint, PAYMENT's config and every day open, and
// for the cut-off none.
type RailJSON struct {
	Name            string    `json:"name"`
	Type            string    `json:"type"`
	Endpoint        string    `json:"endpoint"`
	RateLimitConfig string    `json:"rateLimitConfig"`
	TimeZone        string    `json:"timeZone"`
	Opens           string    `json:"opens"`
	Cutoff          string    `json:"cutoff"`
	Calendar        string    `json:"calendar"`
	Active          bool      `json:"active"`
	Version         int       `json:"version"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// RailJSONOf is r's JSON form.
func RailJSONOf(r routing.Rail) RailJSON {
	out := RailJSON{Name: r.Name, Type: r.Type, Endpoint: r.Endpoint, RateLimitConfig: r.PacingConfig, TimeZone: r.TimeZone,
		Opens: routing.FormatTimeOfDay(r.Opens), Calendar: r.Calendar, Active: r.Active, Version: r.Version,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if r.Cutoff != 0 {
		out.Cutoff = routing.FormatTimeOfDay(r.Cutoff)
	}
	return out
}

// RailStatus is a rail as GET /admin/rails/{name} shows it: with what
// waits for it, the rate it is paced at, and its current business day.
type RailStatus struct {
	RailJSON
	// Backlog is what waits for it: its last slot is the projected
	// finish, when the rail will have been sent everything waiting.
	Backlog payment.Backlog `json:"backlog"`
	// Rate is its rate-limit config's (nil: the config is missing).
	Rate *RailRate `json:"rate,omitempty"`
	// BusinessDay is the day a payment requested now executes on (nil:
	// its calendar has no business day within two years).
	BusinessDay *RailDay `json:"businessDay,omitempty"`
	// DayWaiting counts the business day's own waiting payments (not
	// those rolled past it), and RatePerSecond is the rate its projected
	// finish is worked out at (0: the config is missing or inactive): what
	// the rail metrics and the console show beside the rest.
	DayWaiting    int64   `json:"-"`
	RatePerSecond float64 `json:"-"`
}

// RailRate is the rate a rail's payments are paced at.
type RailRate struct {
	// RateLimitConfig is the config's name: the rail's own, or PAYMENT's
	// when the rail names none.
	RateLimitConfig string  `json:"rateLimitConfig"`
	MaxPerWindow    int     `json:"maxPerWindow"`
	WindowSize      string  `json:"windowSize"`
	PerSecond       float64 `json:"perSecond"`
	Active          bool    `json:"active"`
}

// RailDay is a rail's current business day, and whether what waits for
// the rail makes its cut-off.
type RailDay struct {
	Date   string     `json:"date"`
	Opens  time.Time  `json:"opens"`
	Cutoff *time.Time `json:"cutoff,omitempty"`
	// ProjectedFinish is the backlog's last slot (nil: nothing waits).
	ProjectedFinish *time.Time `json:"projectedFinish,omitempty"`
	// PastCutoff: the projected finish is at or after the cut-off.
	PastCutoff bool `json:"pastCutoff"`
	// MarginSeconds is the cut-off less the projected finish, in whole
	// seconds rounded down (negative: past it); nil without either.
	MarginSeconds *int64 `json:"marginSeconds,omitempty"`
}

// railDay is d as RailDay, with what waits for the rail.
func railDay(d routing.Day, b payment.Backlog, rate float64, now time.Time) *RailDay {
	finish := b.ProjectedFinish(rate, now)
	out := &RailDay{Date: d.Date.String(), Opens: d.Opens.UTC(), ProjectedFinish: finish}
	if d.Cutoff.IsZero() {
		return out
	}
	c := d.Cutoff.UTC()
	out.Cutoff = &c
	if finish != nil {
		out.PastCutoff = d.Late(*finish)
		m := int64(math.Floor(d.Cutoff.Sub(*finish).Seconds()))
		out.MarginSeconds = &m
	}
	return out
}

// RailStore is Rails on the database, as serve wires it.
type RailStore struct {
	// DB is a pool.
	DB routing.DBTX
	// Payments reads what waits for a rail.
	Payments *payment.Store
	// Pacing reads a rail's rate-limit config, Queue PAYMENT's (the
	// config of a rail that names none); either nil: no rate shown.
	Pacing interface {
		GetConfig(ctx context.Context, name string) (pacing.Limit, error)
	}
	Queue interface {
		GetConfig(ctx context.Context, itemType string) (queue.Settings, error)
	}
	// Resolver is this process's routing snapshot (nil: none to flush).
	Resolver interface{ Flush() }
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (s RailStore) PutRail(ctx context.Context, tx pgx.Tx, r routing.Rail) (routing.Rail, error) {
	return routing.PutRail(ctx, tx, r)
}

func (s RailStore) ListRails(ctx context.Context) ([]routing.Rail, error) {
	return routing.ListRails(ctx, s.DB)
}

func (s RailStore) RailStatus(ctx context.Context, name string) (RailStatus, error) {
	rail, err := routing.GetRail(ctx, s.DB, name)
	if err != nil {
		return RailStatus{}, err
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return RailStatus{}, err
	}
	return s.status(ctx, rail, def)
}

// RailStatuses is every rail's status, by name: the one computation of a
// rail's figures that GET /admin/rails/{name}, the rail metrics and the
// console's figures all show.
func (s RailStore) RailStatuses(ctx context.Context) ([]RailStatus, error) {
	rails, err := routing.ListRails(ctx, s.DB)
	if err != nil {
		return nil, err
	}
	def, err := s.defaultPacingConfig(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]RailStatus, 0, len(rails))
	for _, r := range rails {
		st, err := s.status(ctx, r, def)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// defaultPacingConfig is PAYMENT's rate-limit config, the one of a rail
// that names none ("": none, or no queue to read it from).
func (s RailStore) defaultPacingConfig(ctx context.Context) (string, error) {
	if s.Queue == nil {
		return "", nil
	}
	switch qc, err := s.Queue.GetConfig(ctx, payment.ItemType); {
	case err == nil:
		return qc.PacingConfig, nil
	case errors.Is(err, queue.ErrNotFound):
		return "", nil
	default:
		return "", err
	}
}

// status is rail's figures now, def the config of a rail that names none.
func (s RailStore) status(ctx context.Context, rail routing.Rail, def string) (RailStatus, error) {
	out := RailStatus{RailJSON: RailJSONOf(rail)}
	var err error
	if out.Backlog, err = s.Payments.RailBacklog(ctx, rail.Name, time.Time{}); err != nil {
		return RailStatus{}, err
	}
	cfg := cmp.Or(rail.PacingConfig, def)
	if cfg != "" && s.Pacing != nil {
		switch c, err := s.Pacing.GetConfig(ctx, cfg); {
		case err == nil:
			out.Rate = &RailRate{RateLimitConfig: c.Name, MaxPerWindow: c.MaxPerWindow, WindowSize: pacing.FormatISODuration(c.Window),
				PerSecond: float64(c.MaxPerWindow) / c.Window.Seconds(), Active: c.Active}
			if c.Active {
				out.RatePerSecond = out.Rate.PerSecond
			}
		case !errors.Is(err, pacing.ErrConfigNotFound):
			return RailStatus{}, err
		}
	}
	var cal *calendar.Calendar
	if rail.Calendar != "" {
		c, err := calendar.Get(ctx, s.DB, rail.Calendar)
		if err != nil {
			return RailStatus{}, err
		}
		cal = &c
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	switch day, err := rail.DayFor(now(), cal); {
	case err == nil:
		// The day's own: what waits for its cut-off, not what was rolled
		// past it.
		b, err := s.Payments.RailBacklog(ctx, rail.Name, day.Cutoff)
		if err != nil {
			return RailStatus{}, err
		}
		out.DayWaiting = b.Waiting
		out.BusinessDay = railDay(day, b, out.RatePerSecond, now())
	case !errors.Is(err, calendar.ErrNoBusinessDay):
		return RailStatus{}, err
	}
	return out, nil
}

func (s RailStore) PutCalendar(ctx context.Context, tx pgx.Tx, c calendar.Calendar) (calendar.Calendar, error) {
	return calendar.Put(ctx, tx, c)
}

func (s RailStore) Calendar(ctx context.Context, name string) (calendar.Calendar, error) {
	return calendar.Get(ctx, s.DB, name)
}

func (s RailStore) ListCalendars(ctx context.Context) ([]calendar.Calendar, error) {
	return calendar.List(ctx, s.DB)
}

func (s RailStore) PutRules(ctx context.Context, tx pgx.Tx, rules []routing.Rule) ([]routing.Rule, error) {
	return routing.PutRules(ctx, tx, rules)
}

func (s RailStore) ListRules(ctx context.Context) ([]routing.Rule, error) {
	return routing.ListRules(ctx, s.DB)
}

func (s RailStore) SetCutoffRule(ctx context.Context, tx pgx.Tx, tenant string, rule routing.CutoffRule) (routing.TenantCutoffRule, error) {
	return routing.SetTenantCutoffRule(ctx, tx, tenant, rule)
}

func (s RailStore) ListCutoffRules(ctx context.Context) ([]routing.TenantCutoffRule, error) {
	return routing.ListTenantCutoffRules(ctx, s.DB)
}

func (s RailStore) SetControlSettings(ctx context.Context, tx pgx.Tx, c payment.ControlSettingsChange) (payment.ControlSettings, error) {
	return payment.SetControlSettings(ctx, tx, c)
}

func (s RailStore) ListControlSettings(ctx context.Context) ([]payment.ControlSettings, error) {
	return payment.ListControlSettings(ctx, s.DB)
}

func (s RailStore) Flush() {
	if s.Resolver != nil {
		s.Resolver.Flush()
	}
}

// railRequest is POST /admin/rails's body.
type railRequest struct {
	Name            string `json:"name"`
	Type            string `json:"type"`
	Endpoint        string `json:"endpoint"`
	RateLimitConfig string `json:"rateLimitConfig"`
	TimeZone        string `json:"timeZone"`
	Opens           string `json:"opens"`
	Cutoff          string `json:"cutoff"`
	Calendar        string `json:"calendar"`
	Active          *bool  `json:"active"`
}

// rail is the body as a rail, or what is wrong with it, field by field.
func (b railRequest) rail() (routing.Rail, []field.Error) {
	r := routing.Rail{Name: b.Name, Type: b.Type, Endpoint: b.Endpoint, PacingConfig: b.RateLimitConfig, TimeZone: b.TimeZone,
		Calendar: b.Calendar, Active: b.Active == nil || *b.Active}
	var errs []field.Error
	for _, t := range []struct {
		name, value string
		into        *time.Duration
	}{{"opens", b.Opens, &r.Opens}, {"cutoff", b.Cutoff, &r.Cutoff}} {
		if t.value == "" {
			continue
		}
		d, err := routing.ParseTimeOfDay(t.value)
		if err != nil {
			errs = append(errs, field.Error{Field: t.name, Detail: "want a time of day HH:MM:SS (or HH:MM), e.g. 16:00:00"})
			continue
		}
		*t.into = d
	}
	return r, mergeFields(errs, invalidFields(r.Validate()))
}

// mergeFields adds more to errs, leaving out a field errs names already.
func mergeFields(errs, more []field.Error) []field.Error {
	for _, f := range more {
		if !slices.ContainsFunc(errs, func(e field.Error) bool { return e.Field == f.Field }) {
			errs = append(errs, f)
		}
	}
	return errs
}

// calendarRequest is POST /admin/calendars's body.
type calendarRequest struct {
	Name        string   `json:"name"`
	Weekend     []string `json:"weekend"`
	ClosingDays []string `json:"closingDays"`
}

// maxDayErrors bounds the closing days a refusal names one by one.
const maxDayErrors = 20

// calendar is the body as a calendar, or what is wrong with it.
func (b calendarRequest) calendar() (calendar.Calendar, []field.Error) {
	c := calendar.Calendar{Name: b.Name}
	var errs []field.Error
	if len(b.Weekend) > 7 {
		errs = append(errs, field.Error{Field: "weekend", Detail: "at most 6 days: at least one day of the week must stay open"})
	} else {
		for i, s := range b.Weekend {
			d, ok := ParseWeekday(s)
			if !ok {
				errs = append(errs, field.Error{Field: "weekend[" + strconv.Itoa(i) + "]", Detail: "want a day of the week: MONDAY to SUNDAY, or MON to SUN"})
				continue
			}
			c.Weekend = append(c.Weekend, d)
		}
	}
	if len(b.ClosingDays) > calendar.MaxClosingDays {
		errs = append(errs, field.Error{Field: "closingDays", Detail: "at most " + strconv.Itoa(calendar.MaxClosingDays) + " days"})
	} else {
		bad := 0
		for i, s := range b.ClosingDays {
			d, err := calendar.ParseDate(s)
			if err != nil {
				if bad++; bad <= maxDayErrors {
					errs = append(errs, field.Error{Field: "closingDays[" + strconv.Itoa(i) + "]", Detail: "want a date YYYY-MM-DD, e.g. 2026-12-24"})
				}
				continue
			}
			c.ClosingDays = append(c.ClosingDays, d)
		}
		if bad > maxDayErrors {
			errs = append(errs, field.Error{Field: "closingDays", Detail: strconv.Itoa(bad-maxDayErrors) + " more are not dates YYYY-MM-DD"})
		}
	}
	if len(errs) > 0 {
		return c, errs
	}
	return c, invalidFields(c.Validate())
}

// weekdays are the days of the week by name, in the order an operator
// reads them: Monday first.
var weekdays = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday}

// ParseWeekday reads a day of the week by its English name or its first
// three letters, in any case: SATURDAY, Sat.
func ParseWeekday(s string) (time.Weekday, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	for _, d := range weekdays {
		name := strings.ToUpper(d.String())
		if s == name || s == name[:3] {
			return d, true
		}
	}
	return 0, false
}

// CalendarJSON is a calendar as the API shows it: its weekend days by
// name, Monday first, and its closing days; a built-in's are those of
// this year and the next, computed.
type CalendarJSON struct {
	Name        string          `json:"name"`
	BuiltIn     bool            `json:"builtIn"`
	Weekend     []string        `json:"weekend"`
	ClosingDays []calendar.Date `json:"closingDays"`
	CreatedAt   *time.Time      `json:"createdAt,omitempty"`
	UpdatedAt   *time.Time      `json:"updatedAt,omitempty"`
}

// CalendarJSONOf is c's JSON form, a built-in's closing days those of
// year and the next.
func CalendarJSONOf(c calendar.Calendar, year int) CalendarJSON {
	out := CalendarJSON{Name: c.Name, BuiltIn: c.BuiltIn, Weekend: []string{}, ClosingDays: c.ClosingDays}
	for _, d := range weekdays {
		if slices.Contains(c.Weekend, d) {
			out.Weekend = append(out.Weekend, strings.ToUpper(d.String()))
		}
	}
	if c.BuiltIn {
		out.ClosingDays = append(c.ClosingDaysIn(year), c.ClosingDaysIn(year+1)...)
	}
	if out.ClosingDays == nil {
		out.ClosingDays = []calendar.Date{}
	}
	if !c.CreatedAt.IsZero() {
		created, updated := c.CreatedAt.UTC(), c.UpdatedAt.UTC()
		out.CreatedAt, out.UpdatedAt = &created, &updated
	}
	return out
}

// ruleRequest is a rule of POST /admin/routing-rules's body; amounts are
// decimal strings.
type ruleRequest struct {
	TenantID  string          `json:"tenantId"`
	Currency  string          `json:"currency"`
	MinAmount json.RawMessage `json:"minAmount"`
	MaxAmount json.RawMessage `json:"maxAmount"`
	Source    string          `json:"source"`
	Rail      string          `json:"rail"`
}

// RuleJSON is a routing rule as the API shows it; a matcher left out
// matches anything.
type RuleJSON struct {
	TenantID  string `json:"tenantId,omitempty"`
	Currency  string `json:"currency,omitempty"`
	MinAmount string `json:"minAmount,omitempty"`
	MaxAmount string `json:"maxAmount,omitempty"`
	Source    string `json:"source,omitempty"`
	Rail      string `json:"rail"`
}

// RuleJSONOf is r's JSON form.
func RuleJSONOf(r routing.Rule) RuleJSON {
	out := RuleJSON{TenantID: r.TenantID, Currency: r.Currency, Source: r.Source, Rail: r.Rail}
	if r.MinAmount != nil {
		out.MinAmount = r.MinAmount.String()
	}
	if r.MaxAmount != nil {
		out.MaxAmount = r.MaxAmount.String()
	}
	return out
}

// optionalAmount reads a rule's amount bound: none, or a decimal string.
func optionalAmount(bad *[]field.Error, name string, raw json.RawMessage) *decimal.Decimal {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return nil
	}
	d := decimalField(bad, name, raw, true, money.Unsigned)
	return &d
}

// CutoffRuleJSON is a tenant's cut-off rule as the API shows it.
type CutoffRuleJSON struct {
	TenantID  string             `json:"tenantId"`
	Rule      routing.CutoffRule `json:"rule"`
	UpdatedAt time.Time          `json:"updatedAt"`
}

// railsAPI serves the operators' rails, calendars, routing table and
// tenants' cut-off rules. Each change is audited, and once it has
// committed this process's routing snapshot is dropped (Flush).
type railsAPI struct {
	rt    *Router
	rails Rails
}

func rulesJSON(rules []routing.Rule) map[string]any {
	out := make([]RuleJSON, len(rules))
	for i, x := range rules {
		out[i] = RuleJSONOf(x)
	}
	return map[string]any{"rules": out}
}

// railProblem answers a refusal of the rails' stores: invalid fields
// (422, titled title), a built-in calendar (409), an unknown rail or
// calendar (404), or a failure (503, logged).
func (rt *Router) railProblem(w http.ResponseWriter, r *http.Request, title string, err error) {
	name := plaintext.Clip(r.PathValue("name"), 64)
	switch bad := invalidFields(err); {
	case bad != nil:
		WriteProblem(w, r, fieldProblem(title, bad))
	case errors.Is(err, calendar.ErrBuiltIn):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Built-in calendar",
			Detail: "TARGET2 and WEEKDAYS are built in and cannot be changed (in any case of their names); nothing was stored: choose another name",
			Errors: []field.Error{{Field: "name", Detail: "a built-in calendar's name"}}})
	case errors.Is(err, routing.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Title: "No such rail",
			Detail: "no rail " + name + ": create it with POST /admin/rails"})
	case errors.Is(err, calendar.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Title: "No such calendar",
			Detail: "no calendar " + name + ": create it with POST /admin/calendars, or use TARGET2 or WEEKDAYS"})
	default:
		rt.log.Error("rails: a request failed", "route", r.Pattern, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the rails cannot be read or changed now; retry"})
	}
}

// changed answers a change made in the request's audited transaction:
// it commits (with its audit entry), drops the routing snapshot so the
// change routes at once, and answers v, 201 with its location when it
// created something, else 200.
func (api *railsAPI) changed(w http.ResponseWriter, r *http.Request, created bool, location string, v any) {
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	if !api.rt.commit(w, r, status) {
		return
	}
	api.rails.Flush()
	if created {
		w.Header().Set("Location", location)
	}
	WriteJSON(w, status, v)
}

// putRail serves POST /admin/rails.
func (api *railsAPI) putRail(w http.ResponseWriter, r *http.Request) {
	var body railRequest
	if !decodeBody(w, r, &body) {
		return
	}
	rail, errs := body.rail()
	if len(errs) > 0 {
		WriteProblem(w, r, fieldProblem("Invalid rail", errs))
		return
	}
	saved, err := api.rails.PutRail(r.Context(), changeTx(r), rail)
	if err != nil {
		api.rt.railProblem(w, r, "Invalid rail", err)
		return
	}
	api.changed(w, r, saved.Version == 1, "/admin/rails/"+saved.Name, RailJSONOf(saved))
}

// listRails serves GET /admin/rails.
func (api *railsAPI) listRails(w http.ResponseWriter, r *http.Request) {
	all, err := api.rails.ListRails(r.Context())
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	out := make([]RailJSON, len(all))
	for i, x := range all {
		out[i] = RailJSONOf(x)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"rails": out})
}

// getRail serves GET /admin/rails/{name}.
func (api *railsAPI) getRail(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !routing.ValidName(name) {
		api.rt.railProblem(w, r, "", routing.ErrNotFound)
		return
	}
	st, err := api.rails.RailStatus(r.Context(), name)
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	WriteJSON(w, http.StatusOK, st)
}

// putCalendar serves POST /admin/calendars.
func (api *railsAPI) putCalendar(w http.ResponseWriter, r *http.Request) {
	var body calendarRequest
	if !decodeBody(w, r, &body) {
		return
	}
	c, errs := body.calendar()
	if len(errs) > 0 {
		WriteProblem(w, r, fieldProblem("Invalid calendar", errs))
		return
	}
	saved, err := api.rails.PutCalendar(r.Context(), changeTx(r), c)
	if err != nil {
		api.rt.railProblem(w, r, "Invalid calendar", err)
		return
	}
	// Created and updated in this one transaction: a new calendar.
	api.changed(w, r, saved.CreatedAt.Equal(saved.UpdatedAt), "/admin/calendars/"+saved.Name, CalendarJSONOf(saved, time.Now().UTC().Year()))
}

// listCalendars serves GET /admin/calendars.
func (api *railsAPI) listCalendars(w http.ResponseWriter, r *http.Request) {
	all, err := api.rails.ListCalendars(r.Context())
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	year := time.Now().UTC().Year()
	out := make([]CalendarJSON, len(all))
	for i, c := range all {
		out[i] = CalendarJSONOf(c, year)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"calendars": out})
}

// getCalendar serves GET /admin/calendars/{name}.
func (api *railsAPI) getCalendar(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if len(name) > 100 {
		api.rt.railProblem(w, r, "", calendar.ErrNotFound)
		return
	}
	c, err := api.rails.Calendar(r.Context(), name)
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	WriteJSON(w, http.StatusOK, CalendarJSONOf(c, time.Now().UTC().Year()))
}

// putRules serves POST /admin/routing-rules.
func (api *railsAPI) putRules(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Rules *[]ruleRequest `json:"rules"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	var errs []field.Error
	if body.Rules == nil {
		errs = append(errs, field.Error{Field: "rules", Detail: "required: the whole routing table, in order (an empty one refuses every payment)"})
	}
	var rules []routing.Rule
	if body.Rules != nil && len(*body.Rules) > routing.MaxRules {
		errs = append(errs, field.Error{Field: "rules", Detail: "at most " + strconv.Itoa(routing.MaxRules) + " rules"})
	} else if body.Rules != nil {
		rules = make([]routing.Rule, len(*body.Rules))
		for i, b := range *body.Rules {
			at := "rules[" + strconv.Itoa(i) + "]."
			rules[i] = routing.Rule{TenantID: b.TenantID, Currency: b.Currency, Source: b.Source, Rail: b.Rail,
				MinAmount: optionalAmount(&errs, at+"minAmount", b.MinAmount), MaxAmount: optionalAmount(&errs, at+"maxAmount", b.MaxAmount)}
		}
	}
	if len(errs) == 0 {
		errs = invalidFields(routing.ValidateRules(rules))
	}
	if len(errs) > 0 {
		WriteProblem(w, r, fieldProblem("Invalid routing rules", errs))
		return
	}
	saved, err := api.rails.PutRules(r.Context(), changeTx(r), rules)
	if err != nil {
		api.rt.railProblem(w, r, "Invalid routing rules", err)
		return
	}
	api.changed(w, r, false, "", rulesJSON(saved))
}

// listRules serves GET /admin/routing-rules.
func (api *railsAPI) listRules(w http.ResponseWriter, r *http.Request) {
	rules, err := api.rails.ListRules(r.Context())
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	WriteJSON(w, http.StatusOK, rulesJSON(rules))
}

// setCutoffRule serves POST /admin/cutoff-rules.
func (api *railsAPI) setCutoffRule(w http.ResponseWriter, r *http.Request) {
	var body struct {
		TenantID string `json:"tenantId"`
		Rule     string `json:"rule"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	var errs []field.Error
	if !field.ValidID(body.TenantID) {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "required, the tenant whose rule it is: " + field.IDRule})
	}
	rule, err := routing.ParseCutoffRule(body.Rule)
	errs = append(errs, invalidFields(err)...)
	if len(errs) > 0 {
		WriteProblem(w, r, fieldProblem("Invalid cut-off rule", errs))
		return
	}
	saved, err := api.rails.SetCutoffRule(r.Context(), changeTx(r), body.TenantID, rule)
	if err != nil {
		api.rt.railProblem(w, r, "Invalid cut-off rule", err)
		return
	}
	api.changed(w, r, false, "", CutoffRuleJSON{TenantID: saved.TenantID, Rule: saved.Rule, UpdatedAt: saved.UpdatedAt.UTC()})
}

// listCutoffRules serves GET /admin/cutoff-rules.
func (api *railsAPI) listCutoffRules(w http.ResponseWriter, r *http.Request) {
	pg, prob := readPage(r, anyPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	all, err := api.rails.ListCutoffRules(r.Context())
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	all, next := paginate(all, func(c routing.TenantCutoffRule) string { return c.TenantID }, pg)
	out := make([]CutoffRuleJSON, len(all))
	for i, c := range all {
		out[i] = CutoffRuleJSON{TenantID: c.TenantID, Rule: c.Rule, UpdatedAt: c.UpdatedAt.UTC()}
	}
	page := listJSON("rules", out, next)
	page["default"] = routing.DefaultCutoffRule
	WriteJSON(w, http.StatusOK, page)
}

// ControlSettingsJSON is a tenant's control settings as the API shows
// them (the defaults: no tenantId, no updatedAt).
type ControlSettingsJSON struct {
	TenantID            string                   `json:"tenantId,omitempty"`
	DuplicateAction     payment.DuplicateAction  `json:"duplicateAction"`
	DuplicateWindowDays int                      `json:"duplicateWindowDays"`
	ScreeningOnError    payment.ScreeningOnError `json:"screeningOnError"`
	UpdatedAt           *time.Time               `json:"updatedAt,omitempty"`
}

func controlSettingsJSON(c payment.ControlSettings) ControlSettingsJSON {
	out := ControlSettingsJSON{TenantID: c.TenantID, DuplicateAction: c.DuplicateAction, DuplicateWindowDays: c.DuplicateWindowDays,
		ScreeningOnError: c.ScreeningOnError}
	if !c.UpdatedAt.IsZero() {
		at := c.UpdatedAt.UTC()
		out.UpdatedAt = &at
	}
	return out
}

// setControlSettings serves POST /admin/control-settings: the fields
// given are set, the others kept. Admin only, as the cut-off rule: a
// tenant does not turn its own screening to ALLOW.
func (api *railsAPI) setControlSettings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		TenantID            string  `json:"tenantId"`
		DuplicateAction     *string `json:"duplicateAction"`
		DuplicateWindowDays *int    `json:"duplicateWindowDays"`
		ScreeningOnError    *string `json:"screeningOnError"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	c := payment.ControlSettingsChange{TenantID: body.TenantID, DuplicateAction: body.DuplicateAction,
		DuplicateWindowDays: body.DuplicateWindowDays, ScreeningOnError: body.ScreeningOnError}
	if err := c.Validate(); err != nil {
		WriteProblem(w, r, fieldProblem("Invalid control settings", invalidFields(err)))
		return
	}
	saved, err := api.rails.SetControlSettings(r.Context(), changeTx(r), c)
	if err != nil {
		api.rt.railProblem(w, r, "Invalid control settings", err)
		return
	}
	api.changed(w, r, false, "", controlSettingsJSON(saved))
}

// listControlSettings serves GET /admin/control-settings.
func (api *railsAPI) listControlSettings(w http.ResponseWriter, r *http.Request) {
	pg, prob := readPage(r, anyPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	all, err := api.rails.ListControlSettings(r.Context())
	if err != nil {
		api.rt.railProblem(w, r, "", err)
		return
	}
	all, next := paginate(all, func(c payment.ControlSettings) string { return c.TenantID }, pg)
	out := make([]ControlSettingsJSON, len(all))
	for i, c := range all {
		out[i] = controlSettingsJSON(c)
	}
	page := listJSON("settings", out, next)
	page["default"] = controlSettingsJSON(payment.DefaultControlSettings)
	WriteJSON(w, http.StatusOK, page)
}
