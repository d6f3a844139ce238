package payment

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/money"
	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/process"
)

// ErrNotFound: no such payment.
var ErrNotFound = errors.New("payment: not found")

// ErrConflict: a payment with this id exists with a different request.
var ErrConflict = errors.New("payment: id already used for a different payment")

// ErrWrongStatus: a status change's guard did not match.
var ErrWrongStatus = errors.New("payment: not in the expected status")

// Payment is a stored payment.
type Payment struct {
	// Key names the payment inside paydispatch (see Key); Request.PaymentID
	// is the id its tenant chose.
	Key string
	Request
	// Money is nil only on a payment rejected because it was invalid.
	Money                  *Money
	ScheduledExecutionTime *time.Time
	Status                 Status
	StatusReason           string
	ExecutionRef           string
	CreatedAt, UpdatedAt   time.Time
	// ExecutionDate is the business day it executes on in its rail's
	// zone (zero: not decided, or stored before rails).
	ExecutionDate time.Time
}

// Store keeps payments in PostgreSQL.
type Store struct {
	db DB
	q  *dbsqlc.Queries
}

// DB is a pool or a transaction.
type DB interface {
	dbsqlc.DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
}

// NewStore returns a Store on db.
func NewStore(db DB) *Store { return &Store{db: db, q: dbsqlc.New(db)} }

