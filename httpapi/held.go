package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
	"github.com/paydispatch/paydispatch/routing"
)

// HeldPayments releases payments held at their rail's cut-off
// (payment.Service); Services.Payments with it serves POST
// /admin/payments/release.
type HeldPayments interface {
	// Release schedules again the HELD payments the filter selects,
	// calling record in the transaction that does (the audit entry).
	Release(ctx context.Context, f payment.HeldFilter, record payment.Record) (payment.Released, error)
	// RejectHeld ends the tenant's HELD payments named by id REJECTED
	// with the actor's reason, calling record in its transaction.
	RejectHeld(ctx context.Context, tenantID string, paymentIDs []string, actor, reason string, record payment.Record) (int, error)
}

// releaseBody is POST /admin/payments/release's body: a tenant's
// payments by id, a file's, or a rail's and a tenant's (at least one of
// tenantId, batchId and rail).
type releaseBody struct {
	TenantID   string   `json:"tenantId"`
	PaymentIDs []string `json:"paymentIds"`
	BatchID    string   `json:"batchId"`
	Rail       string   `json:"rail"`
	// Reasons are the holds released (CUTOFF, DUPLICATE, SCREENING);
	// none: CUTOFF and DUPLICATE. SCREENING only by paymentIds.
	Reasons []string `json:"reasons"`
}

// check turns the body into the filter, or names what is wrong.
func (b releaseBody) check() (payment.HeldFilter, []field.Error) {
	f := payment.HeldFilter{TenantID: b.TenantID, PaymentIDs: b.PaymentIDs, BatchID: b.BatchID, Rail: b.Rail, Reasons: b.Reasons}
	var errs []field.Error
	for i, r := range b.Reasons {
		switch {
		case !slices.Contains(payment.HeldReasons, r):
			errs = append(errs, field.Error{Field: fmt.Sprintf("reasons[%d]", i), Detail: "CUTOFF, DUPLICATE or SCREENING"})
		case r == payment.HoldScreening && (len(b.PaymentIDs) == 0 || b.BatchID != "" || b.Rail != ""):
			errs = append(errs, field.Error{Field: fmt.Sprintf("reasons[%d]", i),
				Detail: "a screening hit is released only by its payment's id (tenantId and paymentIds), never by a file or a rail"})
		}
	}
	if b.TenantID == "" && b.BatchID == "" && b.Rail == "" {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "name a tenant (with paymentIds, or all its held payments), a file (batchId) or a rail: a release never spans everything"})
	}
	if b.TenantID != "" && !field.ValidID(b.TenantID) {
		errs = append(errs, field.Error{Field: "tenantId", Detail: field.IDRule})
	}
	if b.Rail != "" && !routing.ValidName(b.Rail) {
		errs = append(errs, field.Error{Field: "rail", Detail: "a rail's name: 1 to 64 letters, digits, '_', '.', ':' or '-'"})
	}
	if len(b.BatchID) > maxListFilter || !plaintext.Valid(b.BatchID) {
		errs = append(errs, field.Error{Field: "batchId", Detail: "a file's batch id: at most 128 characters of text"})
	}
	switch {
	case len(b.PaymentIDs) > 0 && b.TenantID == "":
		errs = append(errs, field.Error{Field: "paymentIds", Detail: "ids are a tenant's own: name the tenant (tenantId)"})
	case len(b.PaymentIDs) > payment.MaxRelease:
		errs = append(errs, field.Error{Field: "paymentIds", Detail: fmt.Sprintf("at most %d ids a release", payment.MaxRelease)})
	default:
		errs = append(errs, badIDs(b.PaymentIDs)...)
	}
	return f, errs
}

// badIDs names the first 20 of ids that are no payment id.
func badIDs(ids []string) []field.Error {
	var errs []field.Error
	for i, id := range ids {
		if !field.ValidID(id) {
			if errs = append(errs, field.Error{Field: fmt.Sprintf("paymentIds[%d]", i), Detail: field.IDRule}); len(errs) == 20 {
				break
			}
		}
	}
	return errs
}

