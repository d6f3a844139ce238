package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/paydispatch/paydispatch/auth"
)

// Authenticator turns a bearer token into a principal (auth.Store).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Principal, error)
}

// RequireAuth makes every route but the public ones (/healthz, /readyz,
// /metrics, /openapi.json, the operator console's page and files) need a
// bearer token with the route's scope. Without it (the --insecure-dev
// mode, and handler unit tests) every caller is served.
func (rt *Router) RequireAuth(a Authenticator) { rt.auth = a }

// publicRoutes answer without a token: probes and scrapes, the contract,
// and the operator console's page, script and style sheet (package
// console), which hold no data: the console's script calls the admin API
// with the token its operator signs in with.
var publicRoutes = map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true, "GET /openapi.json": true,
	"GET /console": true, "GET /console/{file}": true}

// routeScopes is the scope each route needs. A route not listed needs
// admin, so a route added without thought is closed, not open.
var routeScopes = map[string]auth.Scope{
	"POST /v1/payments":        auth.PaymentsWrite,
	"POST /v1/payment-batches": auth.PaymentsWrite,
	"GET /v1/payments/{id}":    auth.PaymentsRead,
	"GET /v1/payments":         auth.PaymentsRead,
	"GET /v1/processes/{id}":   auth.PaymentsRead,
	"POST /v1/accounts":        auth.AccountsWrite,
	"GET /v1/accounts/{id}":    auth.PaymentsRead,

	"POST /v1/payments/{id}/cancel":        auth.PaymentsWrite,
	"POST /v1/payment-batches/{id}/cancel": auth.PaymentsWrite,

	"POST /v1/payments/{id}/priority":        auth.PaymentsWrite,
	"POST /v1/payment-batches/{id}/priority": auth.PaymentsWrite,

	"GET /v1/payment-batches/{id}":            auth.PaymentsRead,
	"GET /v1/payment-batches/{id}/rejections": auth.PaymentsRead,

	"GET /v1/payment-batches/{id}/status-report": auth.PaymentsRead,

	// A tenant manages its own endpoints, under /admin as operators do.
	"POST /admin/webhooks":                    auth.WebhooksWrite,
	"GET /admin/webhooks":                     auth.WebhooksWrite,
	"GET /admin/webhooks/{id}":                auth.WebhooksWrite,
	"DELETE /admin/webhooks/{id}":             auth.WebhooksWrite,
	"POST /admin/webhooks/{id}/rotate-secret": auth.WebhooksWrite,
	"GET /admin/webhooks/{id}/deliveries":     auth.WebhooksWrite,
	"POST /admin/webhooks/{id}/redrive":       auth.WebhooksWrite,
}

// RouteScope is the scope a route pattern needs, and whether it is public.
func RouteScope(pattern string) (scope auth.Scope, public bool) {
	if publicRoutes[pattern] {
		return "", true
	}
	if s, ok := routeScopes[pattern]; ok {
		return s, false
	}
	return auth.Admin, false
}

// authorize authenticates r for the route pattern and returns the request
// to serve (carrying its principal), or writes 401/403 and returns nil.
func (rt *Router) authorize(w http.ResponseWriter, r *http.Request, pattern string) *http.Request {
	scope, public := RouteScope(pattern)
	if rt.auth == nil || public {
		return r
	}
	challenge := func(detail, errCode string) *http.Request {
		v := `Bearer realm="paydispatch"`
		if errCode != "" {
			v += `, error="` + errCode + `"`
		}
		w.Header().Set("WWW-Authenticate", v)
		WriteProblem(w, r, Problem{Status: http.StatusUnauthorized, Type: problemType("unauthenticated"), Detail: detail})
		return nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return challenge("send Authorization: Bearer <token> (paydispatch token create makes one)", "")
	}
	kind, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(kind, "Bearer") || strings.TrimSpace(token) == "" {
		return challenge("the Authorization header must be 'Bearer <token>'", "invalid_request")
	}
	token = strings.TrimSpace(token)
	if rt.failures != nil {
		// Checked before the lookup, so a guesser's requests cost no
		// query once its address is over its failures.
		if locked, wait := rt.failures.lockedOut(clientOf(r), token); locked {
			rt.tooManyFailures(w, r, wait)
			return nil
		}
	}
	p, err := rt.auth.Authenticate(r.Context(), token)
	if errors.Is(err, auth.ErrUnauthenticated) {
		if rt.failures != nil {
			rt.failures.failed(clientOf(r))
		}
		return challenge("the token is unknown, revoked or expired", "invalid_token")
	}
	if err != nil {
		rt.log.Error("authentication failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the token cannot be checked now; retry"})
		return nil
	}
	if rt.failures != nil {
		rt.failures.succeeded(token)
	}
	if !p.Has(scope) {
		WriteProblem(w, r, Problem{Status: http.StatusForbidden, Type: problemType("insufficient-scope"),
			Detail: "this token lacks the " + string(scope) + " scope"})
		return nil
	}
	return r.WithContext(auth.WithPrincipal(r.Context(), p))
}

// tenantAllowed reports whether the request's principal may see or act
// for tenant; without authentication every tenant is allowed.
func tenantAllowed(r *http.Request, tenant string) bool {
	p, ok := auth.FromContext(r.Context())
	return !ok || p.Sees(tenant)
}

// problemType is the stable type URI of a problem kind.
func problemType(kind string) string { return "https://paydispatch.dev/problems/" + kind }

// tenantsAllowed reports whether the principal may see a resource that
// holds these tenants' data: all of them must be its own.
func tenantsAllowed(r *http.Request, tenants []string) bool {
	for _, t := range tenants {
		if !tenantAllowed(r, t) {
			return false
		}
	}
	return len(tenants) > 0 || tenantAllowed(r, "")
}

// claimTenant fills an empty tenant with the principal's and answers
// 403 (nil when it may) when it names another tenant: a tenant's token
// acts for its own tenant only.
func claimTenant(r *http.Request, tenant *string) *Problem {
	p, ok := auth.FromContext(r.Context())
	if !ok || p.TenantID == "" {
		return nil
	}
	if *tenant == "" {
		*tenant = p.TenantID
	}
	if *tenant != p.TenantID {
		prob := otherTenant(p, "tenantId")
		return &prob
	}
	return nil
}
