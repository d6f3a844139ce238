package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"golang.org/x/time/rate"

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
	limits *tokenLimits // nil: off
	audit  AuditLog
	bodies bodyLimits
	// executionPage gives a workflow run's page in Temporal's Web UI
	// (nil: no links; see RouterConfig.ExecutionPage).
	executionPage func(workflowID, runID string) string
	// failures limits failed authentications by client address (nil:
	// off; see RouterConfig.AuthFailuresPerMinute).
	failures *failureLimits
	// levers move what waits when an operator changes a limit (nil:
	// nothing moves; see Services.Levers).
	levers Levers

	// table is the routes mounted, and rows their rows by pattern.
	table []Route
	rows  map[string]Route
}

// RouterConfig is what a Router serves with. Its zero value serves every
// caller, without limits but the default body limits, and logs nothing.
type RouterConfig struct {
	// Log receives what the router and its handlers log (nil: nothing).
	Log *slog.Logger
	// Checks are /readyz's conditions.
	Checks []Check
	// Auth makes every route but the public ones (Public in the route
	// table) need a bearer token with the route's scope. Without it (the
	// --insecure-dev mode, and handler unit tests) every caller is served.
	Auth Authenticator
	// IdempotencyKeys turns on the Idempotency-Key header for the POSTs
	// that create something (nil: the header is ignored).
	IdempotencyKeys IdempotencyKeys
	// TokenRate caps each token at TokenRate requests a second, with
	// bursts of up to TokenBurst (at least 1); a request over it is 429
	// with Retry-After. 0 turns the limit off. Probes, scrapes and
	// unauthenticated requests are not counted (the latter are refused
	// anyway).
	TokenRate  float64
	TokenBurst int
	// AuthFailuresPerMinute caps the failed authentications (a bearer
	// token that is unknown, revoked or expired) each client address may
	// make: a bucket of that many failures, refilled at as many a minute.
	// An address whose bucket is empty is locked out: a request from it is
	// answered 429 with Retry-After before its token is looked up, unless
	// its token authenticated recently (from any address), so a client
	// that shares the address with a guesser (a NAT, a proxy) keeps
	// working. A valid token is never counted; it costs a keyed hash and a
	// map update, no query and no allocation (BenchmarkAuthenticateValid).
	// 0 turns the limit off.
	//
	// The address is the connection's (RemoteAddr): an IPv4 address, or
	// an IPv6 /64, which one client usually holds whole. No header such
	// as X-Forwarded-For is trusted.
	AuthFailuresPerMinute int
	// ExecutionPage has GET /v1/payments/{id} link a payment's execution
	// to its page in Temporal's Web UI: it gives the URL of a workflow's
	// run (nil: no links).
	ExecutionPage func(workflowID, runID string) string
	// MaxBody and MaxBulkBody bound request bodies: a single request
	// (default 64 KiB) and a bulk file (default 512 MiB). A body over its
	// limit is 413: at once when its Content-Length says so, before any of
	// it is read, else when the reading reaches the limit.
	MaxBody, MaxBulkBody int64
	// Services are what the routes serve: a route is mounted for each
	// service given (the route table, routes.go); the probes always are.
	Services Services
}

func (c RouterConfig) withDefaults() RouterConfig {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.MaxBody == 0 {
		c.MaxBody = defaultMaxBody
	}
	if c.MaxBulkBody == 0 {
		c.MaxBulkBody = defaultMaxBatchBody
	}
	if c.TokenRate > 0 && c.TokenBurst == 0 {
		c.TokenBurst = 1
	}
	return c
}

func (c RouterConfig) validate() error {
	bad := field.Invalid{What: "invalid router config"}
	if c.TokenRate < 0 || math.IsNaN(c.TokenRate) || math.IsInf(c.TokenRate, 0) {
		bad.Add("TokenRate", fmt.Sprintf("%v: want 0 (off) or a positive number of requests a second", c.TokenRate))
	}
	if c.TokenBurst < 0 {
		bad.Add("TokenBurst", fmt.Sprintf("%d: want 0 or more", c.TokenBurst))
	}
	if c.AuthFailuresPerMinute < 0 {
		bad.Add("AuthFailuresPerMinute", fmt.Sprintf("%d: want 0 (off) or more", c.AuthFailuresPerMinute))
	}
	if c.MaxBody < 0 {
		bad.Add("MaxBody", fmt.Sprintf("%d: want a positive number of bytes, or 0 for the default", c.MaxBody))
	}
	if c.MaxBulkBody < 0 {
		bad.Add("MaxBulkBody", fmt.Sprintf("%d: want a positive number of bytes, or 0 for the default", c.MaxBulkBody))
	}
	return bad.Err()
}

// NewRouter validates cfg (after defaults) and returns a router serving
// /healthz and /readyz, and the routes of cfg.Services.
func NewRouter(cfg RouterConfig) (*Router, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("httpapi.NewRouter: %w", err)
	}
	rt := &Router{
		mux:           http.NewServeMux(),
		checks:        cfg.Checks,
		log:           cfg.Log,
		auth:          cfg.Auth,
		idem:          cfg.IdempotencyKeys,
		bodies:        bodyLimits{single: cfg.MaxBody, bulk: cfg.MaxBulkBody},
		executionPage: cfg.ExecutionPage,
		rows:          map[string]Route{},
	}
	if cfg.TokenRate > 0 {
		rt.limits = &tokenLimits{every: rate.Limit(cfg.TokenRate), burst: cfg.TokenBurst, byToken: map[string]*rate.Limiter{}}
	}
	if cfg.AuthFailuresPerMinute > 0 {
		rt.failures = newFailureLimits(cfg.AuthFailuresPerMinute, maxFailingAddrs, maxKnownTokens, time.Now)
	}
	rt.mount(Services{probes: true})
	rt.mount(cfg.Services)
	return rt, nil
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
		route := rt.rows[pattern]
		limit := route.body.limit(rt.bodies)
		r = r.WithContext(context.WithValue(r.Context(), limitsKey{}, requestLimits{bodyLimits: rt.bodies, route: limit}))
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

// requestLimits are the router's body limits, and the one of the
// request's route (its row's body kind).
type requestLimits struct {
	bodyLimits
	route int64
}

func limitsOf(r *http.Request) bodyLimits {
	if l, ok := r.Context().Value(limitsKey{}).(requestLimits); ok {
		return l.bodyLimits
	}
	return bodyLimits{single: defaultMaxBody, bulk: defaultMaxBatchBody}
}

// routeLimitOf is the most the body of r's route may hold.
func routeLimitOf(r *http.Request) int64 {
	if l, ok := r.Context().Value(limitsKey{}).(requestLimits); ok {
		return l.route
	}
	return defaultMaxBody
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