// inGenericTx runs f on a Store of one transaction on generic plans
// (process.BeginGenericPlans): only statements whose generic plans are
// checked (TestExecutionPlans).
func (s *Store) inGenericTx(ctx context.Context, f func(*Store) error) error {
	tx, err := process.BeginGenericPlans(ctx, s.db)
	if err != nil {
		return fmt.Errorf("payment: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := f(NewStore(tx)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Record stores a payment in status with reason, once, under its key
// (Key of its tenant and id): a replay of the same request is a no-op
// (created false); another request under the tenant's id is ErrConflict.
// m may be nil only for a REJECTED payment.
func (s *Store) Record(ctx context.Context, r Request, m *Money, status Status, reason string, scheduled *time.Time) (created bool, err error) {
	raw, err := canonical(r)
	if err != nil {
		return false, err
	}
	p := dbsqlc.InsertPaymentParams{
		PaymentID: Key(r.TenantID, r.PaymentID), ExternalID: r.PaymentID,
		TenantID: r.TenantID, DebtorAccount: r.DebtorAccount, CreditorName: r.Creditor.Name,
		CreditorIban: ptr.Optional(r.Creditor.IBAN), CreditorBic: ptr.Optional(r.Creditor.BIC), RemittanceInfo: ptr.Optional(r.RemittanceInfo),
		RequestedExecutionTime: r.RequestedExecutionTime, ScheduledExecutionTime: scheduled,
		Status: string(status), StatusReason: ptr.Optional(reason), Request: raw,
	}
	if d := detailsText(r.Details); d != "" {
		p.Details = []byte(d)
	}
	if m != nil {
		p.Amount, p.Currency = &m.Amount, &m.Currency
	}
	n, err := s.q.InsertPayment(ctx, p)
	if err != nil {
		return false, fmt.Errorf("payment: record %s: %w", r.PaymentID, err)
	}
	if n == 1 {
		return true, nil
	}
	conflicts, err := s.compare(ctx, []Request{r})
	if err != nil {
		return false, err
	}
	if len(conflicts) > 0 {
		return false, fmt.Errorf("payment %s: %w", r.PaymentID, ErrConflict)
	}
	return false, nil
}

// Receipt is what Receive did with one payment.
type Receipt struct {
	Key string
	// Fresh: stored now. Otherwise the payment was stored before: the
	// same request (a replay), or, when Conflict, another payment under
	// the tenant's id, which stores nothing.
	Fresh, Conflict bool
}

// Receive takes payments in: it claims each one's tenant id under its key
// and stages it, with its request, in the intake row of the Phase A
// workflow that is to store it (initWorkflowID(i) for rs[i]), in one
// transaction, a few thousand a statement. The payment's own row is
// written once, by Phase A; the approvals its tenant's rules want
// (applyApprovalRules) are stored with the claim. Every request must
// have passed Validate. With
// whole set, a conflict stores nothing at all: the receipts then show the
// conflicts, and the error is ErrConflict.
func (s *Store) Receive(ctx context.Context, rs []Request, initWorkflowID func(i int) string, whole bool) ([]Receipt, error) {
	out := make([]Receipt, len(rs))
	all := newStaged(len(rs))
	workflows := make([]string, len(rs))
	for i, r := range rs {
		amount, err := money.ParseDecimal(r.Amount, money.Unsigned)
		if err != nil {
			return nil, fmt.Errorf("payment %s: receive an amount Validate did not check: %w", r.PaymentID, err)
		}
		out[i].Key = Key(r.TenantID, r.PaymentID)
		all.add(out[i].Key, r, amount)
		workflows[i] = initWorkflowID(i)
	}
	// Ids are claimed in one order, whatever the order of rs: two callers
	// taking in the same ids wait for each other, never in a cycle.
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		return cmp.Or(strings.Compare(all.externalIDs[i], all.externalIDs[j]), strings.Compare(all.tenantIDs[i], all.tenantIDs[j]))
	})
	claimIDs, claimTenants := pick(all.externalIDs, order), pick(all.tenantIDs, order)
	claimKeys, claimWorkflows := pick(all.keys, order), pick(workflows, order)
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		fresh := make(map[string]bool, len(rs))
		claimed, err := claimByCopy(ctx, tx, claimIDs, claimTenants, claimKeys, claimWorkflows)
		if err != nil {
			return err
		}
		for _, k := range claimed {
			fresh[k] = true
		}
		for from := 0; claimed == nil && from < len(rs); from += receiveStatement {
			to := min(from+receiveStatement, len(rs))
			claimed, err := q.ClaimKeys(ctx, dbsqlc.ClaimKeysParams{
				ExternalIds: claimIDs[from:to], TenantIds: claimTenants[from:to],
				PaymentIds: claimKeys[from:to], InitWorkflowIds: claimWorkflows[from:to],
			})
			if err != nil {
				return fmt.Errorf("payment: receive %d payments: %w", to-from, err)
			}
			for _, k := range claimed {
				fresh[k] = true
			}
		}
		// The payments claimed now, by the workflow that is to store them;
		// the rest were taken in before, and are compared with what was.
		var wfOrder []string
		byWorkflow := map[string][]int{}
		var replays []Request
		var replayAt []int
		for i := range out {
			if !fresh[out[i].Key] {
				replays, replayAt = append(replays, rs[i]), append(replayAt, i)
				continue
			}
			out[i].Fresh = true
			delete(fresh, out[i].Key) // a second copy in rs is a replay of the first
			if _, ok := byWorkflow[workflows[i]]; !ok {
				wfOrder = append(wfOrder, workflows[i])
			}
			byWorkflow[workflows[i]] = append(byWorkflow[workflows[i]], i)
		}
		for _, id := range wfOrder {
			if err := stageIntake(ctx, tx, all.pick(byWorkflow[id]).intakeParams(id)); err != nil {
				return fmt.Errorf("payment: stage %d payments for %s: %w", len(byWorkflow[id]), id, err)
			}
		}
		isFresh := make([]bool, len(out))
		for i := range out {
			isFresh[i] = out[i].Fresh
		}
		if err := storeApprovalNeeds(ctx, q, rs, all.keys, isFresh); err != nil {
			return err
		}
		bad, err := NewStore(tx).compare(ctx, replays)
		if err != nil {
			return err
		}
		for j := range bad {
			out[replayAt[j]].Conflict = true
		}
		if whole && len(bad) > 0 {
			return fmt.Errorf("payment: %d of %d payments: %w", len(bad), len(rs), ErrConflict)
		}
		return nil
	})
	if errors.Is(err, ErrConflict) {
		return out, err
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// receiveStatement is how many payments one statement of Receive claims.
const receiveStatement = 2000

// compare finds which of rs are not what was taken in under their
// tenant's id (their index in rs): a request that differs, whether the
// payment is stored or waits for Phase A, or an id claimed by no payment.
func (s *Store) compare(ctx context.Context, rs []Request) (map[int]bool, error) {
	bad := map[int]bool{}
	if len(rs) == 0 {
		return bad, nil
	}
	tenants, ids := make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		tenants[i], ids[i] = r.TenantID, r.PaymentID
	}
	// Those waiting first, then the stored ones: a payment leaves its
	// intake row only in the transaction that stores it, so read in this
	// order none is missed while Phase A commits between the two.
	pending, err := s.q.PendingRequests(ctx, dbsqlc.PendingRequestsParams{TenantIds: tenants, ExternalIds: ids})
	if err != nil {
		return nil, fmt.Errorf("payment: compare %d payments with those waiting for Phase A: %w", len(rs), err)
	}
	stored, err := s.q.FindPayments(ctx, dbsqlc.FindPaymentsParams{TenantIds: tenants, ExternalIds: ids})
	if err != nil {
		return nil, fmt.Errorf("payment: compare %d payments with the stored ones: %w", len(rs), err)
	}
	byID := make(map[[2]string]Request, len(stored)+len(pending))
	for _, row := range pending {
		req, err := pendingRequest(row)
		if err != nil {
			return nil, err
		}
		byID[[2]string{row.TenantID, row.ExternalID}] = req
	}
	for _, row := range stored {
		p := row.Payment
		req, err := requestOf(p)
		if err != nil {
			return nil, err
		}
		byID[[2]string{p.TenantID, p.ExternalID}] = req
	}
	for i, r := range rs {
		prev, ok := byID[[2]string{r.TenantID, r.PaymentID}]
		if !ok {
			bad[i] = true
			continue
		}
		// A rail the rules chose is not the client's: the payment sent
		// again without one is the same one whatever the rules say now.
		if r.Rail == "" || r.routed {
			prev.Rail, r.Rail = "", ""
		}
		raw, err := canonical(r)
		if err != nil {
			return nil, err
		}
		was, err := canonical(prev)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(was, raw) {
			bad[i] = true
		}
	}
	return bad, nil
}

