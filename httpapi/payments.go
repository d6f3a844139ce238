package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/bulkfile"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/internal/strictjson"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/routing"
)

// Payments is what the payment endpoints need.
type Payments interface {
	// Take is the payments' intake (payment.Service.Take), for a single
	// payment and a file alike: what started, the rejections (id
	// conflicts among them), the projection.
	Take(ctx context.Context, in payment.Intake) (payment.Taken, error)
	// Status finds the tenant's payment with the id it chose; an empty
	// tenant looks in every tenant (payment.ErrAmbiguous when several
	// have it).
	Status(ctx context.Context, tenantID, id string) (payment.View, error)
	RecordRejections(ctx context.Context, batchID string, rejections []payment.LineError) error
	Batch(ctx context.Context, id string) (payment.BatchView, error)
	BatchRejections(ctx context.Context, id string) ([]payment.LineError, []string, error)
	// Cancel cancels the tenant's payment if its execution has not begun
	// (payment.ErrNotCancellable names where it is); CancelBatch every
	// payment of a file that has not begun, of one tenant or (empty) all.
	// Each calls record in every transaction that cancels payments (the
	// audit entry; see auditAPI).
	Cancel(ctx context.Context, tenantID, id string, record payment.Record) (status payment.Status, cancelledNow bool, err error)
	CancelBatch(ctx context.Context, batchID, tenantID string, record payment.Record) (payment.Cancelled, error)
	// CancelWhere cancels an operator's selection (a tenant's, a file's);
	// with dryRun it only counts.
	CancelWhere(ctx context.Context, f payment.CancelFilter, dryRun bool, record payment.Record) (payment.Cancelled, error)
	// List is a page of a tenant's payments, newest first, after a
	// position a page gave ("" for the first).
	List(ctx context.Context, f payment.ListFilter, after string, limit int) (payment.ListPage, error)
}

// The default body limits: a single request (a payment, an account) and
// a bulk file (about 500,000 payments); RouterConfig's MaxBody and
// MaxBulkBody change them.
const (
	defaultMaxBody      = 64 << 10
	defaultMaxBatchBody = 512 << 20
)

// paymentsAPI serves a tenant's payments: one, a file of them, their
// views and cancels, and an operator's cancel and release. Its Payments
// may also be StatusReports and HeldPayments, which add their routes.
type paymentsAPI struct {
	rt       *Router
	payments Payments
	reports  StatusReports // nil: no status report route
	held     HeldPayments  // nil: no release route
}

func newPaymentsAPI(rt *Router, p Payments) *paymentsAPI {
	api := &paymentsAPI{rt: rt, payments: p}
	api.reports, _ = p.(StatusReports)
	api.held, _ = p.(HeldPayments)
	return api
}

// paymentWithLinks is a payment as GET /v1/payments/{id} shows it.
type paymentWithLinks struct {
	payment.View
	Links *paymentLinks `json:"links,omitempty"`
}

type paymentLinks struct {
	// TemporalUI is the page of the payment's execution in Temporal's
	// Web UI.
	TemporalUI string `json:"temporalUI"`
}

// withLinks adds the links the payment has: its execution's page in
// Temporal's Web UI once it has an execution (executionRef,
// "<workflow id>/<run id>") and the UI is known.
func (rt *Router) withLinks(v payment.View) paymentWithLinks {
	out := paymentWithLinks{View: v}
	i := strings.LastIndexByte(v.ExecutionRef, '/')
	if rt.executionPage != nil && i > 0 && i < len(v.ExecutionRef)-1 {
		out.Links = &paymentLinks{TemporalUI: rt.executionPage(v.ExecutionRef[:i], v.ExecutionRef[i+1:])}
	}
	return out
}

// cancelFilter is the body of POST /admin/payments/cancel.
type cancelFilter struct {
	TenantID      string     `json:"tenantId"`
	BatchID       string     `json:"batchId"`
	Statuses      []string   `json:"statuses"`
	RequestedFrom *time.Time `json:"requestedFrom"`
	RequestedTo   *time.Time `json:"requestedTo"`
	DryRun        bool       `json:"dryRun"`
}

