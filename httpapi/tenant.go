package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
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
	v, err := find(r.Context(), lookupTenant(r), id)
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
			Errors: []field.Error{{Field: "tenantId", Detail: "required: several tenants use this " + what + " id"}}})
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
// path is looked up in, or a list is of: a tenant token's own, or, for an
// operator's token, the tenantId query parameter ("" when none is given:
// an id is then looked for in every tenant). A tenant token naming
// another tenant never gets here (checkTenantParam).
func lookupTenant(r *http.Request) string {
	if p, found := auth.FromContext(r.Context()); found && p.TenantID != "" {
		return p.TenantID
	}
	return r.URL.Query().Get("tenantId")
}

// checkTenantParam refuses, on every route that needs a token, a tenantId
// query parameter that no tenant can have (400, field.ValidID's rule),
// given twice (400), or, from a tenant's token, naming another tenant
// (403): a route that reads it then never answers for another tenant,
// and one that does not read it answers the same.
func (rt *Router) checkTenantParam(r *http.Request, pattern string) *Problem {
	asked := r.URL.Query()["tenantId"]
	if _, public := rt.RouteScope(pattern); public || len(asked) == 0 {
		return nil
	}
	if p, ok := auth.FromContext(r.Context()); ok && p.TenantID != "" {
		for _, t := range asked {
			if t != "" && t != p.TenantID {
				prob := otherTenant(p, "tenantId")
				return &prob
			}
		}
	}
	bad := func(detail string) *Problem {
		return &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "tenantId: " + detail,
			Errors: []field.Error{{Field: "tenantId", Detail: detail}}}
	}
	if len(asked) > 1 {
		return bad("give it once")
	}
	if asked[0] != "" && !field.ValidID(asked[0]) {
		return bad(field.IDRule)
	}
	return nil
}

// otherTenant is the answer to a tenant's token that names another tenant
// (in the fields named), whether or not that tenant or its data exist.
func otherTenant(p auth.Principal, fields ...string) Problem {
	prob := Problem{Status: http.StatusForbidden, Type: problemType("other-tenant"), Title: "Another tenant",
		Detail: "this token acts for tenant " + plaintext.Clip(p.TenantID, 64) + " only; nothing was done"}
	for _, f := range fields {
		prob.Errors = append(prob.Errors, field.Error{Field: f, Detail: "names another tenant than the token's"})
	}
	return prob
}

// claimTenants is claimTenant for a bulk file's payments: a file with a
// line naming another tenant than the token's is refused whole (403,
// naming the first 100 such lines), as a single payment would be.
func claimTenants(r *http.Request, reqs []payment.Request, lines []int) *Problem {
	p, ok := auth.FromContext(r.Context())
	if !ok || p.TenantID == "" {
		return nil
	}
	var fields []string
	others := 0
	for i := range reqs {
		if reqs[i].TenantID == "" {
			reqs[i].TenantID = p.TenantID
		}
		if reqs[i].TenantID != p.TenantID {
			if others++; others <= 100 {
				fields = append(fields, fmt.Sprintf("line %d: tenantId", lines[i]))
			}
		}
	}
	if others == 0 {
		return nil
	}
	prob := otherTenant(p, fields...)
	prob.Detail = fmt.Sprintf("this token acts for tenant %s only: %d line(s) name another; nothing was started", plaintext.Clip(p.TenantID, 64), others)
	return &prob
}

// ownRejections records whose each rejected line of a file is: the
// tenant its payment names (a tenant token's file holds its own only),
// and for a line that could not be read, the tenant the file was sent
// for (the token's, or the tenantId query parameter's; "" without one:
// operators alone see it). lines are the places of reqs, in order.
func ownRejections(r *http.Request, les []payment.LineError, reqs []payment.Request, lines []int) {
	sender := lookupTenant(r)
	for i := range les {
		les[i].TenantID = sender
		if at, found := slices.BinarySearch(lines, les[i].Line); found {
			les[i].TenantID = reqs[at].TenantID
		}
	}
}

// ownLines is the rejected lines of a file the caller may see: an
// operator every one, a tenant its own.
func ownLines(r *http.Request, les []payment.LineError) []payment.LineError {
	p, ok := auth.FromContext(r.Context())
	if !ok || p.TenantID == "" {
		return les
	}
	out := make([]payment.LineError, 0, len(les))
	for _, le := range les {
		if le.TenantID == p.TenantID {
			out = append(out, le)
		}
	}
	return out
}

// ownRejected is a file's rejected count (rejected in all) as the caller
// is shown it: to an operator, the whole; to a tenant, its own lines
// among the 10,000 the file kept, or the whole when every kept line is
// its own (a file sent for it, whose lines past those are its own too).
func ownRejected(r *http.Request, p Payments, id string, rejected int) (int, error) {
	if pr, ok := auth.FromContext(r.Context()); !ok || pr.TenantID == "" {
		return rejected, nil
	}
	les, _, err := p.BatchRejections(r.Context(), id)
	if err != nil {
		return 0, err
	}
	if own := ownLines(r, les); len(own) < len(les) {
		return len(own), nil
	}
	return rejected, nil
}
