package console_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/console"
	"github.com/paydispatch/paydispatch/dispatch"
	"github.com/paydispatch/paydispatch/httpapi"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/queue"
)

type tokens map[string]auth.Principal

func (t tokens) Authenticate(_ context.Context, token string) (auth.Principal, error) {
	if p, ok := t[token]; ok {
		return p, nil
	}
	return auth.Principal{}, auth.ErrUnauthenticated
}

type fakeQueue struct{ depths atomic.Int64 }

func (*fakeQueue) ListConfigs(context.Context) ([]queue.Settings, error) {
	c := queue.DefaultSettings("PAYMENT", "PaymentExecution", "payment-exec-task-queue")
	c.PacingConfig, c.ExecMode = "fifty", queue.ExecBatch
	off := queue.DefaultSettings("REPORT", "ReportExecution", "report-task-queue")
	off.Enabled = false
	return []queue.Settings{c, off}, nil
}

func (q *fakeQueue) Depth(_ context.Context, itemType string) (queue.Depth, error) {
	q.depths.Add(1)
	if itemType != "PAYMENT" {
		return queue.Depth{ByStatus: map[queue.Status]int64{}}, nil
	}
	old := time.Now().Add(-3 * time.Second)
	return queue.Depth{ByStatus: map[queue.Status]int64{queue.StatusReady: 120, queue.StatusDispatched: 7, queue.StatusCompleted: 4000},
		OldestReady: &old}, nil
}

type fakeLimits struct{}

func (fakeLimits) ListConfigs(context.Context) ([]pacing.Limit, error) {
	return []pacing.Limit{
		{Name: "fifty", MaxPerWindow: 200, Window: 4 * time.Second, Active: true},
		{Name: "old", MaxPerWindow: 10, Window: time.Second, Active: false},
	}, nil
}