// cancellable are the statuses a filter may name: those a payment waits
// in, HELD (at its rail's cut-off) among them.
var cancellable = []payment.Status{payment.StatusReceived, payment.StatusScheduled, payment.StatusHeld, payment.StatusAwaitingApproval}

// check turns the body into the filter, or names what is wrong.
func (c cancelFilter) check() (payment.CancelFilter, []field.Error) {
	f := payment.CancelFilter{TenantID: c.TenantID, BatchID: c.BatchID}
	var errs []field.Error
	if c.TenantID == "" && c.BatchID == "" {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "name a tenant, a file (batchId), or both: a cancel never spans every tenant"})
	}
	for i, st := range c.Statuses {
		if !slices.Contains(cancellable, payment.Status(st)) {
			errs = append(errs, field.Error{Field: fmt.Sprintf("statuses[%d]", i), Detail: "one of RECEIVED, SCHEDULED, HELD, AWAITING_APPROVAL: a payment is cancelled only while it waits"})
			continue
		}
		f.Statuses = append(f.Statuses, payment.Status(st))
	}
	if c.RequestedFrom != nil {
		f.RequestedFrom = *c.RequestedFrom
	}
	if c.RequestedTo != nil {
		f.RequestedTo = *c.RequestedTo
	}
	if c.RequestedFrom != nil && c.RequestedTo != nil && !c.RequestedFrom.Before(*c.RequestedTo) {
		errs = append(errs, field.Error{Field: "requestedTo", Detail: "must be after requestedFrom"})
	}
	return f, errs
}

// whyNotCancelled is the reason in a cancel's refusal.
func whyNotCancelled(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ", "); i >= 0 {
		msg = msg[i+2:]
	}
	return strings.TrimSuffix(msg, ": "+payment.ErrNotCancellable.Error())
}

// lineCursor is a rejection's place: ten digits.
func lineCursor(c string) bool {
	return len(c) == 10 && strings.Trim(c, "0123456789") == ""
}

// decodeBatch reads a bulk file in the format its Content-Type names:
// JSON lines, CSV or pain.001 (the router has refused any other type, a
// compressed body and a declared length over the limit). Payments
// without a tenantId take the tenantId query parameter (a tenant's token
// fills in its own later).
func decodeBatch(w http.ResponseWriter, r *http.Request) ([]payment.Request, []int, []payment.LineError, int, *payment.Pain001Origin, *Problem) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var (
		f    bulkfile.File
		err  error
		lim  = limitsOf(r)
		body = http.MaxBytesReader(w, r.Body, lim.bulk)
	)
	switch ct {
	case "application/x-ndjson", "application/jsonl":
		f, err = bulkfile.DecodeJSONLines(r.Context(), body, int(lim.single))
	case "text/csv":
		f, err = bulkfile.DecodeCSV(r.Context(), body)
	case "application/xml", "text/xml", "application/iso20022+xml":
		f, err = bulkfile.DecodePain001(r.Context(), body)
	default:
		return nil, nil, nil, 0, nil, &Problem{Status: http.StatusUnsupportedMediaType, Title: "Unsupported media type", Detail: bulkFileBody.want()}
	}
	var tooBig *http.MaxBytesError
	var bad *bulkfile.FormatError
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return nil, nil, nil, 0, nil, ptr(stopped())
	case errors.As(err, &tooBig):
		return nil, nil, nil, 0, nil, tooLarge(lim.bulk, ": split the file")
	case errors.As(err, &bad):
		title := "Unreadable file"
		if strings.Contains(bad.Detail, "not a pain.001") || strings.Contains(bad.Detail, "not a supported pain.001 version") {
			title = "Not a pain.001 file" // another message, or a namespace not taken
		}
		return nil, nil, nil, 0, nil, &Problem{Status: http.StatusBadRequest, Title: title, Detail: bad.Error() + "; nothing was started",
			Errors: []field.Error{{Field: bad.Where, Detail: bad.Detail}}}
	case err != nil:
		return nil, nil, nil, 0, nil, &Problem{Status: http.StatusBadRequest, Title: "Unreadable body", Detail: "the body could not be read to its end"}
	}
	if tenant := r.URL.Query().Get("tenantId"); tenant != "" {
		for i := range f.Requests {
			if f.Requests[i].TenantID == "" {
				f.Requests[i].TenantID = tenant
			}
		}
	}
	return f.Requests, f.Places, f.Bad, f.Declared, f.Pain001, nil
}