// release serves POST /admin/payments/release: an operator's override of
// the HOLD cut-off rule. Each payment is paced again from now on its
// rail, before its current business day's cut-off or from a later day's
// opening, never sent late; the audit entry is written in the
// transaction that schedules them (none when nothing was held).
func (api *paymentsAPI) release(w http.ResponseWriter, r *http.Request) {
	var body releaseBody
	if !decodeBody(w, r, &body) {
		return
	}
	f, errs := body.check()
	if len(errs) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid release", Detail: "nothing was released", Errors: errs})
		return
	}
	res, err := api.held.Release(r.Context(), f, func(ctx context.Context, tx pgx.Tx, released int) error {
		return api.rt.record(ctx, tx, r, map[string]any{"release": body, "released": released})
	})
	switch {
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(body.BatchID, 64)})
	case errors.Is(err, payment.ErrNoRails):
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "this server has no rails to release payments onto"})
	case err != nil:
		api.rt.log.Error("releasing held payments failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the payments cannot be released now; retry: what was released stays so"})
	default:
		WriteJSON(w, http.StatusOK, res)
	}
}

// rejectBody is POST /admin/payments/reject's body: a tenant's held
// payments by id, and why they are not to go.
type rejectBody struct {
	TenantID   string   `json:"tenantId"`
	PaymentIDs []string `json:"paymentIds"`
	Reason     string   `json:"reason"`
}

// check names what is wrong with the body.
func (b rejectBody) check() []field.Error {
	var errs []field.Error
	if !field.ValidID(b.TenantID) {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "required: " + field.IDRule})
	}
	switch {
	case len(b.PaymentIDs) == 0:
		errs = append(errs, field.Error{Field: "paymentIds", Detail: "name the held payments to reject by id: a rejection is a decision on each"})
	case len(b.PaymentIDs) > payment.MaxReject:
		errs = append(errs, field.Error{Field: "paymentIds", Detail: fmt.Sprintf("at most %d ids a rejection", payment.MaxReject)})
	default:
		errs = append(errs, badIDs(b.PaymentIDs)...)
	}
	if strings.TrimSpace(b.Reason) == "" || len(b.Reason) > payment.MaxRejectReason || !plaintext.Valid(b.Reason) {
		errs = append(errs, field.Error{Field: "reason", Detail: fmt.Sprintf("required: why they are rejected, 1 to %d characters of text", payment.MaxRejectReason)})
	}
	return errs
}

// rejected is POST /admin/payments/reject's answer.
type rejected struct {
	// Rejected counts the payments rejected; those named that were not
	// HELD (released, cancelled meanwhile, unknown) are left.
	Rejected int `json:"rejected"`
}

// reject serves POST /admin/payments/reject: an operator's decision that
// held payments (a screening hit, a suspected duplicate, a cut-off's
// hold) are not to go: REJECTED, "REJECTED by <actor>: <reason>", audited
// in the transaction that rejects them.
func (api *paymentsAPI) reject(w http.ResponseWriter, r *http.Request) {
	var body rejectBody
	if !decodeBody(w, r, &body) {
		return
	}
	if errs := body.check(); len(errs) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid rejection", Detail: "nothing was rejected", Errors: errs})
		return
	}
	n, err := api.held.RejectHeld(r.Context(), body.TenantID, body.PaymentIDs, actorOf(r), body.Reason, func(ctx context.Context, tx pgx.Tx, n int) error {
		return api.rt.record(ctx, tx, r, map[string]any{"reject": body, "rejected": n})
	})
	if err != nil {
		api.rt.log.Error("rejecting held payments failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the payments cannot be rejected now; retry: what was rejected stays so"})
		return
	}
	WriteJSON(w, http.StatusOK, rejected{Rejected: n})
}
