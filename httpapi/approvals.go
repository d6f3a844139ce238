package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/auth"
	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/plaintext"
	"github.com/paydispatch/paydispatch/payment"
)

// Approvals are the approval rules and the approvals of payments
// (payment.Service); Services.Payments with it serves the approval
// routes.
type Approvals interface {
	PutApprovalRules(ctx context.Context, tx pgx.Tx, tenant string, rules []payment.ApprovalRule) error
	ApprovalRules(ctx context.Context, tenant string) ([]payment.ApprovalRule, error)
	// Approve and Deny decide on the payments the filter selects, calling
	// record in the transaction that does (the audit entry).
	Approve(ctx context.Context, f payment.ApprovalFilter, who payment.Approver, dryRun bool, record payment.Record) (payment.Decided, error)
	Deny(ctx context.Context, f payment.ApprovalFilter, who payment.Approver, reason string, dryRun bool, record payment.Record) (payment.Decided, error)
}

// approvalsAPI serves a tenant's approval rules and the approvals.
type approvalsAPI struct {
	rt        *Router
	approvals Approvals
}

// approvalRulesBody is POST /admin/approval-rules' body: a tenant's
// whole ordered list (empty: none).
type approvalRulesBody struct {
	TenantID string                  `json:"tenantId"`
	Rules    *[]payment.ApprovalRule `json:"rules"`
}

// putRules serves POST /admin/approval-rules: the tenant's rules,
// replaced in the audited change's transaction.
func (api *approvalsAPI) putRules(w http.ResponseWriter, r *http.Request) {
	var body approvalRulesBody
	if !decodeBody(w, r, &body) {
		return
	}
	var errs []field.Error
	if !field.ValidID(body.TenantID) {
		errs = append(errs, field.Error{Field: "tenantId", Detail: field.IDRule})
	}
	if body.Rules == nil {
		errs = append(errs, field.Error{Field: "rules", Detail: "required: the tenant's whole list, in order (empty: no payment of its needs approvals)"})
	} else {
		errs = append(errs, invalidFields(payment.ValidateApprovalRules(*body.Rules))...)
	}
	if len(errs) > 0 {
		WriteProblem(w, r, fieldProblem("Invalid approval rules", errs))
		return
	}
	if err := api.approvals.PutApprovalRules(r.Context(), changeTx(r), body.TenantID, *body.Rules); err != nil {
		if bad := invalidFields(err); bad != nil {
			WriteProblem(w, r, fieldProblem("Invalid approval rules", bad))
			return
		}
		api.rt.log.Error("storing approval rules failed", "tenant", body.TenantID, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the approval rules cannot be stored now; retry"})
		return
	}
	WriteJSON(w, http.StatusOK, approvalRulesJSON(body.TenantID, *body.Rules))
}

func approvalRulesJSON(tenant string, rules []payment.ApprovalRule) map[string]any {
	if rules == nil {
		rules = []payment.ApprovalRule{}
	}
	return map[string]any{"tenantId": tenant, "rules": rules}
}

// listRules serves GET /admin/approval-rules?tenantId=: a tenant's rules.
func (api *approvalsAPI) listRules(w http.ResponseWriter, r *http.Request) {
	tenant := r.URL.Query().Get("tenantId")
	if !field.ValidID(tenant) {
		WriteProblem(w, r, fieldProblem("Invalid query", []field.Error{{Field: "tenantId", Detail: "required: " + field.IDRule}}))
		return
	}
	rules, err := api.approvals.ApprovalRules(r.Context(), tenant)
	if err != nil {
		api.rt.log.Error("reading approval rules failed", "tenant", tenant, "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the approval rules cannot be read now; retry"})
		return
	}
	WriteJSON(w, http.StatusOK, approvalRulesJSON(tenant, rules))
}

// decisionBody is the body of POST /v1/payments/approve and /deny: the
// tenant's payments by id, a file's, or a filter (tenant, file, requested
// time range), at most limit a call.
type decisionBody struct {
	TenantID      string     `json:"tenantId"`
	PaymentIDs    []string   `json:"paymentIds"`
	BatchID       string     `json:"batchId"`
	RequestedFrom *time.Time `json:"requestedFrom"`
	RequestedTo   *time.Time `json:"requestedTo"`
	Limit         int        `json:"limit"`
	DryRun        bool       `json:"dryRun"`
	// Reason is a denial's (required there), kept as the payment's.
	Reason string `json:"reason"`
}

// maxDenyReason bounds a denial's reason.
const maxDenyReason = 256

