package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/pacing"
	"github.com/paydispatch/paydispatch/payment"
)

// Levers move the payments already waiting when an operator pulls a
// lever (payment.Service). Each change calls record in the transaction
// that makes it (the audit entry).
type Levers interface {
	// RepaceConfig moves the payments waiting under a rate-limit config
	// to its limit as it is now.
	RepaceConfig(ctx context.Context, config string, record payment.Record) (payment.Repaced, error)
	// Pause holds a tenant's, a file's or a rail's waiting payments
	// (payment.ErrNotFound: no such file); Resume paces them again from
	// now (payment.ErrNotFound: the scope is not paused); Pauses lists
	// the scopes paused.
	Pause(ctx context.Context, scope payment.PauseScope, record payment.Record) (payment.Paused, error)
	Resume(ctx context.Context, scope payment.PauseScope, record payment.Record) (payment.Repaced, error)
	Pauses(ctx context.Context) ([]payment.Pause, error)
	// SetPriority changes a waiting payment's priority
	// (payment.ErrNotWaiting once its execution began or it ended);
	// SetBatchPriority a file's waiting payments', of one tenant or
	// (empty) all.
	SetPriority(ctx context.Context, tenantID, paymentID string, p payment.Priority, record payment.Record) (payment.Reprioritized, error)
	SetBatchPriority(ctx context.Context, batchID, tenantID string, p payment.Priority, record payment.Record) (payment.Reprioritized, error)
	// Batch is a file's progress: whose payments it holds, so that a
	// tenant acts on its own files only.
	Batch(ctx context.Context, id string) (payment.BatchView, error)
}

// leversAPI serves the operator's and the tenants' levers on what waits:
// a change of a rate-limit config moves the payments waiting under it
// (the change's answer gains "repaced"), and repace makes the same move
// again, on its own (after a move that failed, or a config changed by
// another process); the pauses pause and resume a tenant, a file or a
// rail; the priorities change what still waits (a tenant's own; an
// operator's token: any tenant's, as a cancel does). Each change is
// audited in its own transaction.
type leversAPI struct {
	rt     *Router
	levers Levers
}

// repace moves what waits under a changed config, after the change has
// committed; it answers the move, or nil when there are no levers or the
// move failed (logged: the config changed, and the limiter holds each
// execution to it; a repace call moves them later).
func (rt *Router) repace(r *http.Request, config string) *payment.Repaced {
	if rt.levers == nil {
		return nil
	}
	res, err := rt.levers.RepaceConfig(r.Context(), config, rt.recordCancel(r, map[string]any{"repaced": config}))
	if err != nil {
		rt.log.Error("moving the payments waiting under a changed rate-limit config failed; POST /admin/rate-limit/config/{name}/repace moves them",
			"config", config, "error", err)
		return nil
	}
	return &res
}

// recordCount is a lever's payment.Record: an entry in the transaction
// that made the change, with what was asked (detail) and how many
// payments it changed, under key.
func (rt *Router) recordCount(r *http.Request, detail map[string]any, key string) payment.Record {
	return func(ctx context.Context, tx pgx.Tx, n int) error {
		d := maps.Clone(detail)
		d[key] = n
		return rt.record(ctx, tx, r, d)
	}
}

// pauseAnswer is POST /admin/pauses' answer: what the pause holds, and
// the pause (absent only when it was resumed before it could be read).
type pauseAnswer struct {
	payment.Paused
	Pause *payment.Pause `json:"pause,omitempty"`
}

// invalidScope names what is wrong with a pause's scope (nil: nothing),
// as a problem of status.
func invalidScope(scope payment.PauseScope, status int, title string) *Problem {
	bad := invalidFields(scope.Validate())
	if bad == nil {
		return nil
	}
	return &Problem{Status: status, Title: title, Detail: "scope is TENANT, BATCH or RAIL, and id names the tenant, the file (batch id) or the rail; nothing was changed",
		Errors: bad}
}