func newRouter(t *testing.T, q console.Queue, counters prometheus.Gatherer) *httpapi.Router {
	t.Helper()
	rt, err := httpapi.NewRouter(httpapi.RouterConfig{Auth: tokens{
		"admin":  {TokenID: "a", Scopes: []auth.Scope{auth.Admin}},
		"reader": {TokenID: "r", Scopes: []auth.Scope{auth.PaymentsRead}},
	}, Services: httpapi.Services{Console: console.New(q, fakeLimits{}, counters, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func get(rt http.Handler, path, token string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	return rec
}

// TestShellIsPublicAndHoldsNoData: the page, its script and its style
// sheet answer without a token, under a Content-Security-Policy of
// default-src 'self'; the figures need an admin token.
func TestShellIsPublicAndHoldsNoData(t *testing.T) {
	t.Parallel()
	rt := newRouter(t, &fakeQueue{}, nil)
	for path, ct := range map[string]string{"/console": "text/html", "/console/console.js": "text/javascript", "/console/console.css": "text/css"} {
		rec := get(rt, path, "")
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), ct) {
			t.Errorf("GET %s without a token: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if rec.Header().Get("Set-Cookie") != "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", path, rec.Header())
		}
		// Revalidated, not fetched again.
		if again := get(rt, path, "", "If-None-Match", rec.Header().Get("ETag")); again.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", path, again.Code)
		}
	}
	for path, want := range map[string]int{"/console/index.html": 404, "/console/nope.js": 404, "/admin/console/stats": 401} {
		if rec := get(rt, path, ""); rec.Code != want || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s without a token: %d %q, want %d problem+json", path, rec.Code, rec.Header().Get("Content-Type"), want)
		}
	}
	if rec := get(rt, "/admin/console/stats", "reader"); rec.Code != http.StatusForbidden {
		t.Errorf("the figures with a payments:read token: %d, want 403", rec.Code)
	}
	if rec := get(rt, "/admin/console/stats", "admin"); rec.Code != http.StatusOK {
		t.Errorf("the figures with an admin token: %d", rec.Code)
	}
	for _, p := range []string{console.PagePattern, console.FilePattern} {
		if _, public := rt.RouteScope(p); !public {
			t.Errorf("%s is not public", p)
		}
	}
	if scope, public := rt.RouteScope(console.StatsPattern); public || scope != auth.Admin {
		t.Errorf("%s: scope %q public %t, want admin", console.StatsPattern, scope, public)
	}
}

// TestAssetsLoadNothingFromElsewhere: the page has no inline script or
// style (the policy would block them), loads only its own files, and no
// file names another site: everything is in the binary.
func TestAssetsLoadNothingFromElsewhere(t *testing.T) {
	t.Parallel()
	html, err := os.ReadFile(filepath.Join("assets", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`\son[a-z]+=`)} {
		if m := bad.Find(html); m != nil {
			t.Errorf("index.html has inline code or style: %q", m)
		}
	}
	for _, ref := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllSubmatch(html, -1) {
		if !strings.HasPrefix(string(ref[1]), "/console/") {
			t.Errorf("index.html loads %s, not one of its own files", ref[1])
		}
	}
	url := regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err = filepath.WalkDir("assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range url.FindAll(b, -1) {
			if string(m) != "http://www.w3.org" { // the SVG namespace, a name, not a fetch
				t.Errorf("%s names %s", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStats: the figures are each item type's queue by status (every
// status listed), its kill switch, its pacing config's limit a second and
// the executions the dispatcher's metrics counted, and every config's
// limit; a second console within a second is served the same read.
func TestStats(t *testing.T) {
	t.Parallel()
	q := &fakeQueue{}
	reg := prometheus.NewRegistry()
	metrics := dispatch.NewMetrics(reg, dispatch.MetricsConfig{})
	slot := time.Now().Add(-time.Second)
	for range 3 {
		metrics.ObserveLag("PAYMENT", slot, time.Now())
	}
	rt := newRouter(t, q, reg)
	rec := get(rt, "/admin/console/stats", "admin")
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	var st console.Stats
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.ItemTypes) != 2 || len(st.RateLimits) != 2 || time.Since(st.At) > time.Minute || st.Instance == "" {
		t.Fatalf("%+v", st)
	}
	p, r := st.ItemTypes[0], st.ItemTypes[1]
	if p.ItemType != "PAYMENT" || !p.Enabled || p.ExecMode != "BATCH" || p.PacingConfig != "fifty" || p.LimitPerSecond != 50 ||
		p.Executed != 3 || p.Completed != 4000 || p.Queue["READY"] != 120 || p.Queue["DISPATCHED"] != 7 || len(p.Queue) != len(queue.Statuses) ||
		p.OldestReadyOverdueSeconds < 2.5 {
		t.Errorf("PAYMENT: %+v", p)
	}
	if r.Enabled || r.LimitPerSecond != 0 || r.Executed != 0 || r.Queue["READY"] != 0 || len(r.Queue) != len(queue.Statuses) {
		t.Errorf("REPORT: %+v", r)
	}
	if c := st.RateLimits[0]; c.ConfigName != "fifty" || c.WindowSize != "PT4S" || c.LimitPerSecond != 50 || !c.Active {
		t.Errorf("fifty: %+v", c)
	}
	if c := st.RateLimits[1]; c.Active || c.LimitPerSecond != 0 {
		t.Errorf("old: %+v", c)
	}
	reads := q.depths.Load()
	metrics.ObserveLag("PAYMENT", slot, time.Now())
	get(rt, "/admin/console/stats", "admin")
	if q.depths.Load() != reads {
		t.Errorf("a second console within the second read the queue again")
	}
	time.Sleep(1100 * time.Millisecond)
	var again console.Stats
	if err := json.Unmarshal(get(rt, "/admin/console/stats", "admin").Body.Bytes(), &again); err != nil {
		t.Fatal(err)
	}
	if q.depths.Load() == reads || again.ItemTypes[0].Executed != 4 || again.Instance != st.Instance {
		t.Errorf("a second later: %d reads of the queue (then %d), %+v", q.depths.Load(), reads, again.ItemTypes[0])
	}
}

type fakeRails struct {
	figures []console.RailFigure
	err     error
}

func (f fakeRails) RailFigures(context.Context) ([]console.RailFigure, error) {
	return f.figures, f.err
}

// TestStatsShowTheRails: the figures hold every rail's as the wiring
// computes them (an empty list without rails, never null), and a failed
// read of them is a 503 problem, not half the figures.
func TestStatsShowTheRails(t *testing.T) {
	t.Parallel()
	cutoff := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	finish, margin := cutoff.Add(90*time.Second), int64(-90)
	sepa := console.RailFigure{Name: "SEPA", Type: "SEPA_JSON", Active: true, Waiting: 4500, WaitingLater: 20, Held: 3, RateLimitConfig: "sepa",
		RatePerSecond: 40, BusinessDay: "2026-11-23", Cutoff: &cutoff, ProjectedFinish: &finish, PastCutoff: true, MarginSeconds: &margin}
	for _, tc := range []struct {
		name  string
		rails console.Rails
		code  int
		want  string // the rails as JSON
	}{
		{"no rails wired", nil, http.StatusOK, `[]`},
		{"none yet", fakeRails{}, http.StatusOK, `[]`},
		{"two", fakeRails{figures: []console.RailFigure{{Name: "DEFAULT", Type: "SEPA_JSON", Active: true}, sepa}}, http.StatusOK,
			`[{"name":"DEFAULT","type":"SEPA_JSON","active":true,"waiting":0,"waitingLater":0,"held":0,"rateLimitConfig":"","ratePerSecond":0,"businessDay":"","pastCutoff":false},` +
				`{"name":"SEPA","type":"SEPA_JSON","active":true,"waiting":4500,"waitingLater":20,"held":3,"rateLimitConfig":"sepa","ratePerSecond":40,"businessDay":"2026-11-23",` +
				`"cutoff":"2026-11-23T15:00:00Z","projectedFinish":"2026-11-23T15:01:30Z","pastCutoff":true,"marginSeconds":-90}]`},
		{"unreadable", fakeRails{err: context.DeadlineExceeded}, http.StatusServiceUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt, err := httpapi.NewRouter(httpapi.RouterConfig{Auth: tokens{"admin": {TokenID: "a", Scopes: []auth.Scope{auth.Admin}}}, Services: httpapi.Services{Console: console.New(&fakeQueue{}, fakeLimits{}, nil, tc.rails)}})
			if err != nil {
				t.Fatal(err)
			}
			rec := get(rt, "/admin/console/stats", "admin")
			if rec.Code != tc.code {
				t.Fatalf("%d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if tc.code != http.StatusOK {
				if rec.Header().Get("Content-Type") != "application/problem+json" {
					t.Errorf("content type %q", rec.Header().Get("Content-Type"))
				}
				return
			}
			var st struct{ Rails json.RawMessage }
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if string(st.Rails) != tc.want {
				t.Errorf("rails %s\nwant  %s", st.Rails, tc.want)
			}
		})
	}
}

// TestScriptWritesNoMarkup: the script builds the page from data with
// elements and text only (el, textContent), never from markup, so that
// nothing the API answers (a tenant's id, a problem's detail naming what
// was sent) can become an element or a script.
func TestScriptWritesNoMarkup(t *testing.T) {
	t.Parallel()
	js, err := os.ReadFile(filepath.Join("assets", "console.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "createContextualFragment"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
}
