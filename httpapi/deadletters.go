package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/deadletter"
	"github.com/paydispatch/paydispatch/internal/field"
)

// DeadLetters is what the dead-letter routes need (deadletter.Service).
type DeadLetters interface {
	List(ctx context.Context, f deadletter.Filter, after *deadletter.Position, limit int) (deadletter.Page, error)
	Requeue(ctx context.Context, r deadletter.Request) (deadletter.Result, error)
}

// requeueBody is POST /admin/dead-letters/requeue's body.
type requeueBody struct {
	IDs    []string           `json:"ids"`
	Filter *deadletter.Filter `json:"filter"`
	// RateLimitConfig names the config the requeued items take new slots
	// from; empty: each item type's own.
	RateLimitConfig string `json:"rateLimitConfig"`
	Reason          string `json:"reason"`
}

// deadLettersAPI serves the dispatch queue's and the outbox's dead
// letters (oldest death first, filtered and paged) and their requeue (by
// ids, or a filter's whole result, each item a new slot from a
// rate-limit config). Each of a requeue's transactions writes its audit
// entry (the actor, the request, what it moved) before it commits.
type deadLettersAPI struct {
	rt          *Router
	deadLetters DeadLetters
}

// deadLetterFields name the fields a deadletter error is about.
func deadLetterFields(err error) []field.Error {
	if bad := invalidFields(err); bad != nil {
		return bad
	}
	return []field.Error{{Field: "filter", Detail: err.Error()}}
}

// requeueDetail is a requeue's audit entry: what was asked, and what one
// of its transactions moved.
func requeueDetail(body requeueBody, page deadletter.Result) map[string]any {
	detail := map[string]any{"requeued": page.Requeued, "rateLimitConfig": page.Configs}
	if body.Filter != nil {
		detail["filter"] = body.Filter
	} else {
		detail["ids"] = len(body.IDs)
	}
	if body.Reason != "" {
		detail["reason"] = body.Reason
	}
	if len(page.Refused) > 0 {
		detail["refused"] = len(page.Refused)
	}
	return detail
}

// list serves GET /admin/dead-letters.
func (api *deadLettersAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := deadletter.Filter{Source: q.Get("source"), ItemType: q.Get("itemType"), TenantID: q.Get("tenantId"), Reason: q.Get("reason")}
	errs := readTimes(q, map[string]*time.Time{"diedFrom": &f.DiedFrom, "diedTo": &f.DiedTo})
	if err := f.Validate(); err != nil && len(errs) == 0 {
		errs = append(errs, deadLetterFields(err)...)
	}
	pg, prob := readPage(r, func(pos string) bool { _, ok := deadletter.ParsePosition(pos); return ok })
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	if len(errs) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid filter", Detail: "fix the query parameters", Errors: errs})
		return
	}
	var after *deadletter.Position
	if pg.started {
		p, _ := deadletter.ParsePosition(pg.after)
		after = &p
	}
	page, err := api.deadLetters.List(r.Context(), f, after, pg.limit)
	if err != nil {
		api.rt.log.Error("listing dead letters failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "dead letters cannot be listed now; retry"})
		return
	}
	next := ""
	if page.Next != nil {
		next = pg.cursor(page.Next.String())
	}
	letters := page.Letters
	if letters == nil {
		letters = []deadletter.Letter{}
	}
	WriteJSON(w, http.StatusOK, listJSON("deadLetters", letters, next))
}

// requeue serves POST /admin/dead-letters/requeue.
func (api *deadLettersAPI) requeue(w http.ResponseWriter, r *http.Request) {
	var body requeueBody
	if !decodeBody(w, r, &body) {
		return
	}
	res, err := api.deadLetters.Requeue(r.Context(), deadletter.Request{IDs: body.IDs, Filter: body.Filter, Config: body.RateLimitConfig, Reason: body.Reason,
		Record: func(ctx context.Context, tx pgx.Tx, page deadletter.Result) error {
			return api.rt.record(ctx, tx, r, requeueDetail(body, page))
		}})
	var notDead *deadletter.NotDeadError
	var noConfig *deadletter.NoConfigError
	switch {
	case errors.Is(err, deadletter.ErrInvalid):
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid requeue", Detail: err.Error(), Errors: deadLetterFields(err)})
	case errors.As(err, &notDead):
		errs := make([]field.Error, 0, len(notDead.Why))
		for id, why := range notDead.Why {
			errs = append(errs, field.Error{Field: "ids", Detail: id + ": " + why})
		}
		slices.SortFunc(errs, func(a, b field.Error) int { return strings.Compare(a.Detail, b.Detail) })
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Not dead letters", Detail: "nothing was requeued: " + notDead.Error(), Errors: errs})
	case errors.As(err, &noConfig):
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "No rate-limit config", Detail: noConfig.Error(),
			Errors: []field.Error{{Field: "rateLimitConfig", Detail: noConfig.Detail}}})
	case err != nil: // a filter's requeue that stopped part-way: each page that moved is recorded
		api.rt.log.Error("requeueing dead letters failed", "error", err, "requeued", res.Requeued)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable,
			Detail: "the requeue stopped part-way (" + strconv.Itoa(res.Requeued) + " requeued); the rest are still dead letters: retry"})
	default:
		WriteJSON(w, http.StatusOK, res)
	}
}
