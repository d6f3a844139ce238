package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// Pacer is what the slot and rate-limit admin endpoints need.
type Pacer interface {
	Assign(ctx context.Context, configName, eventID string, requested time.Time) (pacing.Slot, error)
	AssignBulk(ctx context.Context, configName string, events []pacing.Event) ([]pacing.Slot, error)
	GetConfig(ctx context.Context, name string) (pacing.Limit, error)
	ListConfigs(ctx context.Context) ([]pacing.Limit, error)
	// PutConfigTx and DeactivateTx change a config in the transaction of
	// the change and its audit entry (see auditAPI); Forget drops it
	// from the cache once that has committed.
	PutConfigTx(ctx context.Context, tx pgx.Tx, c pacing.Limit) (pacing.Limit, error)
	DeactivateTx(ctx context.Context, tx pgx.Tx, name string) (pacing.Limit, error)
	Forget(name string)
	FlushCache()
}

// maxBulkSlots bounds one bulk slot request.
const maxBulkSlots = 100_000

type slotRequest struct {
	EventID       string `json:"eventId"`
	ConfigName    string `json:"configName"`
	RequestedTime string `json:"requestedTime"`
}

type slotView struct {
	EventID       string     `json:"eventId"`
	ScheduledTime *time.Time `json:"scheduledTime,omitempty"`
	WindowStart   *time.Time `json:"windowStart,omitempty"`
	Status        string     `json:"status"`
}

func viewSlot(s pacing.Slot) slotView {
	v := slotView{EventID: s.EventID, Status: string(s.Status)}
	if s.Status != pacing.StatusExhausted {
		st, ws := s.ScheduledTime.UTC(), s.WindowStart.UTC()
		v.ScheduledTime, v.WindowStart = &st, &ws
	}
	return v
}

type configRequest struct {
	ConfigName   string `json:"configName"`
	MaxPerWindow *int   `json:"maxPerWindow"`
	WindowSize   string `json:"windowSize"`
	Headroom     *int   `json:"headroom,omitempty"`
}