// stopped is the answer to a request whose work stopped before it was
// done: its client went away (nobody reads it) or the server is stopping.
// Nothing of it was stored.
func stopped() Problem {
	return Problem{Status: http.StatusServiceUnavailable, Title: "Stopped",
		Detail: "the request was stopped before it was done (the server is stopping); nothing was stored: send it again"}
}

func ptr[T any](v T) *T { return &v }

// decodeBody reads r's body, one JSON value, into v, up to its route's
// limit (the router has refused a body that is not JSON, is compressed,
// or declares a length over the limit). On failure it writes the problem
// (malformed JSON, a value of the wrong type, an unknown field, an
// oversized body, saying where it went wrong) and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if prob := decodeJSON(w, r, v, routeLimitOf(r)); prob != nil {
		WriteProblem(w, r, *prob)
		return false
	}
	return true
}

// decodeJSON decodes a JSON body of up to limit bytes into v.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) *Problem {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooLarge(limit, "")
	}
	if err != nil {
		return &Problem{Status: http.StatusBadRequest, Title: "Unreadable body", Detail: "the body could not be read to its end"}
	}
	var se *strictjson.Error
	if err := strictjson.Decode(body, v); errors.As(err, &se) {
		p := &Problem{Status: http.StatusBadRequest, Title: "Malformed JSON", Detail: se.Error()}
		if se.Field != "" {
			p.Errors = []field.Error{{Field: se.Field, Detail: se.Detail}}
		}
		return p
	} else if err != nil {
		return &Problem{Status: http.StatusBadRequest, Title: "Malformed JSON", Detail: "the body could not be decoded"}
	}
	return nil
}

// batchAccepted is a bulk file's answer: what was started, and the
// payments refused (their line, or transaction number, and why; the first
// 1,000).
type batchAccepted struct {
	payment.BatchSubmission
	// Declared is how many payments the file holds (pain.001: its
	// transactions; CSV: its data rows; JSON lines: its non-blank lines):
	// payments + rejected.
	Declared   int                 `json:"declared"`
	Rejected   int                 `json:"rejected"`
	Rejections []payment.LineError `json:"rejections,omitempty"`
	// Projection is where the started payments are projected to go, per
	// rail, from the rails' pacing windows as they stood before the
	// file's Phase A (none: no projection could be made).
	Projection []payment.RailProjection `json:"projection,omitempty"`
	// Duplicates are the started payments that look like an earlier
	// payment of their tenant, and what Phase A will do with each (the
	// first 1,000); SuspectedDuplicates counts them all.
	Duplicates          []payment.SuspectedDuplicate `json:"duplicates,omitempty"`
	SuspectedDuplicates int                          `json:"suspectedDuplicates,omitempty"`
}

// paymentAccepted is a single payment's 202, with where it is projected
// to go on its rail.
type paymentAccepted struct {
	PaymentID  string                   `json:"paymentId"`
	Status     payment.Status           `json:"status"`
	StatusURL  string                   `json:"statusUrl"`
	Projection []payment.RailProjection `json:"projection,omitempty"`
	// DuplicateOf is the tenant's id of the earlier payment it looks
	// like, and DuplicateAction what Phase A will do with it.
	DuplicateOf     string                  `json:"duplicateOf,omitempty"`
	DuplicateAction payment.DuplicateAction `json:"duplicateAction,omitempty"`
}

