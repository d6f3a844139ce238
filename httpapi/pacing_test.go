package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// fakePacer answers by config name: "default" assigns, "full" is
// exhausted, "off" is inactive, anything else is unknown.
type fakePacer struct {
	flushed bool
	configs []pacing.Limit
}

func (f *fakePacer) Assign(_ context.Context, name, id string, at time.Time) (pacing.Slot, error) {
	switch name {
	case "default":
		return pacing.Slot{EventID: id, ScheduledTime: at.Add(time.Second), WindowStart: at, Status: pacing.StatusNew}, nil
	case "full":
		return pacing.Slot{EventID: id, Status: pacing.StatusExhausted}, pacing.ErrExhausted
	case "off":
		return pacing.Slot{}, pacing.ErrConfigInactive
	}
	return pacing.Slot{}, pacing.ErrConfigNotFound
}

func (f *fakePacer) AssignBulk(ctx context.Context, name string, es []pacing.Event) ([]pacing.Slot, error) {
	var out []pacing.Slot
	for _, e := range es {
		s, err := f.Assign(ctx, name, e.ID, e.RequestedTime)
		if err != nil && name != "full" {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakePacer) PutConfigTx(_ context.Context, _ pgx.Tx, c pacing.Limit) (pacing.Limit, error) {
	if err := c.Validate(); err != nil {
		return pacing.Limit{}, err
	}
	c.Active, c.Version = true, 1
	return c, nil
}

func (f *fakePacer) GetConfig(_ context.Context, name string) (pacing.Limit, error) {
	if name == "full" {
		return pacing.Limit{Name: name, MaxPerWindow: 1, Window: 4 * time.Second}, nil
	}
	return pacing.Limit{}, pacing.ErrConfigNotFound
}

func (f *fakePacer) ListConfigs(context.Context) ([]pacing.Limit, error) { return f.configs, nil }

func (f *fakePacer) DeactivateTx(_ context.Context, _ pgx.Tx, name string) (pacing.Limit, error) {
	return pacing.Limit{}, pacing.ErrConfigNotFound
}

func (f *fakePacer) FlushCache() { f.flushed = true }

func (f *fakePacer) Forget(string) {}

func TestPacingEndpoints(t *testing.T) {
	t.Parallel()
	slot := func(cfg, at string) string {
		return fmt.Sprintf(`{"eventId":"e-1","configName":%q,"requestedTime":%q}`, cfg, at)
	}
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantField                string // first field error named, for 422
		wantRetryAfter           string
	}{
		{"assign", "POST", "/api/v1/slots", slot("default", "2025-06-01T12:00:00Z"), 200, "", ""},
		{"unknown config", "POST", "/api/v1/slots", slot("nope", "2025-06-01T12:00:00Z"), 404, "", ""},
		{"inactive config", "POST", "/api/v1/slots", slot("off", "2025-06-01T12:00:00Z"), 404, "", ""},
		{"exhausted", "POST", "/api/v1/slots", slot("full", "2025-06-01T12:00:00Z"), 503, "", "4"},
		{"bad time", "POST", "/api/v1/slots", slot("default", "tomorrow"), 422, "requestedTime", ""},
		{"missing event id", "POST", "/api/v1/slots", `{"configName":"default","requestedTime":"2025-06-01T12:00:00Z"}`, 422, "eventId", ""},
		{"malformed", "POST", "/api/v1/slots", `{"eventId":`, 400, "", ""},
		{"unknown field", "POST", "/api/v1/slots", `{"eventName":"x"}`, 400, "", ""},
		{"bulk", "POST", "/api/v1/slots/bulk", `{"configName":"default","events":[{"eventId":"a","requestedTime":"2025-06-01T12:00:00Z"}]}`, 200, "", ""},
		{"bulk bad time", "POST", "/api/v1/slots/bulk", `{"configName":"default","events":[{"eventId":"a","requestedTime":"x"}]}`, 422, "events[0].requestedTime", ""},
		{"bulk empty", "POST", "/api/v1/slots/bulk", `{"configName":"default","events":[]}`, 422, "events", ""},
		{"create config", "POST", "/admin/rate-limit/config", `{"configName":"default","maxPerWindow":100,"windowSize":"PT4S"}`, 201, "", ""},
		{"config bad window", "POST", "/admin/rate-limit/config", `{"configName":"default","maxPerWindow":100,"windowSize":"4s"}`, 422, "windowSize", ""},
		{"config no max", "POST", "/admin/rate-limit/config", `{"configName":"default","windowSize":"PT4S"}`, 422, "maxPerWindow", ""},
		{"config zero max", "POST", "/admin/rate-limit/config", `{"configName":"default","maxPerWindow":0,"windowSize":"PT4S"}`, 422, "maxPerWindow", ""},
		{"config bad name", "POST", "/admin/rate-limit/config", `{"configName":"a b","maxPerWindow":1,"windowSize":"PT4S"}`, 422, "configName", ""},
		{"get unknown config", "GET", "/admin/rate-limit/config/nope", "", 404, "", ""},
		{"deactivate unknown", "POST", "/admin/rate-limit/config/nope/deactivate", "", 404, "", ""},
		{"list", "GET", "/admin/rate-limit/config", "", 200, "", ""},
		{"flush", "POST", "/admin/rate-limit/cache/flush", "", 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Pacer: &fakePacer{}, Audit: &fakeAudit{}}})
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if rec.Code >= 400 {
				if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
					t.Fatalf("content type %q", ct)
				}
				var p httpapi.Problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code {
					t.Fatalf("problem %s: %v", rec.Body, err)
				}
				if tt.wantField != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.wantField) {
					t.Fatalf("errors %+v, want field %s first", p.Errors, tt.wantField)
				}
			}
			if got := rec.Header().Get("Retry-After"); got != tt.wantRetryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tt.wantRetryAfter)
			}
		})
	}
}