func (b decisionBody) check(deny bool) (payment.ApprovalFilter, []field.Error) {
	f := payment.ApprovalFilter{TenantID: b.TenantID, PaymentIDs: b.PaymentIDs, BatchID: b.BatchID, Limit: b.Limit}
	var errs []field.Error
	if b.TenantID == "" && b.BatchID == "" {
		errs = append(errs, field.Error{Field: "tenantId", Detail: "name a tenant (with paymentIds, or a filter) or a file (batchId)"})
	}
	if b.TenantID != "" && !field.ValidID(b.TenantID) {
		errs = append(errs, field.Error{Field: "tenantId", Detail: field.IDRule})
	}
	if len(b.BatchID) > maxListFilter || !plaintext.Valid(b.BatchID) {
		errs = append(errs, field.Error{Field: "batchId", Detail: "a file's batch id: at most 128 characters of text"})
	}
	if b.Limit < 0 || b.Limit > payment.MaxApprove {
		errs = append(errs, field.Error{Field: "limit", Detail: fmt.Sprintf("1 to %d payments a call (0 or none: %d)", payment.MaxApprove, payment.MaxApprove)})
	}
	switch {
	case len(b.PaymentIDs) > 0 && b.TenantID == "":
		errs = append(errs, field.Error{Field: "paymentIds", Detail: "ids are a tenant's own: name the tenant (tenantId)"})
	case len(b.PaymentIDs) > payment.MaxApprove:
		errs = append(errs, field.Error{Field: "paymentIds", Detail: fmt.Sprintf("at most %d ids a call", payment.MaxApprove)})
	default:
		for i, id := range b.PaymentIDs {
			if !field.ValidID(id) {
				errs = append(errs, field.Error{Field: fmt.Sprintf("paymentIds[%d]", i), Detail: field.IDRule})
				break
			}
		}
	}
	if b.RequestedFrom != nil {
		f.From = *b.RequestedFrom
	}
	if b.RequestedTo != nil {
		f.To = *b.RequestedTo
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		errs = append(errs, field.Error{Field: "requestedTo", Detail: "after requestedFrom"})
	}
	if deny && (b.Reason == "" || len(b.Reason) > maxDenyReason || !plaintext.Valid(b.Reason)) {
		errs = append(errs, field.Error{Field: "reason", Detail: fmt.Sprintf("required: why, in 1 to %d characters of text", maxDenyReason)})
	}
	if !deny && b.Reason != "" {
		errs = append(errs, field.Error{Field: "reason", Detail: "a denial's: an approval gives none"})
	}
	return f, errs
}

// approverOf is who decides: the token's id (each token counts once a
// payment, never on one it submitted), or, without authentication, the
// operator the request names.
func approverOf(r *http.Request) (payment.Approver, bool) {
	who := payment.Approver{Actor: actorOf(r)}
	if p, ok := auth.FromContext(r.Context()); ok {
		who.Principal = p.TokenID
	} else if op := r.Header.Get(OperatorHeader); op != "" {
		who.Principal = "operator:" + op
	}
	return who, who.Principal != ""
}

// approve serves POST /v1/payments/approve.
func (api *approvalsAPI) approve(w http.ResponseWriter, r *http.Request) { api.decide(w, r, false) }

// deny serves POST /v1/payments/deny.
func (api *approvalsAPI) deny(w http.ResponseWriter, r *http.Request) { api.decide(w, r, true) }

func (api *approvalsAPI) decide(w http.ResponseWriter, r *http.Request, deny bool) {
	var body decisionBody
	if !decodeBody(w, r, &body) {
		return
	}
	if prob := claimTenant(r, &body.TenantID); prob != nil {
		WriteProblem(w, r, *prob)
		return
	}
	f, errs := body.check(deny)
	if len(errs) > 0 {
		WriteProblem(w, r, Problem{Status: http.StatusUnprocessableEntity, Title: "Invalid selection", Detail: "nothing was decided", Errors: errs})
		return
	}
	who, ok := approverOf(r)
	if !ok {
		WriteProblem(w, r, Problem{Status: http.StatusForbidden, Type: problemType("no-approver"),
			Detail: "an approval counts a principal: send a token, or name the operator (" + OperatorHeader + ")"})
		return
	}
	detail := map[string]any{"decision": "approve", "selection": body}
	if deny {
		detail["decision"] = "deny"
	}
	record := api.rt.recordCount(r, detail, "payments")
	var res payment.Decided
	var err error
	if deny {
		res, err = api.approvals.Deny(r.Context(), f, who, body.Reason, body.DryRun, record)
	} else {
		res, err = api.approvals.Approve(r.Context(), f, who, body.DryRun, record)
	}
	switch {
	case errors.Is(err, payment.ErrOwnPayment):
		WriteProblem(w, r, Problem{Status: http.StatusForbidden, Type: problemType("own-payment"),
			Detail: "four eyes: a payment is never approved or denied by the principal that submitted it; nothing was decided"})
	case errors.Is(err, payment.ErrNotFound):
		WriteProblem(w, r, Problem{Status: http.StatusNotFound, Detail: "no payment batch " + plaintext.Clip(body.BatchID, 64)})
	case errors.Is(err, payment.ErrNoRails):
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "this server has no rails to schedule approved payments onto"})
	case err != nil:
		api.rt.log.Error("deciding on payments awaiting approval failed", "error", err)
		WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Detail: "the decision cannot be made now; retry: what was decided stays so"})
	default:
		WriteJSON(w, http.StatusOK, res)
	}
}
