package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/paydispatch/paydispatch/process"
	"github.com/paydispatch/paydispatch/queue"
)

// Service is the payments intake: what the HTTP API (or any other intake)
// calls.
type Service struct {
	Store    *Store
	Queue    *queue.Queue
	Temporal client.Client
	Now      func() time.Time
	// ChunkSize is the payments per chunk workflow of a bulk file (default ChunkSize).
	ChunkSize int
}

// StatusReceived is reported for a payment whose init workflow has not yet
// persisted it.
const StatusReceived Status = "RECEIVED"

// View is a payment's status as the API reports it.
type View struct {
	PaymentID              string     `json:"paymentId"`
	TenantID               string     `json:"tenantId,omitempty"`
	Status                 Status     `json:"status"`
	StatusReason           string     `json:"statusReason,omitempty"`
	QueueStatus            string     `json:"queueStatus,omitempty"`
	Amount                 string     `json:"amount,omitempty"`
	Currency               string     `json:"currency,omitempty"`
	RequestedExecutionTime *time.Time `json:"requestedExecutionTime,omitempty"`
	ScheduledExecutionTime *time.Time `json:"scheduledExecutionTime,omitempty"`
	CreatedAt              *time.Time `json:"createdAt,omitempty"`
	UpdatedAt              *time.Time `json:"updatedAt,omitempty"`
	// Process is the payment's execution (SubmitPayment), once it began:
	// GET /v1/processes/{processId} shows its whole log.
	Process *ProcessView `json:"process,omitempty"`
}

// ProcessView is where a payment's execution stands.
type ProcessView struct {
	ProcessID   string         `json:"processId"`
	Status      process.Status `json:"status"`
	CurrentStep string         `json:"currentStep"`
	ErrorCode   string         `json:"errorCode,omitempty"`
}

// Submit validates a payment and starts its init workflow, whose id is
// derived from the payment id: submitting the same payment again starts
// nothing new. A payment id already used for a different payment is
// ErrConflict; an invalid request is a *ValidationError. Neither changes
// anything.
func (s *Service) Submit(ctx context.Context, r Request) (string, error) {
	if r.PaymentID == "" {
		r.PaymentID = "pay-" + uuid.Must(uuid.NewV7()).String()
	}
	if _, err := Validate(r, s.now()); err != nil {
		return "", err
	}
	if existing, err := s.Store.Get(ctx, r.PaymentID); err == nil {
		a, _ := canonical(existing.Request)
		b, _ := canonical(r)
		if string(a) != string(b) {
			return "", fmt.Errorf("payment %s: %w", r.PaymentID, ErrConflict)
		}
		return r.PaymentID, nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	hash, err := requestHash(r)
	if err != nil {
		return "", err
	}
	_, err = s.start(ctx, InitWorkflowID(r.PaymentID), InitWorkflowName, r, map[string]any{memoRequestHash: hash, memoTenant: r.TenantID})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return r.PaymentID, s.sameAsStarted(ctx, r.PaymentID, hash)
	}
	if err != nil {
		return "", fmt.Errorf("payment: start init of %s: %w", r.PaymentID, err)
	}
	return r.PaymentID, nil
}

// start starts a Phase A workflow under a deterministic id.
func (s *Service) start(ctx context.Context, id, workflowName string, arg any, memo map[string]any) (client.WorkflowRun, error) {
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                InitTaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Phase A is seconds of work; one that cannot finish in a day is stuck.
		WorkflowExecutionTimeout:                 24 * time.Hour,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     memo,
	}
	return s.Temporal.ExecuteWorkflow(ctx, opts, workflowName, arg)
}

// startOnce starts a chunk workflow; one already started is fine.
func (s *Service) startOnce(ctx context.Context, id, workflowName string, arg any) error {
	_, err := s.start(ctx, id, workflowName, arg, nil)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("payment: start %s: %w", id, err)
	}
	return nil
}

// An init workflow's memo: the request's fingerprint, so that a second
// submission racing the first (before Phase A stored it) is compared too,
// and its tenant, so that the payment shows to its tenant meanwhile.
const (
	memoRequestHash = "requestHash"
	memoTenant      = "tenantId"
)

// requestHash fingerprints a request's canonical form.
func requestHash(r Request) (string, error) {
	raw, err := canonical(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// sameAsStarted compares a request with the one whose init workflow already
// runs under its payment id: a different one is ErrConflict.
func (s *Service) sameAsStarted(ctx context.Context, id, hash string) error {
	desc, err := s.Temporal.DescribeWorkflowExecution(ctx, InitWorkflowID(id), "")
	if err != nil {
		return fmt.Errorf("payment: describe init of %s: %w", id, err)
	}
	field, ok := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoRequestHash]
	if !ok {
		return nil // started by another intake without a fingerprint; Phase A compares when it stores
	}
	var started string
	if err := converter.GetDefaultDataConverter().FromPayload(field, &started); err != nil {
		return fmt.Errorf("payment: read init memo of %s: %w", id, err)
	}
	if started != hash {
		return fmt.Errorf("payment %s: %w", id, ErrConflict)
	}
	return nil
}

// Status reports a payment's business and queue status.
func (s *Service) Status(ctx context.Context, id string) (View, error) {
	p, err := s.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		if desc, derr := s.Temporal.DescribeWorkflowExecution(ctx, InitWorkflowID(id), ""); derr == nil {
			v := View{PaymentID: id, Status: StatusReceived}
			if field, ok := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoTenant]; ok {
				_ = converter.GetDefaultDataConverter().FromPayload(field, &v.TenantID) // none: shown to admins only
			}
			return v, nil
		}
		return View{}, err
	}
	if err != nil {
		return View{}, err
	}
	v := View{
		PaymentID: id, TenantID: p.TenantID, Status: p.Status, StatusReason: p.StatusReason,
		RequestedExecutionTime: &p.RequestedExecutionTime, ScheduledExecutionTime: p.ScheduledExecutionTime,
		CreatedAt: &p.CreatedAt, UpdatedAt: &p.UpdatedAt,
	}
	if p.Money != nil {
		v.Amount, v.Currency = displayAmount(p.Money), p.Money.Currency
	}
	switch inst, err := process.Get(ctx, s.Store.db, process.ID(SubmitPaymentType, id)); {
	case err == nil:
		v.Process = &ProcessView{ProcessID: inst.ID.String(), Status: inst.Status, CurrentStep: inst.Step, ErrorCode: inst.ErrorCode}
	case !errors.Is(err, process.ErrNotFound):
		return View{}, err
	}
	if it, err := s.Queue.Get(ctx, ItemType, id); err == nil {
		v.QueueStatus = string(it.Status)
	} else if !errors.Is(err, queue.ErrNotFound) {
		return View{}, err
	}
	return v, nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// displayAmount shows at least two decimals, more only when they are not
// zero: 125 → "125.00", 1.2345 → "1.2345".
func displayAmount(m *Money) string {
	if m.Amount.Equal(m.Amount.Round(2)) {
		return m.Amount.StringFixed(2)
	}
	return m.Amount.String()
}
