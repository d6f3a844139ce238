package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// Check is one readiness condition; a non-nil error makes /readyz answer 503.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Router is the HTTP API's handler.
type Router struct {
	mux    *http.ServeMux
	checks []Check
	log    *slog.Logger
	auth   Authenticator
	idem   IdempotencyKeys
	limits *tokenLimits
	audit  AuditLog
	bodies bodyLimits
	// executionPage gives a workflow run's page in Temporal's Web UI
	// (nil: no links; see LinkExecutions).
	executionPage func(workflowID, runID string) string
	// failures limits failed authentications by client address (nil:
	// off; see LimitAuthFailures).
	failures *failureLimits
	// levers move what waits when an operator changes a limit (nil:
	// nothing moves; see Services.Levers).
	levers Levers

	// table is the routes mounted, and rows their rows by pattern.
	table []Route
	rows  map[string]Route
}

// NewRouter returns a router serving /healthz and /readyz; the other
// routes are added with Mount.
func NewRouter(log *slog.Logger, checks ...Check) *Router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &Router{mux: http.NewServeMux(), checks: checks, log: log, rows: map[string]Route{}}
	rt.Mount(Services{probes: true})
	return rt
}

// Route is the pattern r matches ("POST /v1/payments"), "" for none: a
// request's name in traces, without its ids.
func (rt *Router) Route(r *http.Request) string {
	_, pattern := rt.mux.Handler(r)
	return pattern
}

var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// ServeHTTP routes, answering unknown paths and wrong methods with
// problem+json rather than the mux's plain text.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := rt.mux.Handler(r); pattern != "" {
		if r = rt.authorize(w, r, pattern); r == nil || rt.limited(w, r) {
			return
		}
		if prob := checkURL(r); prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
		if prob := rt.checkTenantParam(r, pattern); prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
		if prob := checkActor(r); prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
		if rt.bodies != (bodyLimits{}) {
			r = r.WithContext(context.WithValue(r.Context(), limitsKey{}, rt.bodies))
		}
		route := rt.rows[pattern]
		limit := route.body.limit(limitsOf(r))
		if route.body != noBody {
			if prob := checkBody(w, r, route.body, limit); prob != nil {
				WriteProblem(w, r, *prob)
				return
			}
			// Whoever reads the body (the handler, the idempotency
			// hash, the audit copy) stops at the limit, however it is
			// sent.
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		if route.serving == idempotent && rt.idem != nil {
			if key, sent := r.Header["Idempotency-Key"]; sent {
				rt.idempotent(w, r, key[0], limit, rt.mux)
				return
			}
		}
		if audited(route, r) {
			rt.serveAudited(w, r, route, rt.mux)
			return
		}
		rt.mux.ServeHTTP(w, r)
		return
	}
	var allowed []string
	for _, m := range probeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := rt.mux.Handler(probe); pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		sort.Strings(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		WriteProblem(w, r, Problem{Status: http.StatusMethodNotAllowed,
			Detail: r.Method + " is not supported here; use " + strings.Join(allowed, " or ")})
		return
	}
	WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no such endpoint: " + r.URL.Path})
}

func (rt *Router) healthz(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz runs every check; the process is ready only when all pass.
func (rt *Router) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{}
	var failed []field.Error
	for _, c := range rt.checks {
		if err := c.Run(ctx); err != nil {
			failed = append(failed, field.Error{Field: c.Name, Detail: err.Error()})
			checks[c.Name] = "failing"
			continue
		}
		checks[c.Name] = "ok"
	}
	if len(failed) > 0 {
		rt.log.Warn("not ready", "failed", failed)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Title: "Not ready",
			Detail: "a readiness check failed", Errors: failed})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

// bodyLimits bound request bodies: a single request, and a bulk file.
type bodyLimits struct{ single, bulk int64 }

type limitsKey struct{}

// SetBodyLimits changes the body limits (defaults 64 KiB and 512 MiB); a
// body over its limit is 413: at once when its Content-Length says so,
// before any of it is read, else when the reading reaches the limit.
func (rt *Router) SetBodyLimits(single, bulk int64) {
	rt.bodies = bodyLimits{single: single, bulk: bulk}
}

func limitsOf(r *http.Request) bodyLimits {
	if l, ok := r.Context().Value(limitsKey{}).(bodyLimits); ok {
		return l
	}
	return bodyLimits{single: defaultMaxBody, bulk: defaultMaxBatchBody}
}

// checkURL refuses a path or query value that no resource can have: one
// that is not UTF-8 or holds a control character (a NUL would otherwise
// reach the database as an error, answered as a 5xx).
func checkURL(r *http.Request) *Problem {
	if !plaintext.Valid(r.URL.Path) {
		return &Problem{Status: http.StatusBadRequest, Title: "Invalid path", Detail: "the path is not UTF-8 or holds a control character"}
	}
	for name, vs := range r.URL.Query() {
		for _, v := range append(vs, name) {
			if !plaintext.Valid(v) {
				return &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "a query parameter is not UTF-8 or holds a control character",
					Errors: []field.Error{{Field: plaintext.Clip(name, 64), Detail: "not UTF-8, or a control character"}}}
			}
		}
	}
	return nil
}
