package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/webhook"
)

// newWebhook is POST /admin/webhooks's body.
type newWebhook struct {
	TenantID    string   `json:"tenantId"`
	URL         string   `json:"url"`
	EventTypes  []string `json:"eventTypes"`
	Description string   `json:"description"`
}

// webhookWithSecret is an endpoint as made or rotated: with its secret,
// shown this once.
type webhookWithSecret struct {
	webhook.Endpoint
	Secret string `json:"secret"`
}

// Webhooks is what the webhook routes need (webhook.Store). The Tx
// methods change endpoints in the transaction of the change and its audit
// entry (see auditAPI).
type Webhooks interface {
	CheckURL(raw string) error
	RegisterTx(ctx context.Context, tx pgx.Tx, n webhook.NewEndpoint) (webhook.Endpoint, string, error)
	Get(ctx context.Context, id uuid.UUID) (webhook.Endpoint, error)
	List(ctx context.Context, tenant string, after *webhook.ListAfter, limit int) ([]webhook.Endpoint, error)
	DeleteTx(ctx context.Context, tx pgx.Tx, id uuid.UUID) error
	RotateTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, keepOld time.Duration) (webhook.Endpoint, string, error)
	Deliveries(ctx context.Context, endpoint uuid.UUID, state string, before int64, limit int) ([]webhook.Delivery, error)
	RedriveTx(ctx context.Context, tx pgx.Tx, endpoint uuid.UUID, ids []int64) (int64, error)
}

// maxKeepOld bounds how long a rotated secret keeps signing.
const maxKeepOld = 7 * 24 * time.Hour

// webhooksAPI serves the webhook endpoints: register, list, get, delete,
// rotate the secret, list deliveries and redrive dead letters. A tenant's
// token (webhooks:write) manages its own endpoints; admin any tenant's.
// eventTypes are those an endpoint may ask for.
type webhooksAPI struct {
	rt         *Router
	hooks      Webhooks
	eventTypes []string
}

func (api *webhooksAPI) notFound(w http.ResponseWriter, r *http.Request, id string) {
	WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no webhook endpoint " + plaintext.Clip(id, 64)})
}

func (api *webhooksAPI) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	api.rt.log.Error("webhooks: "+what+" failed", "error", err)
	WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "webhooks cannot be " + what + " now; retry"})
}

// endpoint finds the route's endpoint if the caller may see it.
func (api *webhooksAPI) endpoint(w http.ResponseWriter, r *http.Request) (webhook.Endpoint, bool) {
	id := r.PathValue("id")
	uid, err := uuid.Parse(id)
	if err != nil {
		api.notFound(w, r, id)
		return webhook.Endpoint{}, false
	}
	ep, err := api.hooks.Get(r.Context(), uid)
	if err == nil && !tenantAllowed(r, ep.TenantID) {
		err = webhook.ErrNotFound // another tenant's endpoint does not exist for this caller
	}
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		api.notFound(w, r, id)
	case err != nil:
		api.unavailable(w, r, "read", err)
	default:
		return ep, true
	}
	return webhook.Endpoint{}, false
}

// invalidWebhook is a registration's refusal as field errors.
func invalidWebhook(err error) []field.Error {
	if bad := invalidFields(err); bad != nil {
		return bad
	}
	return []field.Error{{Field: "url", Detail: err.Error()}}
}

// endpointPosition is an endpoint's place in the list: its creation time
// and id.
func endpointPosition(c string) bool { return parseEndpointPosition(c) != nil }

func parseEndpointPosition(c string) *webhook.ListAfter {
	ts, id, ok := strings.Cut(c, " ")
	t, err1 := time.Parse(time.RFC3339Nano, ts)
	u, err2 := uuid.Parse(id)
	if !ok || err1 != nil || err2 != nil {
		return nil
	}
	return &webhook.ListAfter{CreatedAt: t, ID: u}
}

// register serves POST /admin/webhooks.
func (api *webhooksAPI) register(w http.ResponseWriter, r *http.Request) {
	var body newWebhook
	if !decodeBody(w, r, &body) {
		return
	}
	if prob := claimTenant(r, &body.TenantID); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	var errs []field.Error
	if !field.ValidID(body.TenantID) {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "required, the tenant whose payments' events go there: " + field.IDRule})
	}
	for i, t := range body.EventTypes {
		if !slices.Contains(api.eventTypes, t) {
			errs = append(errs, field.Error{Field: fmt.Sprintf("eventTypes[%d]", i), Detail: "one of " + strings.Join(api.eventTypes, ", ") + "; none: every type"})
		}
	}
	if len(body.EventTypes) > len(api.eventTypes) {
		errs = append(errs, field.Error{Field: "eventTypes", Detail: "at most one of each type"})
	}
	if err := api.hooks.CheckURL(body.URL); err != nil {
		errs = append(errs, invalidWebhook(err)...)
	}
	if len(body.Description) > 500 {
		errs = append(errs, field.Error{Field: "description", Detail: "at most 500 characters"})
	}
	if len(errs) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid webhook endpoint", Detail: "the endpoint has invalid fields", Errors: errs})
		return
	}
	slices.Sort(body.EventTypes)
	ep, secret, err := api.hooks.RegisterTx(r.Context(), changeTx(r), webhook.NewEndpoint{TenantID: body.TenantID, URL: body.URL,
		EventTypes: slices.Compact(body.EventTypes), Description: body.Description})
	var bad *field.Invalid
	switch {
	case errors.As(err, &bad):
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid webhook endpoint", Detail: bad.Error(), Errors: bad.Fields})
	case err != nil:
		api.unavailable(w, r, "registered", err)
	default:
		w.Header().Set("Location", "/admin/webhooks/"+ep.ID.String())
		WriteJSON(w, http.StatusCreated, webhookWithSecret{Endpoint: ep, Secret: secret})
	}
}