// pendingRequest is the request of a payment waiting for Phase A.
func pendingRequest(row dbsqlc.PendingRequestsRow) (Request, error) {
	d, err := detailsOf([]byte(row.Details))
	return Request{
		PaymentID: row.ExternalID, TenantID: row.TenantID, DebtorAccount: row.DebtorAccount,
		Amount: amountText(row.Amount, row.Currency), Currency: row.Currency,
		Creditor:               Creditor{Name: row.CreditorName, IBAN: row.CreditorIban, BIC: row.CreditorBic},
		RequestedExecutionTime: row.RequestedExecutionTime.UTC(), RemittanceInfo: row.RemittanceInfo, Rail: row.Rail,
		Priority: Priority(row.Priority), Details: d,
	}, err
}

// requestOf is the request a payment was sent with: its columns, or the
// JSON copy of it kept for payments stored before the columns held it
// all and for those refused before they were received.
func requestOf(p dbsqlc.Payment) (Request, error) {
	var r Request
	if p.Request != nil {
		if err := json.Unmarshal(p.Request, &r); err != nil {
			return Request{}, fmt.Errorf("payment: stored request of %s: %w", p.PaymentID, err)
		}
		r.Priority = Priority(p.Priority)
		return r, nil
	}
	r = Request{
		PaymentID: p.ExternalID, TenantID: p.TenantID, DebtorAccount: p.DebtorAccount,
		Creditor:               Creditor{Name: p.CreditorName, IBAN: ptr.Deref(p.CreditorIban), BIC: ptr.Deref(p.CreditorBic)},
		RequestedExecutionTime: p.RequestedExecutionTime.UTC(), RemittanceInfo: ptr.Deref(p.RemittanceInfo),
		Rail: ptr.Deref(p.Rail), Priority: Priority(p.Priority),
	}
	var err error
	if r.Details, err = detailsOf(p.Details); err != nil {
		return Request{}, err
	}
	if p.Amount != nil && p.Currency != nil {
		r.Amount, r.Currency = amountText(*p.Amount, *p.Currency), *p.Currency
	}
	return r, nil
}

// amountText writes an amount with its currency's minor units, as a
// valid request gives them at most (the column keeps four).
func amountText(d decimal.Decimal, currency string) string {
	digits, ok := money.MinorUnits(currency)
	switch {
	case !ok:
		return money.String(d)
	case -d.Exponent() <= digits: // in minor units already: no rounding to check
		return money.StringFixed(d, digits)
	case !d.Equal(d.Round(digits)):
		return money.String(d)
	}
	return money.StringFixed(d, digits)
}