// atomicParam reads ?atomic=true|false: true refuses the whole file when
// any payment in it is bad (nothing starts); false (the default) starts
// the good ones and lists the bad.
func atomicParam(r *http.Request) (bool, *Problem) {
	switch v := r.URL.Query().Get("atomic"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "atomic: want true or false",
			Errors: []field.Error{{Field: "atomic", Detail: "true or false"}}}
	}
}

// allowDuplicateParam reads ?allowDuplicate=true|false: true takes a
// file that holds the same payments as one its tenant sent within the
// duplicate window (the override is audited); false (the default)
// refuses it, 409.
func allowDuplicateParam(r *http.Request) (bool, *Problem) {
	switch v := r.URL.Query().Get("allowDuplicate"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "allowDuplicate: want true or false; nothing was started",
			Errors: []field.Error{{Field: "allowDuplicate", Detail: "true or false"}}}
	}
}

// priorityParam reads ?priority=HIGH|NORMAL|LOW: the priority of a
// file's payments that name none ("" when absent: NORMAL).
func priorityParam(r *http.Request) (payment.Priority, *Problem) {
	p := payment.Priority(r.URL.Query().Get("priority"))
	if p != "" && !p.Valid() {
		return "", &Problem{Status: http.StatusBadRequest, Title: "Invalid query", Detail: "priority: want HIGH, NORMAL or LOW; nothing was started",
			Errors: []field.Error{{Field: "priority", Detail: "HIGH, NORMAL or LOW"}}}
	}
	return p, nil
}

// create serves POST /v1/payments.
func (api *paymentsAPI) create(w http.ResponseWriter, r *http.Request) {
	var req payment.Request
	if !decodeBody(w, r, &req) {
		return
	}
	if prob := claimTenant(r, &req.TenantID); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	taken, err := api.payments.Take(r.Context(), payment.Intake{Source: routing.SourceAPI, Requests: []payment.Request{req}, Project: true})
	switch {
	case err != nil:
		api.rt.log.Error("payment submission failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the payment could not be accepted now; retry with the same paymentId"})
	case len(taken.Rejections) > 0 && taken.Rejections[0].Conflict:
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Payment id already used",
			Detail: "tenant " + req.TenantID + " already has a different payment " + req.PaymentID + "; use a new id",
			Errors: taken.Rejections[0].Fields})
	case len(taken.Rejections) > 0:
		WriteProblem(w, r, fieldProblem("Invalid payment", taken.Rejections[0].Fields))
	default:
		id := taken.Started[0].PaymentID
		w.Header().Set("Location", "/v1/payments/"+id)
		out := paymentAccepted{PaymentID: id, Status: payment.StatusReceived, StatusURL: "/v1/payments/" + id, Projection: taken.Projection}
		if len(taken.Duplicates) > 0 {
			out.DuplicateOf, out.DuplicateAction = taken.Duplicates[0].Like, taken.Duplicates[0].Action
		}
		WriteJSON(w, http.StatusAccepted, out)
	}
}

