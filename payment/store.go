package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

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
		CreditorIban: opt(r.Creditor.IBAN), CreditorBic: opt(r.Creditor.BIC), RemittanceInfo: opt(r.RemittanceInfo),
		RequestedExecutionTime: r.RequestedExecutionTime, ScheduledExecutionTime: scheduled,
		Status: string(status), StatusReason: opt(reason), Request: raw,
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

// Receive stores payments taken in, RECEIVED, each under its key with the
// Phase A workflow that is to take it on (initWorkflowID(i) for rs[i]),
// in one transaction, a few thousand a statement. Every request must have
// passed Validate. With whole set, a conflict stores nothing at all: the
// receipts then show the conflicts, and the error is ErrConflict.
func (s *Store) Receive(ctx context.Context, rs []Request, initWorkflowID func(i int) string, whole bool) ([]Receipt, error) {
	out := make([]Receipt, len(rs))
	var replays []Request
	var replayAt []int
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		replays, replayAt = nil, nil
		for start := 0; start < len(rs); start += receiveStatement {
			part := rs[start:min(start+receiveStatement, len(rs))]
			n := len(part)
			p := dbsqlc.ReceivePaymentsParams{
				PaymentIds: make([]string, n), ExternalIds: make([]string, n), TenantIds: make([]string, n),
				DebtorAccounts: make([]string, n), Amounts: make([]decimal.Decimal, n), Currencies: make([]string, n),
				CreditorNames: make([]string, n), CreditorIbans: make([]string, n), CreditorBics: make([]string, n),
				RemittanceInfos: make([]string, n), RequestedExecutionTimes: make([]time.Time, n),
			}
			for j, r := range part {
				amount, err := money.ParseDecimal(r.Amount, money.Unsigned)
				if err != nil {
					return fmt.Errorf("payment %s: receive an amount Validate did not check: %w", r.PaymentID, err)
				}
				out[start+j].Key = Key(r.TenantID, r.PaymentID)
				p.PaymentIds[j], p.ExternalIds[j], p.TenantIds[j], p.DebtorAccounts[j] = out[start+j].Key, r.PaymentID, r.TenantID, r.DebtorAccount
				p.Amounts[j], p.Currencies[j], p.CreditorNames[j] = amount, r.Currency, r.Creditor.Name
				p.CreditorIbans[j], p.CreditorBics[j], p.RemittanceInfos[j] = r.Creditor.IBAN, r.Creditor.BIC, r.RemittanceInfo
				p.RequestedExecutionTimes[j] = r.RequestedExecutionTime
			}
			inserted, err := q.ReceivePayments(ctx, p)
			if err != nil {
				return fmt.Errorf("payment: receive %d payments: %w", len(part), err)
			}
			fresh := make(map[string]bool, len(inserted))
			for _, k := range inserted {
				fresh[k] = true
			}
			for j, r := range part {
				out[start+j].Fresh = fresh[out[start+j].Key]
				if !out[start+j].Fresh {
					replays, replayAt = append(replays, r), append(replayAt, start+j)
				}
			}
		}
		// The payments stored now, by the workflow that is to take them on.
		type intake struct {
			InitWorkflowID string   `json:"init_workflow_id"`
			PaymentIDs     []string `json:"payment_ids"`
		}
		var workflows []intake
		at := map[string]int{}
		for i, rc := range out {
			if !rc.Fresh {
				continue
			}
			id := initWorkflowID(i)
			n, ok := at[id]
			if !ok {
				n, at[id] = len(workflows), len(workflows)
				workflows = append(workflows, intake{InitWorkflowID: id})
			}
			workflows[n].PaymentIDs = append(workflows[n].PaymentIDs, rc.Key)
		}
		if len(workflows) > 0 {
			raw, err := json.Marshal(workflows)
			if err != nil {
				return fmt.Errorf("payment: receive: %w", err)
			}
			if err := q.AddIntake(ctx, raw); err != nil {
				return fmt.Errorf("payment: record the intake of %d workflows: %w", len(workflows), err)
			}
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

// receiveStatement is how many payments one statement of Receive stores.
const receiveStatement = 2000

// compare finds which of rs are not what is stored under their tenant's
// id (their index in rs): a request that differs, or a key taken by a
// payment stored under another id.
func (s *Store) compare(ctx context.Context, rs []Request) (map[int]bool, error) {
	bad := map[int]bool{}
	if len(rs) == 0 {
		return bad, nil
	}
	tenants, ids := make([]string, len(rs)), make([]string, len(rs))
	for i, r := range rs {
		tenants[i], ids[i] = r.TenantID, r.PaymentID
	}
	stored, err := s.q.FindPayments(ctx, dbsqlc.FindPaymentsParams{TenantIds: tenants, ExternalIds: ids})
	if err != nil {
		return nil, fmt.Errorf("payment: compare %d payments with the stored ones: %w", len(rs), err)
	}
	byID := make(map[[2]string][]byte, len(stored))
	for _, row := range stored {
		p := row.Payment
		req, err := requestOf(p)
		if err != nil {
			return nil, err
		}
		raw, err := canonical(req)
		if err != nil {
			return nil, err
		}
		byID[[2]string{p.TenantID, p.ExternalID}] = raw
	}
	for i, r := range rs {
		raw, err := canonical(r)
		if err != nil {
			return nil, err
		}
		prev, ok := byID[[2]string{r.TenantID, r.PaymentID}]
		if !ok || !bytes.Equal(prev, raw) {
			bad[i] = true
		}
	}
	return bad, nil
}

// canonical is the request's JSON with normalized values, for comparison:
// the time in UTC, the amount as its columns give it back (requestOf).
func canonical(r Request) ([]byte, error) {
	r.RequestedExecutionTime = r.RequestedExecutionTime.UTC()
	if d, err := money.ParseDecimal(r.Amount, money.Unsigned); err == nil {
		r.Amount = amountText(d, r.Currency)
	}
	return json.Marshal(r)
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
		return r, nil
	}
	r = Request{
		PaymentID: p.ExternalID, TenantID: p.TenantID, DebtorAccount: p.DebtorAccount,
		Creditor:               Creditor{Name: p.CreditorName, IBAN: deref(p.CreditorIban), BIC: deref(p.CreditorBic)},
		RequestedExecutionTime: p.RequestedExecutionTime.UTC(), RemittanceInfo: deref(p.RemittanceInfo),
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
	if !ok || !d.Equal(d.Round(digits)) {
		return d.String()
	}
	return d.StringFixed(digits)
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
		StatusReason: deref(row.StatusReason), ExecutionRef: deref(row.ExecutionRef),
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}, nil
}

// Find returns the tenant's payment with the id it chose.
func (s *Store) Find(ctx context.Context, tenantID, paymentID string) (Payment, error) {
	key, err := s.q.PaymentKey(ctx, dbsqlc.PaymentKeyParams{TenantID: tenantID, ExternalID: paymentID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, fmt.Errorf("payment %s of %s: %w", paymentID, tenantID, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("payment: find %s of %s: %w", paymentID, tenantID, err)
	}
	return s.Get(ctx, key)
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
		p, err := s.Get(ctx, k)
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
		PaymentID: id, FromStatus: string(from), ToStatus: string(to), StatusReason: opt(reason), AcceptedAt: acceptedAt,
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

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// RecordBatch records a bulk file and the ids of its payments, once: the
// same file again changes nothing.
func (s *Store) RecordBatch(ctx context.Context, sub BatchSubmission, tenants, paymentIDs []string) error {
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		n, err := dbsqlc.New(tx).InsertBatch(ctx, dbsqlc.InsertBatchParams{
			BatchID: sub.BatchID, Tenants: tenants, Payments: int32(sub.Payments), Chunks: int32(sub.Chunks)})
		if err != nil || n == 0 {
			return err
		}
		rows := make([][]any, len(paymentIDs))
		for i, id := range paymentIDs {
			rows[i] = []any{sub.BatchID, id}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"payment_batch_items"}, []string{"batch_id", "payment_id"}, pgx.CopyFromRows(rows))
		return err
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
	row := got.Payment
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
	return pc, Status(row.Status), nil
}

// Received returns those of the keys whose payments Phase A has yet to
// take on, with their requests.
func (s *Store) Received(ctx context.Context, keys []string) ([]string, []Request, error) {
	rows, err := s.q.ReceivedPayments(ctx, keys)
	if err != nil {
		return nil, nil, fmt.Errorf("payment: read %d received payments: %w", len(keys), err)
	}
	ks, rs := make([]string, len(rows)), make([]Request, len(rows))
	for i, row := range rows {
		if rs[i], err = requestOf(row.Payment); err != nil {
			return nil, nil, err
		}
		ks[i] = row.Payment.PaymentID
	}
	return ks, rs, nil
}

// IntakeKeys are the payments the Phase A workflow initWorkflowID is to
// take on: none once it took them on.
func (s *Store) IntakeKeys(ctx context.Context, initWorkflowID string) ([]string, error) {
	keys, err := s.q.IntakeKeys(ctx, initWorkflowID)
	if err != nil {
		return nil, fmt.Errorf("payment: intake of %s: %w", initWorkflowID, err)
	}
	return keys, nil
}

// Pending is a Phase A workflow and how many payments it is to take on.
type Pending struct {
	InitWorkflowID string
	Payments       int
}

// Pending returns the Phase A workflows whose payments have been RECEIVED
// since before the given time, oldest first, at most max of them.
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