// leverFailed is the answer to a lever's failure (nil: none).
func (rt *Router) leverFailed(r *http.Request, err error, doing string, scope payment.PauseScope) *Problem {
	switch bad := invalidFields(err); {
	case err == nil:
		return nil
	case bad != nil:
		return &Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid pause", Detail: "nothing was changed", Errors: bad}
	case errors.Is(err, payment.ErrNotFound):
		return &Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(scope.ID, 64)}
	case errors.Is(err, payment.ErrNoRails):
		return &Problem{Status: http.StatusServiceUnavailable, Detail: "this server has no rails to pace the payments on"}
	}
	rt.log.Error(doing+" failed", "scope", scope.Kind, "id", scope.ID, "error", err)
	return &Problem{Status: http.StatusServiceUnavailable, Detail: doing + " " + scope.Kind + " " + plaintext.Clip(scope.ID, 64) + " failed; nothing was changed: retry"}
}

// priorityBody is the body of a change of priority.
type priorityBody struct {
	Priority payment.Priority `json:"priority"`
}

// check names what is wrong with the body.
func (b priorityBody) check() *Problem {
	if b.Priority.Valid() {
		return nil
	}
	return &Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid priority", Detail: "nothing was changed",
		Errors: []field.Error{{Field: "priority", Detail: "HIGH, NORMAL or LOW"}}}
}

// paymentReprioritized and batchReprioritized are the answers to a change
// of priority: what was asked, and what it changed.
type paymentReprioritized struct {
	PaymentID string           `json:"paymentId"`
	TenantID  string           `json:"tenantId"`
	Priority  payment.Priority `json:"priority"`
	payment.Reprioritized
}

type batchReprioritized struct {
	BatchID  string           `json:"batchId"`
	Priority payment.Priority `json:"priority"`
	payment.Reprioritized
}

// priorityFailed is the answer to a change of priority's other failures
// (nil: none).
func (rt *Router) priorityFailed(err error) *Problem {
	switch bad := invalidFields(err); {
	case err == nil:
		return nil
	case bad != nil:
		return &Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid priority", Detail: "nothing was changed", Errors: bad}
	}
	rt.log.Error("changing a priority failed", "error", err)
	return &Problem{Status: http.StatusServiceUnavailable,
		Detail: "the priority cannot be changed now, or it changed but the waiting payments could not be put in their new order; retry"}
}

// repace serves POST /admin/rate-limit/config/{name}/repace: the payments
// waiting under the config moved to its limit as it is now.
func (api *leversAPI) repace(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	res, err := api.levers.RepaceConfig(r.Context(), name, api.rt.recordCancel(r, map[string]any{"repaced": name}))
	switch {
	case errors.Is(err, pacing.ErrConfigNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no rate-limit config " + plaintext.Clip(name, 100)})
	case err != nil:
		api.rt.log.Error("moving the waiting payments failed", "config", name, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the waiting payments cannot be moved now; retry: what moved stays so"})
	default:
		WriteJSON(w, http.StatusOK, res)
	}
}

// pause serves POST /admin/pauses.
func (api *leversAPI) pause(w http.ResponseWriter, r *http.Request) {
	var scope payment.PauseScope
	if !decodeBody(w, r, &scope) {
		return
	}
	if prob := invalidScope(scope, http.StatusUnprocessableEntity, "Invalid pause"); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	res, err := api.levers.Pause(r.Context(), scope, api.rt.recordCount(r, map[string]any{"pause": scope}, "payments"))
	if prob := api.rt.leverFailed(r, err, "pausing", scope); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	out := pauseAnswer{Paused: res}
	// The pause's own time: the first pause of the scope's, when it
	// was paused already.
	if ps, err := api.levers.Pauses(r.Context()); err == nil {
		for i := range ps {
			if ps[i].PauseScope == scope {
				out.Pause = &ps[i]
			}
		}
	}
	WriteJSON(w, http.StatusCreated, out)
}

// listPauses serves GET /admin/pauses.
func (api *leversAPI) listPauses(w http.ResponseWriter, r *http.Request) {
	ps, err := api.levers.Pauses(r.Context())
	if err != nil {
		api.rt.log.Error("listing the pauses failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the pauses cannot be read now; retry"})
		return
	}
	if ps == nil {
		ps = []payment.Pause{}
	}
	WriteJSON(w, http.StatusOK, listJSON("pauses", ps, ""))
}

// resume serves DELETE /admin/pauses/{scope}/{id}: the scope paced again
// from now.
func (api *leversAPI) resume(w http.ResponseWriter, r *http.Request) {
	scope := payment.PauseScope{Kind: r.PathValue("scope"), ID: r.PathValue("id")}
	if prob := invalidScope(scope, http.StatusBadRequest, "Invalid path"); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	res, err := api.levers.Resume(r.Context(), scope, api.rt.recordCount(r, map[string]any{"resume": scope}, "moved"))
	if errors.Is(err, payment.ErrNotFound) {
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: fmt.Sprintf("%s %s is not paused", scope.Kind, plaintext.Clip(scope.ID, 100))})
		return
	}
	if prob := api.rt.leverFailed(r, err, "resuming", scope); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