// Get returns the payment with the key.
func (s *Store) Get(ctx context.Context, key string) (Payment, error) {
	got, err := s.q.GetPayment(ctx, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, fmt.Errorf("payment %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("payment: get %s: %w", key, err)
	}
	row := got.Payment
	req, err := requestOf(row)
	if err != nil {
		return Payment{}, err
	}
	var money *Money
	if row.Amount != nil && row.Currency != nil {
		money = &Money{Amount: *row.Amount, Currency: *row.Currency}
	}
	return Payment{
		Key: row.PaymentID, Request: req, Money: money,
		ScheduledExecutionTime: row.ScheduledExecutionTime, Status: Status(row.Status),
		StatusReason: ptr.Deref(row.StatusReason), ExecutionRef: ptr.Deref(row.ExecutionRef),
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt, ExecutionDate: ptr.Deref(row.ExecutionDate),
	}, nil
}

// Find returns the tenant's payment with the id it chose: RECEIVED while
// it waits for Phase A.
func (s *Store) Find(ctx context.Context, tenantID, paymentID string) (Payment, error) {
	key, err := s.q.PaymentKey(ctx, dbsqlc.PaymentKeyParams{TenantID: tenantID, ExternalID: paymentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("payment: find %s of %s: %w", paymentID, tenantID, err)
	}
	return s.claimed(ctx, key.PaymentID, tenantID, paymentID)
}

// claimed is the payment under a claimed id: stored, or waiting in its
// intake row for Phase A.
func (s *Store) claimed(ctx context.Context, key, tenantID, paymentID string) (Payment, error) {
	p, err := s.Get(ctx, key)
	if !errors.Is(err, ErrNotFound) {
		return p, err
	}
	rows, perr := s.q.PendingRequests(ctx, dbsqlc.PendingRequestsParams{TenantIds: []string{tenantID}, ExternalIds: []string{paymentID}})
	if perr != nil {
		return Payment{}, fmt.Errorf("payment: find %s of %s waiting for Phase A: %w", paymentID, tenantID, perr)
	}
	if len(rows) == 0 {
		// Phase A may have stored it since the first look.
		return s.Get(ctx, key)
	}
	row := rows[0]
	req, err := pendingRequest(row)
	if err != nil {
		return Payment{}, err
	}
	return Payment{
		Key: row.PaymentID, Request: req, Money: &Money{Amount: row.Amount, Currency: row.Currency},
		Status: StatusReceived, CreatedAt: row.ReceivedAt, UpdatedAt: row.ReceivedAt,
	}, nil
}

// FindAll returns every tenant's payment with the id (for an operator who
// names no tenant; at most ten).
func (s *Store) FindAll(ctx context.Context, paymentID string) ([]Payment, error) {
	keys, err := s.q.PaymentKeysByExternalID(ctx, paymentID)
	if err != nil {
		return nil, fmt.Errorf("payment: find %s: %w", paymentID, err)
	}
	out := make([]Payment, 0, len(keys))
	for _, k := range keys {
		p, err := s.claimed(ctx, k.PaymentID, k.TenantID, paymentID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Transition moves a payment from one status to another in one guarded
// statement. Finding it already in the target status is success (a retried
// activity); any other status is ErrWrongStatus.
func (s *Store) Transition(ctx context.Context, id string, from, to Status, reason string) error {
	return s.transition(ctx, id, from, to, reason, nil)
}

func (s *Store) transition(ctx context.Context, id string, from, to Status, reason string, acceptedAt *time.Time) error {
	_, err := s.q.TransitionPayment(ctx, dbsqlc.TransitionPaymentParams{
		PaymentID: id, FromStatus: string(from), ToStatus: string(to), StatusReason: ptr.Optional(reason), AcceptedAt: acceptedAt,
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("payment: %s %s → %s: %w", id, from, to, err)
	}
	cur, gerr := s.Get(ctx, id)
	if gerr != nil {
		return gerr
	}
	if cur.Status == to {
		return nil
	}
	return fmt.Errorf("payment %s is %s, not %s: %w", id, cur.Status, from, ErrWrongStatus)
}

// Accept moves a payment from SCHEDULED to ACCEPTED as Transition does,
// recording at as when its execution began.
func (s *Store) Accept(ctx context.Context, key string, at time.Time) error {
	return s.transition(ctx, key, StatusScheduled, StatusAccepted, "", &at)
}

// ErrCancelled: the payment was cancelled before its execution began.
var ErrCancelled = errors.New("payment: cancelled")

// Begin records that the payment's execution begins, at at: SCHEDULED →
// ACCEPTED, the guarded transition a cancel races (one of the two wins).
// A payment found ACCEPTED was begun before; CANCELLED is ErrCancelled;
// any other status ErrWrongStatus.
func (s *Store) Begin(ctx context.Context, key string, at time.Time) error {
	_, err := s.q.BeginExecution(ctx, dbsqlc.BeginExecutionParams{PaymentID: key, AcceptedAt: &at})
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("payment: begin the execution of %s: %w", key, err)
	}
	cur, gerr := s.Get(ctx, key)
	switch {
	case gerr != nil:
		return gerr
	case cur.Status == StatusAccepted:
		return nil
	case cur.Status == StatusCancelled:
		return fmt.Errorf("payment %s: %w", key, ErrCancelled)
	}
	return fmt.Errorf("payment %s is %s, not SCHEDULED: %w", key, cur.Status, ErrWrongStatus)
}

// SetExecutionRef records which execution handled the payment.
func (s *Store) SetExecutionRef(ctx context.Context, id, ref string) error {
	if _, err := s.q.SetExecutionRef(ctx, dbsqlc.SetExecutionRefParams{PaymentID: id, ExecutionRef: &ref}); err != nil {
		return fmt.Errorf("payment: set execution ref of %s: %w", id, err)
	}
	return nil
}

// Finish records which execution handled the payment, that both parties
// were told it is PROCESSING, and moves it there from ACCEPTED, in one
// statement on a generic plan (TestExecutionPlans checks it). A payment
// already PROCESSING, DELIVERED or RETURNED keeps its status; any other is
// ErrWrongStatus, and nothing is written.
func (s *Store) Finish(ctx context.Context, id, ref string) error {
	err := s.inGenericTx(ctx, func(s *Store) error {
		_, err := s.q.FinishExecution(ctx, dbsqlc.FinishExecutionParams{PaymentID: id, ExecutionRef: &ref})
		return err
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("payment: finish %s: %w", id, err)
	}
	cur, gerr := s.Get(ctx, id)
	if gerr != nil {
		return gerr
	}
	return fmt.Errorf("payment %s is %s, not ACCEPTED: %w", id, cur.Status, ErrWrongStatus)
}

// Notify records that a party was told of a status, once.
func (s *Store) Notify(ctx context.Context, id, party string, status Status) error {
	if _, err := s.q.InsertNotification(ctx, dbsqlc.InsertNotificationParams{PaymentID: id, Party: party, Status: string(status)}); err != nil {
		return fmt.Errorf("payment: notify %s of %s: %w", party, id, err)
	}
	return nil
}

// RecordBatch records a bulk file and the keys of its payments, chunkOf[i]
// the chunk of paymentIDs[i] (in order), once: the same file again
// changes nothing.
func (s *Store) RecordBatch(ctx context.Context, sub BatchSubmission, tenants, paymentIDs []string, chunkOf []int) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		n, err := q.InsertBatch(ctx, dbsqlc.InsertBatchParams{
			BatchID: sub.BatchID, Tenants: tenants, Payments: int32(sub.Payments), Chunks: int32(sub.Chunks)})
		if err != nil || n == 0 {
			return err
		}
		for from := 0; from < len(paymentIDs); {
			to := from + 1
			for to < len(paymentIDs) && chunkOf[to] == chunkOf[from] {
				to++
			}
			part := chunkOf[from]
			if err := q.InsertBatchPart(ctx, dbsqlc.InsertBatchPartParams{BatchID: sub.BatchID, Part: int32(part), PaymentIds: paymentIDs[from:to]}); err != nil {
				return fmt.Errorf("payment: batch %s, chunk %d: %w", sub.BatchID, part, err)
			}
			from = to
		}
		return nil
	})
}

// Context returns a payment's Phase A context (what its execution needs),
// stored with it when Phase A scheduled it.
func (s *Store) Context(ctx context.Context, key string) (Context, error) {
	pc, _, err := s.ContextAndStatus(ctx, key)
	return pc, err
}

// ContextAndStatus is Context with the payment's status, read in the same
// query: an execution run again finds its payment executed already.
func (s *Store) ContextAndStatus(ctx context.Context, key string) (Context, Status, error) {
	got, err := s.q.PaymentContext(ctx, key)
	if errors.Is(err, pgx.ErrNoRows) {
		return Context{}, "", fmt.Errorf("payment %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Context{}, "", fmt.Errorf("payment: context of %s: %w", key, err)
	}
	return contextOf(key, got.Payment)
}

// ContextsAndStatuses is ContextAndStatus for many payments in one
// statement. A payment not found is left out (ContextAndStatus says so);
// one whose context cannot be read fails the whole call.
func (s *Store) ContextsAndStatuses(ctx context.Context, keys []string) (map[string]StoredContext, error) {
	rows, err := s.q.PaymentContexts(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("payment: contexts of %d payments: %w", len(keys), err)
	}
	out := make(map[string]StoredContext, len(rows))
	for _, r := range rows {
		pc, st, err := contextOf(r.Payment.PaymentID, r.Payment)
		if err != nil {
			return nil, err
		}
		out[r.Payment.PaymentID] = StoredContext{Context: pc, Status: st}
	}
	return out, nil
}

// StoredContext is a payment's Phase A context and status as stored.
type StoredContext struct {
	Context Context
	Status  Status
}

// contextOf reads a payment row's Phase A context.
func contextOf(key string, row dbsqlc.Payment) (Context, Status, error) {
	var err error
	if len(row.Context) == 0 || string(row.Context) == "null" {
		return Context{}, "", fmt.Errorf("payment %s has no stored context: it was not scheduled by Phase A", key)
	}
	var stored storedPhaseA
	pc := Context{Version: 3}
	if err := json.Unmarshal(row.Context, &stored); err != nil {
		return Context{}, "", fmt.Errorf("payment: context of %s: %w", key, err)
	}
	if pc.Request, err = requestOf(row); err != nil {
		return Context{}, "", err
	}
	pc.Enrichment, pc.Amount, pc.Rules, pc.PacingConfig = stored.Enrichment, stored.Amount, stored.Rules, stored.PacingConfig
	pc.TraceParent = stored.TraceParent
	pc.TenantPacingConfig, pc.ExecutionDate, pc.Rail = stored.TenantPacingConfig, stored.ExecutionDate, ptr.Deref(row.Rail)
	pc.scheduledAt, pc.pausedBy = ptr.Deref(row.ScheduledExecutionTime), ptr.Deref(row.PausedBy)
	return pc, Status(row.Status), nil
}

// intake is what the Phase A workflow initWorkflowID is to store; found
// false once it stored it.
func (s *Store) intake(ctx context.Context, initWorkflowID string) (st staged, found bool, err error) {
	row, err := s.q.IntakeRequests(ctx, initWorkflowID)
	if errors.Is(err, pgx.ErrNoRows) {
		return staged{}, false, nil
	}
	if err != nil {
		return staged{}, false, fmt.Errorf("payment: intake of %s: %w", initWorkflowID, err)
	}
	amounts, err := parseAmounts(row.Amounts)
	if err != nil {
		return staged{}, false, fmt.Errorf("payment: intake of %s: %w", initWorkflowID, err)
	}
	st = staged{
		keys: row.PaymentIds, externalIDs: row.ExternalIds, tenantIDs: row.TenantIds, debtorAccounts: row.DebtorAccounts,
		amounts: amounts, currencies: row.Currencies, creditorNames: row.CreditorNames,
		creditorIBANs: row.CreditorIbans, creditorBICs: row.CreditorBics, remittanceInfos: row.RemittanceInfos, priorities: row.Priorities,
		requestedTimes: row.RequestedExecutionTimes, rails: row.Rails, details: row.Details, receivedAt: row.ReceivedAt,
	}
	if err := st.check(); err != nil {
		return staged{}, false, fmt.Errorf("payment: intake of %s: %w", initWorkflowID, err)
	}
	return st, true, nil
}

// Pending is a Phase A workflow and how many payments it is to take on.
type Pending struct {
	InitWorkflowID string
	Payments       int
}

// Pending returns the Phase A workflows whose payments have waited for
// them since before the given time, oldest first, at most max of them.
func (s *Store) Pending(ctx context.Context, before time.Time, max int) ([]Pending, error) {
	rows, err := s.q.PendingIntake(ctx, dbsqlc.PendingIntakeParams{Before: before, MaxWorkflows: int32(max)})
	if err != nil {
		return nil, fmt.Errorf("payment: pending intake: %w", err)
	}
	out := make([]Pending, len(rows))
	for i, r := range rows {
		out[i] = Pending{InitWorkflowID: r.InitWorkflowID, Payments: int(r.Payments)}
	}
	return out, nil
}
