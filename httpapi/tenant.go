package httpapi

import (
	"net/http"

	"github.com/paydispatch/paydispatch/auth"
)

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