type configView struct {
	ConfigName   string    `json:"configName"`
	MaxPerWindow int       `json:"maxPerWindow"`
	WindowSize   string    `json:"windowSize"`
	Headroom     int       `json:"headroom"`
	Active       bool      `json:"active"`
	Version      int       `json:"version"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// changedConfig is a changed config's answer: the config, and how the
// payments waiting under it moved to its new limit (absent: nothing to
// move them, or the move failed and waits for a repace call).
type changedConfig struct {
	configView
	Repaced *payment.Repaced `json:"repaced,omitempty"`
}

func viewConfig(c pacing.Limit) configView {
	return configView{ConfigName: c.Name, MaxPerWindow: c.MaxPerWindow, WindowSize: pacing.FormatISODuration(c.Window),
		Headroom: c.Headroom, Active: c.Active, Version: c.Version, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
}

// pacingAPI serves the slot API and the rate-limit admin under
// /admin/rate-limit/.
type pacingAPI struct {
	rt    *Router
	pacer Pacer
}

// The requested times the limiter serves. It counts windows in
// milliseconds from the Unix epoch, which also stands in for "no slot",
// and takes the zero time (0001-01-01T00:00:00Z) for a time not given; a
// slot, up to headroom (100,000) windows of up to a day after the
// requested time, must still be a time RFC 3339 can write (before the
// year 10000).
var (
	minSlotTime = time.Unix(0, 0).UTC()
	maxSlotTime = time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// slotTime reads a requested time, or says why it cannot be served.
func slotTime(s string) (time.Time, string) {
	at, err := time.Parse(time.RFC3339Nano, s)
	switch {
	case err != nil:
		return time.Time{}, "want an RFC 3339 time with its UTC offset, e.g. 2026-11-22T16:00:00Z"
	case at.Before(minSlotTime):
		return time.Time{}, "too far in the past: the limiter serves times from " + minSlotTime.Format(time.RFC3339) + " to before " + maxSlotTime.Format(time.RFC3339)
	case !at.Before(maxSlotTime):
		return time.Time{}, "too far in the future: the limiter serves times from " + minSlotTime.Format(time.RFC3339) + " to before " + maxSlotTime.Format(time.RFC3339)
	}
	return at, ""
}

// pacingProblem maps the limiter's errors to problems.
func (rt *Router) pacingProblem(w http.ResponseWriter, r *http.Request, p Pacer, configName string, err error) {
	switch bad := invalidFields(err); {
	case bad != nil:
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid request", Detail: "nothing was changed", Errors: bad})
	case errors.Is(err, pacing.ErrConfigNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Title: "No such rate-limit config",
			Detail: fmt.Sprintf("no config %q: create it with POST /admin/rate-limit/config", configName)})
	case errors.Is(err, pacing.ErrConfigInactive):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Title: "Rate-limit config inactive",
			Detail: fmt.Sprintf("config %q is deactivated: POST it again to reactivate", configName)})
	case errors.Is(err, pacing.ErrExhausted):
		retry := 1
		if c, cerr := p.GetConfig(r.Context(), configName); cerr == nil {
			retry = max(1, int(math.Ceil(c.Window.Seconds())))
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Title: "No slot within the search limit",
			Detail: "every window within the config's headroom is full or busy; nothing was assigned: retry later or raise headroom"})
	default:
		rt.log.Error("pacing request failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the rate limiter is unavailable; retry (assignment is idempotent on eventId)"})
	}
}

// assignSlot serves POST /api/v1/slots.
func (api *pacingAPI) assignSlot(w http.ResponseWriter, r *http.Request) {
	var req slotRequest
	if !decodeBody(w, r, &req) {
		return
	}
	var fields []field.Error
	if req.EventID == "" {
		fields = append(fields, field.Error{Field: "eventId", Detail: "required"})
	}
	if req.ConfigName == "" {
		fields = append(fields, field.Error{Field: "configName", Detail: "required, e.g. default"})
	}
	at, bad := slotTime(req.RequestedTime)
	if bad != "" {
		fields = append(fields, field.Error{Field: "requestedTime", Detail: bad})
	}
	if len(fields) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid slot request", Detail: "nothing was assigned", Errors: fields})
		return
	}
	slot, err := api.pacer.Assign(r.Context(), req.ConfigName, req.EventID, at)
	if err != nil {
		api.rt.pacingProblem(w, r, api.pacer, req.ConfigName, err)
		return
	}
	WriteJSON(w, http.StatusOK, viewSlot(slot))
}

// assignSlots serves POST /api/v1/slots/bulk.
func (api *pacingAPI) assignSlots(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ConfigName string `json:"configName"`
		Events     []struct {
			EventID       string `json:"eventId"`
			RequestedTime string `json:"requestedTime"`
		} `json:"events"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	var fields []field.Error
	if req.ConfigName == "" {
		fields = append(fields, field.Error{Field: "configName", Detail: "required, e.g. default"})
	}
	if len(req.Events) == 0 || len(req.Events) > maxBulkSlots {
		fields = append(fields, field.Error{Field: "events", Detail: fmt.Sprintf("want 1 to %d events", maxBulkSlots)})
	}
	events := make([]pacing.Event, len(req.Events))
	for i, e := range req.Events {
		at, bad := slotTime(e.RequestedTime)
		if bad != "" {
			fields = append(fields, field.Error{Field: fmt.Sprintf("events[%d].requestedTime", i), Detail: bad})
		}
		events[i] = pacing.Event{ID: e.EventID, RequestedTime: at}
	}
	if len(fields) > 0 {
		if len(fields) > 100 {
			fields = fields[:100]
		}
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid slot request", Detail: "nothing was assigned", Errors: fields})
		return
	}
	slots, err := api.pacer.AssignBulk(r.Context(), req.ConfigName, events)
	if err != nil {
		api.rt.pacingProblem(w, r, api.pacer, req.ConfigName, err)
		return
	}
	out := struct {
		Slots     []slotView `json:"slots"`
		New       int        `json:"new"`
		Existing  int        `json:"existing"`
		Exhausted int        `json:"exhausted"`
	}{Slots: make([]slotView, len(slots))}
	for i, s := range slots {
		out.Slots[i] = viewSlot(s)
		switch s.Status {
		case pacing.StatusNew:
			out.New++
		case pacing.StatusExisting:
			out.Existing++
		default:
			out.Exhausted++
		}
	}
	WriteJSON(w, http.StatusOK, out)
}