// readPriority reads and checks a change of priority's body; a bad one
// is answered and ok is false.
func readPriority(w http.ResponseWriter, r *http.Request) (body priorityBody, ok bool) {
	if !decodeBody(w, r, &body) {
		return body, false
	}
	if prob := body.check(); prob != nil {
		WriteProblem(w, r, *prob)
		return body, false
	}
	return body, true
}

// setPriority serves POST /v1/payments/{id}/priority: a tenant's change of
// the priority of its payment still waiting.
func (api *leversAPI) setPriority(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ok := readPriority(w, r)
	if !ok {
		return
	}
	tenant := lookupTenant(r)
	if tenant == "" {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Tenant required",
			Detail: "a change of priority names the payment's tenant", Errors: []field.Error{{Field: "tenantId", Detail: "required: add ?tenantId= to name the payment's tenant"}}})
		return
	}
	res, err := api.levers.SetPriority(r.Context(), tenant, id, body.Priority,
		api.rt.recordCount(r, map[string]any{"payment": id, "tenantId": tenant, "priority": body.Priority}, "changed"))
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment " + plaintext.Clip(id, 64)})
	case errors.Is(err, payment.ErrNotWaiting):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Payment not waiting",
			Detail: "payment " + plaintext.Clip(id, 64) + " no longer waits (its execution began, or it ended): its priority no longer counts; nothing was changed"})
	default:
		if prob := api.rt.priorityFailed(err); prob != nil {
			WriteProblem(w, r, *prob)
			return
		}
		WriteJSON(w, http.StatusOK, paymentReprioritized{PaymentID: id, TenantID: tenant, Priority: body.Priority, Reprioritized: res})
	}
}

// setBatchPriority serves POST /v1/payment-batches/{id}/priority.
func (api *leversAPI) setBatchPriority(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ok := readPriority(w, r)
	if !ok {
		return
	}
	v, err := api.levers.Batch(r.Context(), id)
	if err == nil && !tenantsAllowed(r, v.Tenants) {
		err = payment.ErrNotFound // a file with another tenant's payments does not exist for this caller
	}
	var res payment.Reprioritized
	tenant := lookupTenant(r)
	if err == nil {
		res, err = api.levers.SetBatchPriority(r.Context(), id, tenant, body.Priority,
			api.rt.recordCount(r, map[string]any{"batch": id, "tenantId": tenant, "priority": body.Priority}, "changed"))
	}
	if errors.Is(err, payment.ErrNotFound) {
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(id, 64)})
		return
	}
	if prob := api.rt.priorityFailed(err); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	WriteJSON(w, http.StatusOK, batchReprioritized{BatchID: id, Priority: body.Priority, Reprioritized: res})
}