// TestSlotTimeRange: a requested time RFC 3339 allows but the limiter
// does not serve is refused for what it is, naming the field.
func TestSlotTimeRange(t *testing.T) {
	t.Parallel()
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Pacer: &fakePacer{}}})
	slot := func(at string) string {
		return fmt.Sprintf(`{"eventId":"e-1","configName":"default","requestedTime":%q}`, at)
	}
	bulk := func(at string) string {
		return fmt.Sprintf(`{"configName":"default","events":[{"eventId":"a","requestedTime":"2030-01-01T00:00:00Z"},{"eventId":"b","requestedTime":%q}]}`, at)
	}
	tests := []struct {
		name, path, body string
		want             int
		wantField        string
		wantInDetail     string
	}{
		{"the zero time", "/api/v1/slots", slot("0001-01-01T00:00:00Z"), 422, "requestedTime", "too far in the past"},
		{"before the epoch", "/api/v1/slots", slot("1969-12-31T23:59:59.999Z"), 422, "requestedTime", "too far in the past"},
		{"the epoch", "/api/v1/slots", slot("1970-01-01T00:00:00Z"), 200, "", ""},
		{"the last year RFC 3339 has", "/api/v1/slots", slot("9999-12-31T23:59:59Z"), 422, "requestedTime", "too far in the future"},
		{"a slot that could not be written", "/api/v1/slots", slot("9000-01-01T00:00:00Z"), 422, "requestedTime", "too far in the future"},
		{"no offset", "/api/v1/slots", slot("2030-01-01T00:00:00"), 422, "requestedTime", "RFC 3339"},
		{"not a time", "/api/v1/slots", slot("tomorrow"), 422, "requestedTime", "RFC 3339"},
		{"a number", "/api/v1/slots", `{"eventId":"e-1","configName":"default","requestedTime":20300101}`, 400, "requestedTime", "want a string, not a JSON number"},
		{"bulk, the zero time", "/api/v1/slots/bulk", bulk("0001-01-01T00:00:00Z"), 422, "events[1].requestedTime", "too far in the past"},
		{"bulk, a number", "/api/v1/slots/bulk", `{"configName":"default","events":[{"eventId":"a","requestedTime":1}]}`, 400, "events[0].requestedTime", "want a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("%d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if tt.want < 400 {
				return
			}
			var p httpapi.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || len(p.Errors) == 0 || p.Errors[0].Field != tt.wantField ||
				!strings.Contains(p.Errors[0].Detail, tt.wantInDetail) {
				t.Fatalf("problem %s, want field %s saying %q", rec.Body, tt.wantField, tt.wantInDetail)
			}
		})
	}
}

// changingPacer changes configs that exist (version 2).
type changingPacer struct{ fakePacer }

func (f *changingPacer) PutConfigTx(ctx context.Context, tx pgx.Tx, c pacing.Limit) (pacing.Limit, error) {
	c, err := f.fakePacer.PutConfigTx(ctx, tx, c)
	c.Version = 2
	return c, err
}

// recordingLevers remembers which configs' waiting payments it moved;
// its other levers are the contract's fakes.
type recordingLevers struct {
	fakeLevers
	moved []string
}

func (l *recordingLevers) RepaceConfig(_ context.Context, config string, _ payment.Record) (payment.Repaced, error) {
	l.moved = append(l.moved, config)
	return payment.Repaced{Moved: 7}, nil
}

// TestChangedLimitMovesWhatWaits: a changed rate-limit config moves the
// payments waiting under it to its new limit, and its answer says how
// they moved; a new config has nothing waiting.
func TestChangedLimitMovesWhatWaits(t *testing.T) {
	t.Parallel()
	levers := &recordingLevers{}
	rt := newRouter(t, httpapi.RouterConfig{Services: httpapi.Services{Audit: &fakeAudit{}, Pacer: &changingPacer{}, Levers: levers}})
	req := httptest.NewRequest("POST", "/admin/rate-limit/config", strings.NewReader(`{"configName":"sepa","maxPerWindow":20,"windowSize":"PT1S"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	var got struct {
		ConfigName string
		Repaced    *payment.Repaced
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || got.Repaced == nil || got.Repaced.Moved != 7 ||
		len(levers.moved) != 1 || levers.moved[0] != "sepa" {
		t.Fatalf("%d %s; moved %v", rec.Code, rec.Body, levers.moved)
	}
}
