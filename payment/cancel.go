package payment

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// ErrNotCancellable: the payment's execution has begun, or it ended
// before it (REJECTED); the error names its status.
var ErrNotCancellable = errors.New("payment: not cancellable")

// CancelReason is the status reason of a cancelled payment.
const CancelReason = "cancelled by its tenant before its execution began"

// Cancelled is a cancel's answer: how many payments it cancelled, and of
// the others, how many are in each status and why they were not.
type Cancelled struct {
	Cancelled    int            `json:"cancelled"`
	NotCancelled []NotCancelled `json:"notCancelled"`
}

// NotCancelled counts the payments a cancel left, by their status.
type NotCancelled struct {
	Status Status `json:"status"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

// whyNot says why a payment in status cannot be cancelled.
func whyNot(s Status) string {
	switch s {
	case StatusAccepted, StatusProcessing:
		return "its execution has begun"
	case StatusDelivered, StatusReturned:
		return "it was executed and the rail answered"
	case StatusFailed:
		return "its execution failed"
	case StatusRejected:
		return "Phase A rejected it"
	}
	return "it is " + string(s)
}

// Cancel cancels the tenant's payment with the id, if its execution has
// not begun: while it waits for Phase A, in the queue, in a dispatched
// execution or in a batch execution for its slot. It answers the
// payment's status: CANCELLED (also when it was cancelled before), or
// ErrNotCancellable naming where it is; ErrNotFound for an unknown id.
func (s *Service) Cancel(ctx context.Context, tenantID, paymentID string) (Status, error) {
	key, err := s.Store.q.PaymentKey(ctx, dbsqlc.PaymentKeyParams{TenantID: tenantID, ExternalID: paymentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("payment: cancel %s of %s: %w", paymentID, tenantID, err)
	}
	var waiting []string
	if key.InitWorkflowID != nil {
		waiting = []string{*key.InitWorkflowID}
	}
	got, err := s.Store.cancel(ctx, []string{key.PaymentID}, waiting, "")
	if err != nil {
		return "", err
	}
	status, ok := got[key.PaymentID]
	switch {
	case !ok:
		return "", fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	case status != StatusCancelled:
		return status, fmt.Errorf("payment %s is %s, %s: %w", paymentID, status, whyNot(status), ErrNotCancellable)
	}
	return status, nil
}

// CancelBatch cancels every payment of a bulk file whose execution has
// not begun; with tenantID set, only that tenant's. ErrNotFound for an
// unknown file.
func (s *Service) CancelBatch(ctx context.Context, batchID, tenantID string) (Cancelled, error) {
	q := dbsqlc.New(s.Store.db)
	if _, err := q.GetBatch(ctx, batchID); errors.Is(err, pgx.ErrNoRows) {
		return Cancelled{}, ErrNotFound
	} else if err != nil {
		return Cancelled{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	parts, err := q.BatchParts(ctx, batchID)
	if err != nil {
		return Cancelled{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	var keys, chunks []string
	for _, p := range parts {
		keys = append(keys, p.PaymentIds...)
		chunks = append(chunks, chunkWorkflowID(batchID, int(p.Part)))
	}
	got, err := s.Store.cancel(ctx, keys, chunks, tenantID)
	if err != nil {
		return Cancelled{}, err
	}
	return summarize(got), nil
}

// summarize counts what a cancel found, by status.
func summarize(got map[string]Status) Cancelled {
	var out Cancelled
	at := map[Status]int{}
	for _, st := range got {
		if st == StatusCancelled {
			out.Cancelled++
			continue
		}
		if _, ok := at[st]; !ok {
			at[st] = len(out.NotCancelled)
			out.NotCancelled = append(out.NotCancelled, NotCancelled{Status: st, Reason: whyNot(st)})
		}
		out.NotCancelled[at[st]].Count++
	}
	if out.NotCancelled == nil {
		out.NotCancelled = []NotCancelled{}
	}
	return out
}

// cancel cancels those of the payments (keys) whose execution has not
// begun, of one tenant or (empty) any: those waiting for Phase A in the
// intake rows named, stored CANCELLED; the SCHEDULED ones moved to
// CANCELLED, racing their executions' BeginExecution. It answers each
// payment's status after (none for a payment of another tenant, or not
// found). Each statement commits on its own, so that no transaction holds
// one payment while it waits for another's; a deadlock with Phase A,
// which stores a chunk's payments at once, is tried again.
func (s *Store) cancel(ctx context.Context, keys, intakeRows []string, tenantID string) (map[string]Status, error) {
	reason := CancelReason
	retry := func(f func() error) error {
		var err error
		for range 5 {
			var pgErr *pgconn.PgError
			if err = f(); !errors.As(err, &pgErr) || pgErr.Code != "40P01" {
				return err
			}
		}
		return err
	}
	if len(intakeRows) > 0 {
		if err := retry(func() error {
			_, err := s.q.CancelWaiting(ctx, dbsqlc.CancelWaitingParams{
				PaymentIds: keys, InitWorkflowIds: intakeRows, StatusReason: reason, TenantID: tenantID,
			})
			return err
		}); err != nil {
			return nil, fmt.Errorf("payment: cancel %d payments waiting for Phase A: %w", len(keys), err)
		}
	}
	if err := retry(func() error {
		_, err := s.q.CancelScheduled(ctx, dbsqlc.CancelScheduledParams{PaymentIds: keys, StatusReason: &reason, TenantID: tenantID})
		return err
	}); err != nil {
		return nil, fmt.Errorf("payment: cancel %d scheduled payments: %w", len(keys), err)
	}
	rows, err := s.q.PaymentStatuses(ctx, dbsqlc.PaymentStatusesParams{PaymentIds: keys, TenantID: tenantID})
	if err != nil {
		return nil, fmt.Errorf("payment: statuses of %d payments: %w", len(keys), err)
	}
	out := make(map[string]Status, len(rows))
	for _, r := range rows {
		out[r.PaymentID] = Status(r.Status)
	}
	return out, nil
}
