package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/plaintext"
)

// findOwned looks up the path's id, a thing (what: "payment", "account")
// whose id is its tenant's own, in the tenant lookupTenant names, and
// answers when the caller gets no value: none (404), another tenant's (404
// too, so an id's existence is not told), several tenants' (409 naming
// tenantId) or a failure (503, logged). ok: v is the caller's to write.
func findOwned[V any](rt *Router, w http.ResponseWriter, r *http.Request, what string,
	find func(ctx context.Context, tenant, id string) (V, error), tenantOf func(V) string,
	notFound, ambiguous error) (v V, ok bool) {
	id := r.PathValue("id")
	err := notFound
	if tenant, allowed := lookupTenant(r); allowed {
		v, err = find(r.Context(), tenant, id)
	}
	if err == nil && !tenantAllowed(r, tenantOf(v)) {
		err = notFound
	}
	shown := plaintext.Clip(id, 64)
	switch {
	case errors.Is(err, notFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no " + what + " " + shown})
	case errors.Is(err, ambiguous):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: strings.ToUpper(what[:1]) + what[1:] + " id used by several tenants",
			Detail: "more than one tenant has " + article(what) + " " + what + " " + shown + "; add ?tenantId= to name the tenant",
			Errors: []FieldError{{Field: "tenantId", Detail: "required: several tenants use this " + what + " id"}}})
	case err != nil:
		rt.log.Error(what+" lookup failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the " + what + " cannot be shown now; retry"})
	default:
		return v, true
	}
	return v, false
}

func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}

// lookupTenant is the tenant whose namespace a client-chosen id in the
// path is looked up in: a tenant token's own, or, for an operator's
// token, the tenantId query parameter ("" when none is given: the id is
// then looked for in every tenant). ok is false when a tenant token names
// another tenant: nothing of another tenant exists for it.
func lookupTenant(r *http.Request) (tenant string, ok bool) {
	asked := r.URL.Query().Get("tenantId")
	if p, found := auth.FromContext(r.Context()); found && p.TenantID != "" {
		return p.TenantID, asked == "" || asked == p.TenantID
	}
	return asked, true
}