// list serves GET /admin/webhooks.
func (api *webhooksAPI) list(w http.ResponseWriter, r *http.Request) {
	tenant := lookupTenant(r)
	p, prob := readPage(r, endpointPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	var after *webhook.ListAfter
	if p.started {
		after = parseEndpointPosition(p.after)
	}
	eps, err := api.hooks.List(r.Context(), tenant, after, p.limit+1)
	if err != nil {
		api.unavailable(w, r, "listed", err)
		return
	}
	next := ""
	if eps == nil {
		eps = []webhook.Endpoint{}
	}
	if len(eps) > p.limit {
		eps = eps[:p.limit]
		last := eps[len(eps)-1]
		next = p.cursor(last.CreatedAt.UTC().Format(time.RFC3339Nano) + " " + last.ID.String())
	}
	WriteJSON(w, http.StatusOK, listJSON("webhooks", eps, next))
}

// get serves GET /admin/webhooks/{id}.
func (api *webhooksAPI) get(w http.ResponseWriter, r *http.Request) {
	if ep, ok := api.endpoint(w, r); ok {
		WriteJSON(w, http.StatusOK, ep)
	}
}

// delete serves DELETE /admin/webhooks/{id}.
func (api *webhooksAPI) delete(w http.ResponseWriter, r *http.Request) {
	ep, ok := api.endpoint(w, r)
	if !ok {
		return
	}
	switch err := api.hooks.DeleteTx(r.Context(), changeTx(r), ep.ID); {
	case errors.Is(err, webhook.ErrNotFound):
		api.notFound(w, r, ep.ID.String())
	case err != nil:
		api.unavailable(w, r, "deleted", err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// rotateSecret serves POST /admin/webhooks/{id}/rotate-secret.
func (api *webhooksAPI) rotateSecret(w http.ResponseWriter, r *http.Request) {
	var body struct {
		// KeepPreviousSeconds is how long the old secret keeps
		// signing beside the new one (default a day).
		KeepPreviousSeconds *int64 `json:"keepPreviousSeconds"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	keep := 24 * time.Hour
	if body.KeepPreviousSeconds != nil {
		if *body.KeepPreviousSeconds < 0 || *body.KeepPreviousSeconds > int64(maxKeepOld/time.Second) {
			WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid rotation", Detail: "keepPreviousSeconds is out of range",
				Errors: []field.Error{{Field: "keepPreviousSeconds", Detail: "from 0 (the old secret stops at once) to 604800 (a week)"}}})
			return
		}
		keep = time.Duration(*body.KeepPreviousSeconds) * time.Second
	}
	ep, ok := api.endpoint(w, r)
	if !ok {
		return
	}
	ep, secret, err := api.hooks.RotateTx(r.Context(), changeTx(r), ep.ID, keep)
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		api.notFound(w, r, r.PathValue("id"))
	case err != nil:
		api.unavailable(w, r, "rotated", err)
	default:
		WriteJSON(w, http.StatusOK, webhookWithSecret{Endpoint: ep, Secret: secret})
	}
}

// deliveries serves GET /admin/webhooks/{id}/deliveries.
func (api *webhooksAPI) deliveries(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	if state != "" && !slices.Contains(webhook.States, state) {
		WriteProblem(w, r, Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "fix the query parameters",
			Errors: []field.Error{{Field: "state", Detail: "one of " + strings.Join(webhook.States, ", ") + "; none: every state"}}})
		return
	}
	p, prob := readPage(r, seqPosition)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	ep, ok := api.endpoint(w, r)
	if !ok {
		return
	}
	before, _ := strconv.ParseInt(p.after, 10, 64)
	ds, err := api.hooks.Deliveries(r.Context(), ep.ID, state, before, p.limit+1)
	if err != nil {
		api.unavailable(w, r, "listed", err)
		return
	}
	next := ""
	if ds == nil {
		ds = []webhook.Delivery{}
	}
	if len(ds) > p.limit {
		ds = ds[:p.limit]
		next = p.cursor(strconv.FormatInt(ds[len(ds)-1].ID, 10))
	}
	WriteJSON(w, http.StatusOK, listJSON("deliveries", ds, next))
}

// redrive serves POST /admin/webhooks/{id}/redrive.
func (api *webhooksAPI) redrive(w http.ResponseWriter, r *http.Request) {
	var body struct {
		// DeliveryIDs are the dead letters to send again; none: all
		// of the endpoint's.
		DeliveryIDs []int64 `json:"deliveryIds"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if len(body.DeliveryIDs) > maxPage {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid redrive", Detail: "too many deliveries",
			Errors: []field.Error{{Field: "deliveryIds", Detail: fmt.Sprintf("at most %d; none redrives every dead letter of the endpoint", maxPage)}}})
		return
	}
	ep, ok := api.endpoint(w, r)
	if !ok {
		return
	}
	n, err := api.hooks.RedriveTx(r.Context(), changeTx(r), ep.ID, body.DeliveryIDs)
	if err != nil {
		api.unavailable(w, r, "redriven", err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"requeued": n})
}