// createBatch serves POST /v1/payment-batches.
func (api *paymentsAPI) createBatch(w http.ResponseWriter, r *http.Request) {
	filePriority, prob := priorityParam(r)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	reqs, lines, unreadable, declared, origin, prob := decodeBatch(w, r)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	// The file's priority is each payment's that names none.
	for i := range reqs {
		if reqs[i].Priority == "" {
			reqs[i].Priority = filePriority
		}
	}
	atomic, prob := atomicParam(r)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	allowDuplicate, prob := allowDuplicateParam(r)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	if prob := claimTenants(r, reqs, lines); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	in := payment.Intake{Source: routing.SourceFile, Requests: reqs, Lines: lines, Rejected: unreadable, Whole: atomic, Project: true}
	if allowDuplicate {
		if api.rt.audit == nil {
			WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable,
				Detail: "this server keeps no audit log, so it takes no duplicate file (allowDuplicate), whose override an audit log records; nothing was started"})
			return
		}
		in.AllowDuplicate = true
		in.Override = func(ctx context.Context, tx pgx.Tx, dup payment.DuplicateFileError, n int) error {
			return api.rt.record(ctx, tx, r, map[string]any{"allowDuplicate": true, "tenantId": dup.TenantID,
				"duplicateOf": dup.BatchID, "duplicateReceivedAt": dup.ReceivedAt.UTC(), "payments": n})
		}
	}
	taken, err := api.payments.Take(r.Context(), in)
	lineErrs, sub := taken.Rejections, taken.BatchSubmission
	var dup *payment.DuplicateFileError
	switch {
	case errors.As(err, &dup):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Duplicate file",
			Detail: fmt.Sprintf("tenant %s sent the same payments as batch %s, received at %s; nothing was started: to take this file as well, send it with ?allowDuplicate=true",
				dup.TenantID, dup.BatchID, dup.ReceivedAt.UTC().Format(time.RFC3339))})
	case errors.Is(err, payment.ErrNotChecked):
		WriteProblem(w, r, stopped())
	case err == nil && len(lineErrs) > 0 && sub.Payments == 0:
		prob := Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid payments in the file",
			Detail: fmt.Sprintf("%d line(s) need fixing; nothing was started", len(lineErrs))}
		for i, le := range lineErrs {
			if i == 100 {
				prob.Detail += " (the first 100 are listed)"
				break
			}
			for _, f := range le.Fields {
				prob.Errors = append(prob.Errors, field.Error{Field: fmt.Sprintf("line %d: %s", le.Line, f.Field), Detail: f.Detail})
			}
		}
		WriteProblem(w, r, prob)
	case err != nil:
		api.rt.log.Error("batch submission failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the file could not be accepted now; resubmitting the same file is safe"})
	default:
		if len(lineErrs) > 0 {
			ownRejections(r, lineErrs, reqs, lines)
			if err := api.payments.RecordRejections(r.Context(), sub.BatchID, lineErrs); err != nil {
				api.rt.log.Error("recording a file's rejections failed", "batch", sub.BatchID, "error", err)
			}
		}
		api.rt.recordPain001(r, api.payments, sub.BatchID, origin, taken.Started, taken.Lines)
		if sub.Payments+len(lineErrs) != declared {
			api.rt.log.Error("a file's payments are not all accounted for", "batch", sub.BatchID,
				"declared", declared, "started", sub.Payments, "rejected", len(lineErrs))
		}
		w.Header().Set("Location", "/v1/payment-batches/"+sub.BatchID)
		out := batchAccepted{BatchSubmission: sub, Declared: declared, Rejected: len(lineErrs), Rejections: lineErrs, Projection: taken.Projection,
			Duplicates: taken.Duplicates, SuspectedDuplicates: len(taken.Duplicates)}
		if len(out.Rejections) > 1000 {
			out.Rejections = out.Rejections[:1000]
		}
		if len(out.Duplicates) > 1000 {
			out.Duplicates = out.Duplicates[:1000]
		}
		WriteJSON(w, http.StatusAccepted, out)
	}
}

// getBatch serves GET /v1/payment-batches/{id}.
func (api *paymentsAPI) getBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := api.payments.Batch(r.Context(), id)
	if err == nil && !tenantsAllowed(r, v.Tenants) {
		err = payment.ErrNotFound // a file with another tenant's payments does not exist for this caller
	}
	if err == nil && v.Rejected > 0 {
		v.Rejected, err = ownRejected(r, api.payments, id, v.Rejected)
	}
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(id, 64)})
	case err != nil:
		api.rt.log.Error("batch progress failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the batch cannot be read now; retry"})
	default:
		WriteJSON(w, http.StatusOK, v)
	}
}

