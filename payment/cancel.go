package payment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/pgerr"
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
	case StatusCancelled:
		return "cancelled before"
	case StatusHeld:
		return "held at its rail's cut-off"
	}
	return "it is " + string(s)
}

// Record writes, inside a cancel's transaction, the record of what that
// transaction cancelled (an admin change's audit entry): the record
// commits with the payments it names, and its error rolls them back and
// fails the cancel. A cancel commits each of its statements on its own
// (see Store.cancel), so it calls Record in each that cancelled any
// payment, with how many. Nil records nothing.
type Record func(ctx context.Context, tx pgx.Tx, cancelled int) error

// Cancel cancels the tenant's payment with the id, if its execution has
// not begun: while it waits for Phase A, in the queue, in a dispatched
// execution or in a batch execution for its slot. It answers the
// payment's status: CANCELLED (also when it was cancelled before), or
// ErrNotCancellable naming where it is; ErrNotFound for an unknown id.
// record is called in the transaction that cancels it.
func (s *Service) Cancel(ctx context.Context, tenantID, paymentID string, record Record) (status Status, now bool, err error) {
	key, err := s.cfg.Store.q.PaymentKey(ctx, dbsqlc.PaymentKeyParams{TenantID: tenantID, ExternalID: paymentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	}
	if err != nil {
		return "", false, fmt.Errorf("payment: cancel %s of %s: %w", paymentID, tenantID, err)
	}
	var waiting []string
	if key.InitWorkflowID != nil {
		waiting = []string{*key.InitWorkflowID}
	}
	got, cancelled, err := s.cfg.Store.cancel(ctx, []string{key.PaymentID}, waiting, "", record, s.completeParked)
	if err != nil {
		return "", false, err
	}
	status, ok := got[key.PaymentID]
	switch {
	case !ok:
		return "", false, fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	case status != StatusCancelled:
		return status, false, fmt.Errorf("payment %s is %s, %s: %w", paymentID, status, whyNot(status), ErrNotCancellable)
	}
	if cancelled[key.PaymentID] {
		s.cfg.Metrics.countCancelled("payment", 1)
	}
	return status, cancelled[key.PaymentID], nil
}

// CancelBatch cancels every payment of a bulk file whose execution has
// not begun; with tenantID set, only that tenant's. ErrNotFound for an
// unknown file. record is called in each transaction that cancels any.
func (s *Service) CancelBatch(ctx context.Context, batchID, tenantID string, record Record) (Cancelled, error) {
	q := dbsqlc.New(s.cfg.Store.db)
	if _, err := q.GetBatch(ctx, batchID); errors.Is(err, pgx.ErrNoRows) {
		return Cancelled{}, ErrNotFound
	} else if err != nil {
		return Cancelled{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	parts, err := q.BatchParts(ctx, batchID)
	if err != nil {
		return Cancelled{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	var keys []string
	for _, p := range parts {
		keys = append(keys, p.PaymentIds...)
	}
	chunks, err := q.BatchIntakeRows(ctx, batchIntakePrefix(batchID))
	if err != nil {
		return Cancelled{}, fmt.Errorf("payment: batch %s: %w", batchID, err)
	}
	got, cancelled, err := s.cfg.Store.cancel(ctx, keys, chunks, tenantID, record, s.completeParked)
	if err != nil {
		return Cancelled{}, err
	}
	res := summarize(got, cancelled)
	s.cfg.Metrics.countCancelled("batch", res.Cancelled)
	return res, nil
}

// summarize counts what a cancel found, by status: those it cancelled
// now, and the others by status (CANCELLED: cancelled before).
func summarize(got map[string]Status, now map[string]bool) Cancelled {
	var out Cancelled
	at := map[Status]int{}
	for key, st := range got {
		if now[key] {
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
	slices.SortFunc(out.NotCancelled, func(a, b NotCancelled) int { return strings.Compare(string(a.Status), string(b.Status)) })
	return out
}

// cancel cancels those of the payments (keys) whose execution has not
// begun, of one tenant or (empty) any: those waiting for Phase A in the
// intake rows named, stored CANCELLED; the SCHEDULED ones moved to
// CANCELLED, racing their executions' BeginExecution. It answers each
// payment's status after (none for a payment of another tenant, or not
// found), and those it cancelled now. Each statement commits on its own,
// with record's entry when it cancelled any, so that a lock one takes is
// never held while the next waits; a deadlock within one statement (with
// Phase A, which stores a chunk's payments at once) is tried again.
// then, when set, is called in the transaction of each statement that
// cancelled stored payments, with their keys (the queue items of held
// ones are completed with them).
func (s *Store) cancel(ctx context.Context, keys, intakeRows []string, tenantID string, record Record,
	then func(ctx context.Context, tx pgx.Tx, keys []string) error) (statuses map[string]Status, now map[string]bool, err error) {
	reason := CancelReason
	now = map[string]bool{}
	step := func(stmt func(q *dbsqlc.Queries) ([]string, error), then func(ctx context.Context, tx pgx.Tx, keys []string) error) error {
		var err error
		for range 5 {
			var got []string
			err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
				var err error
				if got, err = stmt(dbsqlc.New(tx)); err != nil || len(got) == 0 {
					return err
				}
				if then != nil {
					if err := then(ctx, tx, got); err != nil {
						return err
					}
				}
				if record == nil {
					return nil
				}
				return record(ctx, tx, len(got))
			})
			if err == nil {
				for _, k := range got {
					now[k] = true
				}
				return nil
			}
			if !pgerr.Is(err, pgerr.DeadlockDetected) {
				return err
			}
		}
		return err
	}
	if len(intakeRows) > 0 {
		if err := step(func(q *dbsqlc.Queries) ([]string, error) {
			return q.CancelWaiting(ctx, dbsqlc.CancelWaitingParams{
				PaymentIds: keys, InitWorkflowIds: intakeRows, StatusReason: reason, TenantID: tenantID,
			})
		}, nil); err != nil {
			return nil, now, fmt.Errorf("payment: cancel %d payments waiting for Phase A: %w", len(keys), err)
		}
	}
	if err := step(func(q *dbsqlc.Queries) ([]string, error) {
		return q.CancelScheduled(ctx, dbsqlc.CancelScheduledParams{PaymentIds: keys, StatusReason: &reason, TenantID: tenantID})
	}, then); err != nil {
		return nil, now, fmt.Errorf("payment: cancel %d scheduled payments: %w", len(keys), err)
	}
	rows, err := s.q.PaymentStatuses(ctx, dbsqlc.PaymentStatusesParams{PaymentIds: keys, TenantID: tenantID})
	if err != nil {
		return nil, now, fmt.Errorf("payment: statuses of %d payments: %w", len(keys), err)
	}
	statuses = make(map[string]Status, len(rows))
	for _, r := range rows {
		statuses[r.PaymentID] = Status(r.Status)
	}
	return statuses, now, nil
}

// CancelFilter selects the payments an operator cancels: a tenant's, a
// file's, or a tenant's in a file; requested in [RequestedFrom,
// RequestedTo) (zero: unbounded); in one of Statuses (none: any).
type CancelFilter struct {
	TenantID, BatchID          string
	Statuses                   []Status
	RequestedFrom, RequestedTo time.Time
}

// ErrNoSelection: a filter names neither a tenant nor a file; an
// operator cancels nothing across every tenant at once.
var ErrNoSelection = errors.New("payment: a cancel by filter names a tenant or a file")

// CancelWhere cancels the payments the filter selects whose execution has
// not begun, and counts the rest by status; with dryRun it changes
// nothing and counts what it would cancel as cancelled. record is called
// in each transaction that cancels any.
func (s *Service) CancelWhere(ctx context.Context, f CancelFilter, dryRun bool, record Record) (Cancelled, error) {
	if f.TenantID == "" && f.BatchID == "" {
		return Cancelled{}, ErrNoSelection
	}
	from, to := f.RequestedFrom, f.RequestedTo
	if from.IsZero() {
		from = openFrom
	}
	if to.IsZero() {
		to = openTo
	}
	statuses := make([]string, len(f.Statuses))
	wantWaiting := len(f.Statuses) == 0
	for i, st := range f.Statuses {
		statuses[i] = string(st)
		wantWaiting = wantWaiting || st == StatusReceived
	}
	q := s.cfg.Store.q
	var keys, intakeRows []string
	if f.BatchID != "" {
		if _, err := q.GetBatch(ctx, f.BatchID); errors.Is(err, pgx.ErrNoRows) {
			return Cancelled{}, ErrNotFound
		} else if err != nil {
			return Cancelled{}, fmt.Errorf("payment: batch %s: %w", f.BatchID, err)
		}
		parts, err := q.BatchParts(ctx, f.BatchID)
		if err != nil {
			return Cancelled{}, fmt.Errorf("payment: batch %s: %w", f.BatchID, err)
		}
		for _, p := range parts {
			keys = append(keys, p.PaymentIds...)
		}
		if intakeRows, err = q.BatchIntakeRows(ctx, batchIntakePrefix(f.BatchID)); err != nil {
			return Cancelled{}, fmt.Errorf("payment: batch %s: %w", f.BatchID, err)
		}
	}
	// The waiting first, then the stored ones (whose status wins): a
	// payment leaves its intake row only in the transaction that stores
	// it, so read in this order none is missed while Phase A commits.
	found := map[string]Status{}
	var waitingRows []string
	if wantWaiting && (f.BatchID == "" || len(intakeRows) > 0) {
		rows, err := q.MatchWaiting(ctx, dbsqlc.MatchWaitingParams{
			InitWorkflowIds: intakeRows, TenantID: f.TenantID, RequestedFrom: from, RequestedTo: to})
		if err != nil {
			return Cancelled{}, fmt.Errorf("payment: select waiting payments to cancel: %w", err)
		}
		seen := map[string]bool{}
		for _, r := range rows {
			found[r.PaymentID] = StatusReceived
			if !seen[r.InitWorkflowID] {
				seen[r.InitWorkflowID] = true
				waitingRows = append(waitingRows, r.InitWorkflowID)
			}
		}
	}
	type match struct{ PaymentID, Status string }
	var stored []match
	var settled []dbsqlc.MatchTenantPaymentsRow // counted by status
	if f.BatchID != "" {
		rows, err := q.MatchKeyedPayments(ctx, dbsqlc.MatchKeyedPaymentsParams{
			PaymentIds: keys, TenantID: f.TenantID, RequestedFrom: from, RequestedTo: to, Statuses: statuses})
		if err != nil {
			return Cancelled{}, fmt.Errorf("payment: select payments to cancel: %w", err)
		}
		for _, r := range rows {
			stored = append(stored, match(r))
		}
	} else {
		rows, err := q.MatchTenantPayments(ctx, dbsqlc.MatchTenantPaymentsParams{
			TenantID: f.TenantID, RequestedFrom: from, RequestedTo: to, Statuses: statuses})
		if err != nil {
			return Cancelled{}, fmt.Errorf("payment: select payments to cancel: %w", err)
		}
		for _, r := range rows {
			if r.PaymentID == "" {
				settled = append(settled, r)
			} else {
				stored = append(stored, match{r.PaymentID, r.Status})
			}
		}
	}
	for _, r := range stored {
		found[r.PaymentID] = Status(r.Status)
	}
	var todo []string
	for k, st := range found {
		if st == StatusReceived || st == StatusScheduled || st == StatusHeld || st == StatusAwaitingApproval {
			todo = append(todo, k)
		}
	}
	if dryRun || len(todo) == 0 {
		now := make(map[string]bool, len(todo))
		for _, k := range todo {
			now[k] = true
		}
		return withSettled(summarize(found, now), settled), nil
	}
	got, now, err := s.cfg.Store.cancel(ctx, todo, waitingRows, f.TenantID, record, s.completeParked)
	if err != nil {
		return Cancelled{}, err
	}
	for k, st := range got {
		found[k] = st
	}
	res := withSettled(summarize(found, now), settled)
	s.cfg.Metrics.countCancelled("filter", res.Cancelled)
	return res, nil
}

// withSettled adds the payments counted by status, not read one by one,
// to what a cancel found.
func withSettled(res Cancelled, settled []dbsqlc.MatchTenantPaymentsRow) Cancelled {
	if len(settled) == 0 {
		return res
	}
	for _, c := range settled {
		st := Status(c.Status)
		i := slices.IndexFunc(res.NotCancelled, func(n NotCancelled) bool { return n.Status == st })
		if i < 0 {
			res.NotCancelled = append(res.NotCancelled, NotCancelled{Status: st, Reason: whyNot(st)})
			i = len(res.NotCancelled) - 1
		}
		res.NotCancelled[i].Count += int(c.N)
	}
	slices.SortFunc(res.NotCancelled, func(a, b NotCancelled) int { return strings.Compare(string(a.Status), string(b.Status)) })
	return res
}

// batchIntakePrefix is what the ids of a file's chunks' intake rows
// begin with.
func batchIntakePrefix(batchID string) string { return "init-" + batchID + "-" }

// completeParked, in the transaction that cancels stored payments: the
// queue items that payments held at an execution's cut-off had parked are
// completed (the others have none, or a live one their execution
// settles), and their slots are given back, so that payments assigned
// afterwards under the same configs take them first (a window that has
// begun keeps its count: an execution at the slot may have gone; the
// limit holds either way, since executions are counted where they run).
func (s *Service) completeParked(ctx context.Context, tx pgx.Tx, keys []string) error {
	if s.cfg.Queue != nil {
		if _, err := s.cfg.Queue.CompleteParkedTx(ctx, tx, ItemType, keys); err != nil {
			return err
		}
	}
	if s.cfg.Pacer == nil {
		return nil
	}
	events := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		events = append(events, k, k+tenantEventSuffix)
	}
	_, err := s.cfg.Pacer.ReleaseEvents(ctx, tx, events)
	return err
}
