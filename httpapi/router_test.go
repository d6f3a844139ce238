package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/internal/field"
)

func TestRouter(t *testing.T) {
	t.Parallel()
	dbUp := true
	rt := newRouter(t, httpapi.RouterConfig{Checks: []httpapi.Check{{Name: "database", Run: func(context.Context) error {
		if !dbUp {
			return errors.New("connection refused")
		}
		return nil
	}}}})
	tests := []struct {
		name        string
		method      string
		path        string
		dbUp        bool
		wantStatus  int
		wantProblem bool
		wantAllow   string
	}{
		{"healthz", "GET", "/healthz", true, 200, false, ""},
		{"healthz while db down", "GET", "/healthz", false, 200, false, ""},
		{"readyz", "GET", "/readyz", true, 200, false, ""},
		{"readyz while db down", "GET", "/readyz", false, 503, true, ""},
		{"unknown path", "GET", "/nope", true, 404, true, ""},
		{"wrong method", "POST", "/healthz", true, 405, true, "GET"},
	}
	for _, tt := range tests {
		// Not parallel: the cases share dbUp.
		t.Run(tt.name, func(t *testing.T) {
			dbUp = tt.dbUp
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			ct := rec.Header().Get("Content-Type")
			if tt.wantProblem {
				if ct != "application/problem+json" {
					t.Fatalf("content type = %q", ct)
				}
				var p httpapi.Problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != tt.wantStatus || p.Title == "" || p.Detail == "" {
					t.Fatalf("problem = %+v (%v)", p, err)
				}
			} else if ct != "application/json" {
				t.Fatalf("content type = %q", ct)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Fatalf("Allow = %q, want %q", got, tt.wantAllow)
			}
		})
	}
}

// newRouter is httpapi.NewRouter for a config the test means to be good.
func newRouter(t testing.TB, cfg httpapi.RouterConfig) *httpapi.Router {
	t.Helper()
	rt, err := httpapi.NewRouter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestNewRouterRefusesBadSettings: a setting out of range is refused,
// naming it; zero takes the default.
func TestNewRouterRefusesBadSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		setting string
		cfg     httpapi.RouterConfig
	}{
		{"TokenRate", httpapi.RouterConfig{TokenRate: -1}},
		{"TokenRate", httpapi.RouterConfig{TokenRate: math.NaN()}},
		{"TokenRate", httpapi.RouterConfig{TokenRate: math.Inf(1)}},
		{"TokenBurst", httpapi.RouterConfig{TokenRate: 1, TokenBurst: -1}},
		{"AuthFailuresPerMinute", httpapi.RouterConfig{AuthFailuresPerMinute: -1}},
		{"MaxBody", httpapi.RouterConfig{MaxBody: -1}},
		{"MaxBulkBody", httpapi.RouterConfig{MaxBulkBody: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			t.Parallel()
			rt, err := httpapi.NewRouter(tt.cfg)
			var invalid *field.Invalid
			if rt != nil || !errors.As(err, &invalid) || !invalid.Has(tt.setting) {
				t.Fatalf("NewRouter(%+v) = %v, %v; want an error naming %s", tt.cfg, rt, err, tt.setting)
			}
		})
	}
	if _, err := httpapi.NewRouter(httpapi.RouterConfig{}); err != nil {
		t.Fatalf("the zero config: %v", err)
	}
}