// putConfig serves POST /admin/rate-limit/config.
func (api *pacingAPI) putConfig(w http.ResponseWriter, r *http.Request) {
	var req configRequest
	if !decodeBody(w, r, &req) {
		return
	}
	c := pacing.Limit{Name: req.ConfigName, Headroom: pacing.DefaultHeadroom}
	var fields []field.Error
	if req.MaxPerWindow == nil {
		fields = append(fields, field.Error{Field: "maxPerWindow", Detail: "required, e.g. 100"})
	} else {
		c.MaxPerWindow = *req.MaxPerWindow
	}
	if d, err := pacing.ParseISODuration(req.WindowSize); err != nil {
		fields = append(fields, field.Error{Field: "windowSize", Detail: "want an ISO-8601 duration, e.g. PT4S"})
	} else {
		c.Window = d
	}
	if req.Headroom != nil {
		c.Headroom = *req.Headroom
	}
	if len(fields) == 0 {
		fields = append(fields, invalidFields(c.Validate())...)
	}
	if len(fields) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid rate-limit config", Detail: "nothing was changed", Errors: fields})
		return
	}
	saved, err := api.pacer.PutConfigTx(r.Context(), changeTx(r), c)
	if err != nil {
		api.rt.pacingProblem(w, r, api.pacer, c.Name, err)
		return
	}
	status := http.StatusOK
	if saved.Version == 1 {
		status = http.StatusCreated
	}
	if !api.rt.commit(w, r, status) {
		return
	}
	api.pacer.Forget(saved.Name)
	if status == http.StatusCreated {
		w.Header().Set("Location", "/admin/rate-limit/config/"+saved.Name)
		WriteJSON(w, status, viewConfig(saved))
		return
	}
	// A changed limit moves what waits under it to the new rate.
	WriteJSON(w, status, changedConfig{configView: viewConfig(saved), Repaced: api.rt.repace(r, saved.Name)})
}

// listConfigs serves GET /admin/rate-limit/config.
func (api *pacingAPI) listConfigs(w http.ResponseWriter, r *http.Request) {
	pg, prob := readPage(r, anyPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	cs, err := api.pacer.ListConfigs(r.Context())
	if err != nil {
		api.rt.pacingProblem(w, r, api.pacer, "", err)
		return
	}
	cs, next := paginate(cs, func(c pacing.Limit) string { return c.Name }, pg)
	out := make([]configView, len(cs))
	for i, c := range cs {
		out[i] = viewConfig(c)
	}
	WriteJSON(w, http.StatusOK, listJSON("configs", out, next))
}

// getConfig serves GET /admin/rate-limit/config/{name}.
func (api *pacingAPI) getConfig(w http.ResponseWriter, r *http.Request) {
	c, err := api.pacer.GetConfig(r.Context(), r.PathValue("name"))
	if err != nil {
		api.rt.pacingProblem(w, r, api.pacer, r.PathValue("name"), err)
		return
	}
	WriteJSON(w, http.StatusOK, viewConfig(c))
}

// deactivateConfig serves POST /admin/rate-limit/config/{name}/deactivate.
func (api *pacingAPI) deactivateConfig(w http.ResponseWriter, r *http.Request) {
	c, err := api.pacer.DeactivateTx(r.Context(), changeTx(r), r.PathValue("name"))
	if err != nil {
		api.rt.pacingProblem(w, r, api.pacer, r.PathValue("name"), err)
		return
	}
	if !api.rt.commit(w, r, http.StatusOK) {
		return
	}
	api.pacer.Forget(c.Name)
	WriteJSON(w, http.StatusOK, viewConfig(c))
}

// flushCache serves POST /admin/rate-limit/cache/flush.
func (api *pacingAPI) flushCache(w http.ResponseWriter, r *http.Request) {
	// The flush changes nothing that could be rolled back: it is made
	// once its entry has committed.
	if !api.rt.commit(w, r, http.StatusOK) {
		return
	}
	api.pacer.FlushCache()
	WriteJSON(w, http.StatusOK, map[string]string{"status": "flushed"})
}
