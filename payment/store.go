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

	"github.com/paydispatch/paydispatch/payment/internal/dbsqlc"
)

// ErrNotFound: no such payment.
var ErrNotFound = errors.New("payment: not found")

// ErrConflict: a payment with this id exists with a different request.
var ErrConflict = errors.New("payment: id already used for a different payment")

// ErrWrongStatus: a status change's guard did not match.
var ErrWrongStatus = errors.New("payment: not in the expected status")

// Payment is a stored payment.
type Payment struct {
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

// Record stores a payment in status with reason, once: a replay of the
// same request is a no-op (created false); another request under the same
// id is ErrConflict. m may be nil only for a REJECTED payment.
func (s *Store) Record(ctx context.Context, r Request, m *Money, status Status, reason string, scheduled *time.Time) (created bool, err error) {
	raw, err := canonical(r)
	if err != nil {
		return false, err
	}
	p := dbsqlc.InsertPaymentParams{
		PaymentID: r.PaymentID, TenantID: r.TenantID, DebtorAccount: r.DebtorAccount, CreditorName: r.Creditor.Name,
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
	existing, err := s.Get(ctx, r.PaymentID)
	if err != nil {
		return false, err
	}
	prev, err := canonical(existing.Request)
	if err != nil {
		return false, err
	}
	if !bytes.Equal(prev, raw) {
		return false, fmt.Errorf("payment %s: %w", r.PaymentID, ErrConflict)
	}
	return false, nil
}

// Recording is one payment for RecordMany: Record's arguments.
type Recording struct {
	Request   Request
	Money     *Money
	Status    Status
	Reason    string
	Scheduled *time.Time
}

// RecordMany is Record for many payments, in one statement: a payment
// whose id exists already is compared as Record compares it (the same
// request is a replay; another is ErrConflict).
func (s *Store) RecordMany(ctx context.Context, rs []Recording) error {
	if len(rs) == 0 {
		return nil
	}
	type row struct {
		PaymentID              string           `json:"payment_id"`
		TenantID               string           `json:"tenant_id"`
		DebtorAccount          string           `json:"debtor_account"`
		Amount                 *decimal.Decimal `json:"amount"`
		Currency               *string          `json:"currency"`
		CreditorName           string           `json:"creditor_name"`
		CreditorIBAN           *string          `json:"creditor_iban"`
		CreditorBIC            *string          `json:"creditor_bic"`
		RemittanceInfo         *string          `json:"remittance_info"`
		RequestedExecutionTime time.Time        `json:"requested_execution_time"`
		ScheduledExecutionTime *time.Time       `json:"scheduled_execution_time"`
		Status                 string           `json:"status"`
		StatusReason           *string          `json:"status_reason"`
		Request                json.RawMessage  `json:"request"`
	}
	rows := make([]row, len(rs))
	for i, x := range rs {
		raw, err := canonical(x.Request)
		if err != nil {
			return err
		}
		r := x.Request
		rows[i] = row{PaymentID: r.PaymentID, TenantID: r.TenantID, DebtorAccount: r.DebtorAccount, CreditorName: r.Creditor.Name,
			CreditorIBAN: opt(r.Creditor.IBAN), CreditorBIC: opt(r.Creditor.BIC), RemittanceInfo: opt(r.RemittanceInfo),
			RequestedExecutionTime: r.RequestedExecutionTime, ScheduledExecutionTime: x.Scheduled,
			Status: string(x.Status), StatusReason: opt(x.Reason), Request: raw}
		if x.Money != nil {
			rows[i].Amount, rows[i].Currency = &x.Money.Amount, &x.Money.Currency
		}
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("payment: record batch: %w", err)
	}
	inserted, err := s.q.InsertPayments(ctx, raw)
	if err != nil {
		return fmt.Errorf("payment: record batch of %d: %w", len(rs), err)
	}
	if len(inserted) == len(rs) {
		return nil
	}
	fresh := make(map[string]bool, len(inserted))
	for _, id := range inserted {
		fresh[id] = true
	}
	for i, x := range rs {
		if fresh[x.Request.PaymentID] {
			continue
		}
		existing, err := s.Get(ctx, x.Request.PaymentID)
		if err != nil {
			return err
		}
		prev, err := canonical(existing.Request)
		if err != nil {
			return err
		}
		if !bytes.Equal(prev, rows[i].Request) {
			return fmt.Errorf("payment %s: %w", x.Request.PaymentID, ErrConflict)
		}
	}
	return nil
}

// canonical is the request's JSON with normalized values, for comparison.
func canonical(r Request) ([]byte, error) {
	r.RequestedExecutionTime = r.RequestedExecutionTime.UTC()
	return json.Marshal(r)
}

// Get returns a payment.
func (s *Store) Get(ctx context.Context, id string) (Payment, error) {
	row, err := s.q.GetPayment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, fmt.Errorf("payment %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("payment: get %s: %w", id, err)
	}
	var req Request
	if err := json.Unmarshal(row.Request, &req); err != nil {
		return Payment{}, fmt.Errorf("payment: stored request of %s: %w", id, err)
	}
	var money *Money
	if row.Amount != nil && row.Currency != nil {
		money = &Money{Amount: *row.Amount, Currency: *row.Currency}
	}
	return Payment{
		Request: req, Money: money,
		ScheduledExecutionTime: row.ScheduledExecutionTime, Status: Status(row.Status),
		StatusReason: deref(row.StatusReason), ExecutionRef: deref(row.ExecutionRef),
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}, nil
}

// Transition moves a payment from one status to another in one guarded
// statement. Finding it already in the target status is success (a retried
// activity); any other status is ErrWrongStatus.
func (s *Store) Transition(ctx context.Context, id string, from, to Status, reason string) error {
	_, err := s.q.TransitionPayment(ctx, dbsqlc.TransitionPaymentParams{
		PaymentID: id, FromStatus: string(from), ToStatus: string(to), StatusReason: opt(reason),
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

// SetExecutionRef records which execution handled the payment.
func (s *Store) SetExecutionRef(ctx context.Context, id, ref string) error {
	if _, err := s.q.SetExecutionRef(ctx, dbsqlc.SetExecutionRefParams{PaymentID: id, ExecutionRef: &ref}); err != nil {
		return fmt.Errorf("payment: set execution ref of %s: %w", id, err)
	}
	return nil
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
