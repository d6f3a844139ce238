package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/paydispatch/paydispatch/httpapi"
)

func TestRouter(t *testing.T) {
	t.Parallel()
	dbUp := true
	rt := httpapi.NewRouter(nil, httpapi.Check{Name: "database", Run: func(context.Context) error {
		if !dbUp {
			return errors.New("connection refused")
		}
		return nil
	}})
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
