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

// authorize authenticates r for the route pattern and returns the request
// to serve (carrying its principal), or writes 401/403 and returns nil.
func (rt *Router) authorize(w http.ResponseWriter, r *http.Request, pattern string) *http.Request {
	scope, public := rt.RouteScope(pattern)
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