// batchRejections serves GET /v1/payment-batches/{id}/rejections.
func (api *paymentsAPI) batchRejections(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	pg, prob := readPage(r, lineCursor)
	if prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	rejections, tenants, err := api.payments.BatchRejections(r.Context(), id)
	if err == nil && !tenantsAllowed(r, tenants) {
		err = payment.ErrNotFound
	}
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(id, 64)})
	case err != nil:
		api.rt.log.Error("batch rejections failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the batch cannot be read now; retry"})
	default:
		rejections, next := paginate(ownLines(r, rejections), func(le payment.LineError) string { return fmt.Sprintf("%010d", le.Line) }, pg)
		out := listJSON("rejections", rejections, next)
		out["batchId"] = id
		WriteJSON(w, http.StatusOK, out)
	}
}

// get serves GET /v1/payments/{id}.
func (api *paymentsAPI) get(w http.ResponseWriter, r *http.Request) {
	v, ok := findOwned(api.rt, w, r, "payment", api.payments.Status, func(v payment.View) string { return v.TenantID },
		payment.ErrNotFound, payment.ErrAmbiguous)
	if ok {
		WriteJSON(w, http.StatusOK, api.rt.withLinks(v))
	}
}

// cancel serves POST /v1/payments/{id}/cancel.
func (api *paymentsAPI) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	tenant := lookupTenant(r)
	if tenant == "" {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Tenant required",
			Detail: "a cancel names the payment's tenant", Errors: []field.Error{{Field: "tenantId", Detail: "required: add ?tenantId= to name the payment's tenant"}}})
		return
	}
	status, _, err := api.payments.Cancel(r.Context(), tenant, id, api.rt.recordCancel(r, map[string]any{"payment": id, "tenantId": tenant}))
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment " + plaintext.Clip(id, 64)})
	case errors.Is(err, payment.ErrNotCancellable):
		WriteProblem(w, r, Problem{Status: http.StatusConflict, Title: "Payment not cancellable",
			Detail: fmt.Sprintf("payment %s is %s: %s", plaintext.Clip(id, 64), status, whyNotCancelled(err))})
	case err != nil:
		api.rt.log.Error("payment cancel failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the payment cannot be cancelled now; retry"})
	default:
		WriteJSON(w, http.StatusOK, map[string]any{"paymentId": id, "tenantId": tenant, "status": status})
	}
}

// cancelBatch serves POST /v1/payment-batches/{id}/cancel.
func (api *paymentsAPI) cancelBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := api.payments.Batch(r.Context(), id)
	if err == nil && !tenantsAllowed(r, v.Tenants) {
		err = payment.ErrNotFound // a file with another tenant's payments does not exist for this caller
	}
	var res payment.Cancelled
	tenant := lookupTenant(r)
	if err == nil {
		res, err = api.payments.CancelBatch(r.Context(), id, tenant, api.rt.recordCancel(r, map[string]any{"batch": id, "tenantId": tenant}))
	}
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(id, 64)})
	case err != nil:
		api.rt.log.Error("batch cancel failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the batch cannot be cancelled now; retry: what was cancelled stays so"})
	default:
		WriteJSON(w, http.StatusOK, map[string]any{"batchId": id, "cancelled": res.Cancelled, "notCancelled": res.NotCancelled})
	}
}

// cancelWhere serves POST /admin/payments/cancel.
func (api *paymentsAPI) cancelWhere(w http.ResponseWriter, r *http.Request) {
	var body cancelFilter
	if !decodeBody(w, r, &body) {
		return
	}
	f, errs := body.check()
	if len(errs) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid cancel filter", Detail: "the filter has invalid fields", Errors: errs})
		return
	}
	res, err := api.payments.CancelWhere(r.Context(), f, body.DryRun, api.rt.recordCancel(r, map[string]any{"filter": body}))
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(body.BatchID, 64)})
	case err != nil:
		api.rt.log.Error("cancel by filter failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the payments cannot be cancelled now; retry: what was cancelled stays so"})
	default:
		WriteJSON(w, http.StatusOK, map[string]any{"dryRun": body.DryRun, "cancelled": res.Cancelled, "notCancelled": res.NotCancelled})
	}
}
