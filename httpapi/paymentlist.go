package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/routing"
)

// maxListFilter bounds a filter's text (a batch id, a debtor account).
const maxListFilter = 128

// listableStatuses are the statuses a list filters on: every one a
// stored payment can have, HELD among them.
func listableStatuses() []payment.Status {
	ss := payment.StoredStatuses()
	if !slices.Contains(ss, payment.StatusHeld) {
		ss = append(ss, payment.StatusHeld)
	}
	return ss
}

func statusNames(ss []payment.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// readTimes reads the query's time parameters into their places, and
// names each that is not an RFC 3339 time.
func readTimes(q url.Values, dst map[string]*time.Time) []field.Error {
	var errs []field.Error
	for name, at := range dst {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil || t.Year() < 1970 || t.Year() > 9998 {
				errs = append(errs, field.Error{Field: name, Detail: "an RFC 3339 time with its offset, e.g. 2026-11-26T16:00:00Z"})
				continue
			}
			*at = t
		}
	}
	return errs
}

// list serves GET /v1/payments: the tenant's payments, newest first,
// filtered and paged.
func (api *paymentsAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tenant := lookupTenant(r)
	f := payment.ListFilter{TenantID: tenant, Status: payment.Status(q.Get("status")), BatchID: q.Get("batchId"),
		DebtorAccount: q.Get("debtorAccount"), Rail: q.Get("rail"), Priority: payment.Priority(q.Get("priority"))}
	var errs []field.Error
	if tenant == "" {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "required for an operator's token: a list is one tenant's"})
	}
	// A list filters on every status a stored payment can have.
	if listable := listableStatuses(); f.Status != "" && !slices.Contains(listable, f.Status) {
		detail := "one of " + strings.Join(statusNames(listable), ", ")
		if f.Status == payment.StatusReceived {
			detail = "RECEIVED payments are not listed (Phase A stores them within seconds): GET /v1/payments/{id} or the file's progress shows them"
		}
		errs = append(errs, field.Error{Field: "status", Detail: detail})
	}
	for name, v := range map[string]string{"batchId": f.BatchID, "debtorAccount": f.DebtorAccount} {
		if len(v) > maxListFilter {
			errs = append(errs, field.Error{Field: name, Detail: "at most 128 characters"})
		}
	}
	if f.Rail != "" && !routing.ValidName(f.Rail) {
		errs = append(errs, field.Error{Field: "rail", Detail: "a rail's name: 1 to 64 letters, digits, '_', '.', ':' or '-'"})
	}
	if f.Priority != "" && !f.Priority.Valid() {
		errs = append(errs, field.Error{Field: "priority", Detail: "HIGH, NORMAL or LOW"})
	}
	errs = append(errs, readTimes(q, map[string]*time.Time{"requestedFrom": &f.RequestedFrom, "requestedTo": &f.RequestedTo})...)
	if !f.RequestedFrom.IsZero() && !f.RequestedTo.IsZero() && !f.RequestedFrom.Before(f.RequestedTo) {
		errs = append(errs, field.Error{Field: "requestedTo", Detail: "must be after requestedFrom"})
	}
	pg, prob := readPage(r, payment.ValidListPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b field.Error) int { return strings.Compare(a.Field, b.Field) })
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid filter", Detail: "fix the query parameters", Errors: errs})
		return
	}
	page, err := api.payments.List(r.Context(), f, pg.after, pg.limit)
	switch {
	case errors.Is(err, payment.ErrBadPosition):
		WriteProblem(w, r, Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "fix the query parameters", Errors: []field.Error{badCursor}})
	case err != nil:
		api.rt.log.Error("listing payments failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "payments cannot be listed now; retry"})
	default:
		next := ""
		if page.Next != "" {
			next = pg.cursor(page.Next)
		}
		WriteJSON(w, http.StatusOK, listJSON("payments", page.Payments, next))
	}
}
