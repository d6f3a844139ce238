package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/internal/ptr"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Entry asks for a debit or a credit.
type Entry struct {
	AccountID string
	// Amount is positive, in Currency, within its minor units; a debit's
	// fee comes on top.
	Amount   decimal.Decimal
	Currency string
	// ChargeFee adds the account's flat fee to a debit (a payment's debit).
	ChargeFee bool
	// Reference names the writer, '<processId>:<step>'; required. A second
	// posting with it returns the first (Replayed) and changes nothing.
	Reference   string
	Description string
	// ValueDate defaults to today (UTC).
	ValueDate time.Time
	// TransactionID defaults to a new UUIDv7 (time-ordered: the primary
	// key index is appended to, not written all over).
	TransactionID uuid.UUID
}

// Reversal asks for the reversal of a transaction.
type Reversal struct {
	TransactionID uuid.UUID // the one reversed
	Reference     string    // as Entry.Reference
	Description   string
	ValueDate     time.Time
	// NewTransactionID defaults to a new UUIDv7.
	NewTransactionID uuid.UUID
}

// Posted is the outcome of a posting.
type Posted struct {
	Transaction
	// Balance is the account's balance when the call returned.
	Balance decimal.Decimal `json:"balance"`
	// Replayed says the reference had been posted before: Transaction is
	// that first posting, and nothing changed.
	Replayed bool `json:"replayed"`
}

// MaxReferenceLen bounds a reference.
const MaxReferenceLen = 200

// Debit takes e.Amount (plus the account's fee when e.ChargeFee) from the
// account. An account that is not limit-based is never taken below zero:
// INSUFFICIENT_FUNDS, and nothing changes. It runs in the caller's
// transaction and holds the account's row lock until that commits: call
// it last in the step, so the account's other payments wait as little as
// possible.
func Debit(ctx context.Context, db ledger.DBTX, e Entry) (Posted, error) {
	return postEntry(ctx, db, TypeDebit, e)
}

// Credit adds e.Amount to the account.
func Credit(ctx context.Context, db ledger.DBTX, e Entry) (Posted, error) {
	if e.ChargeFee {
		return Posted{}, ledger.Refuse(ledger.CodeInvalidArgument, "a credit charges no fee", nil)
	}
	return postEntry(ctx, db, TypeCredit, e)
}

// Reverse posts the reversal of a DEBIT or CREDIT: the same amount, the
// other way. A transaction is reversed at most once: the same reference
// again is a replay, another reference is ALREADY_REVERSED. Reversing a
// credit is a debit, refused with INSUFFICIENT_FUNDS like any other.
func Reverse(ctx context.Context, db ledger.DBTX, r Reversal) (Posted, error) {
	var v field.Invalid
	if r.TransactionID == uuid.Nil {
		v.Add("transactionId", "required")
	}
	checkReference(&v, r.Reference)
	if err := ledger.InvalidArgument("reversal", v.Fields); err != nil {
		return Posted{}, err
	}
	id, err := newID(r.NewTransactionID)
	if err != nil {
		return Posted{}, err
	}
	return post(ctx, db, dbsqlc.PostParams{
		Kind: string(TypeReversal), Reverses: &r.TransactionID, NewTransactionID: id,
		Reference: r.Reference, Description: ptr.Optional(r.Description), ValueDate: valueDate(r.ValueDate),
	})
}

func postEntry(ctx context.Context, db ledger.DBTX, kind Type, e Entry) (Posted, error) {
	var v field.Invalid
	if !field.ValidID(e.AccountID) {
		v.Add("accountId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if err := money.CheckAmount(e.Amount, e.Currency); err != nil {
		v.Add("amount", err.Error())
	}
	checkReference(&v, e.Reference)
	if err := ledger.InvalidArgument(string(kind), v.Fields); err != nil {
		return Posted{}, err
	}
	id, err := newID(e.TransactionID)
	if err != nil {
		return Posted{}, err
	}
	return post(ctx, db, dbsqlc.PostParams{
		Kind: string(kind), AccountID: &e.AccountID, Currency: &e.Currency, Amount: &e.Amount,
		ChargeFee: e.ChargeFee, NewTransactionID: id, Reference: e.Reference,
		Description: ptr.Optional(e.Description), ValueDate: valueDate(e.ValueDate),
	})
}

// post runs ledger_post and turns its status into a result or a refusal.
func post(ctx context.Context, db ledger.DBTX, p dbsqlc.PostParams) (Posted, error) {
	row, err := dbsqlc.New(db).Post(ctx, p)
	if err != nil {
		var pgErr *pgconn.PgError
		// The reference (or the new id) is being used by another account's
		// posting at this very moment; ledger_post sees a same-account
		// duplicate before inserting, so this is a client's mistake.
		if errors.As(err, &pgErr) && pgErr.Code == "23505" &&
			(pgErr.ConstraintName == "account_transaction_reference_key" || pgErr.ConstraintName == "account_transaction_pkey") {
			return Posted{}, ledger.Refuse(ledger.CodeReferenceConflict,
				"reference "+p.Reference+" (or the transaction id) is used by another posting", map[string]string{"reference": p.Reference})
		}
		return Posted{}, fmt.Errorf("account: %s %s: %w", p.Kind, p.Reference, err)
	}
	return outcome(row, p)
}

// outcome turns ledger_post's status into a result or a refusal.
func outcome(row dbsqlc.PostRow, p dbsqlc.PostParams) (Posted, error) {
	who := target(p)
	switch row.Status {
	case "POSTED", "REPLAY":
		return Posted{Transaction: postedTxn(row), Balance: row.Balance, Replayed: row.Status == "REPLAY"}, nil
	case "ACCOUNT_NOT_FOUND":
		return Posted{}, notFound(who)
	case "TRANSACTION_NOT_FOUND":
		return Posted{}, ledger.Refuse(ledger.CodeTransactionNotFound, "no transaction "+who, map[string]string{"transactionId": who})
	case "CURRENCY_MISMATCH":
		return Posted{}, ledger.Refuse(ledger.CodeCurrencyMismatch, "account "+who+" is not kept in "+ptr.Deref(p.Currency), nil)
	case "INSUFFICIENT_FUNDS":
		return Posted{}, ledger.Refuse(ledger.CodeInsufficientFunds,
			fmt.Sprintf("account %s has %s available, %s needed", who, row.Balance, row.Amount),
			map[string]string{"accountId": who, "balance": row.Balance.String(), "amount": row.Amount.String()})
	case "REFERENCE_CONFLICT":
		return Posted{}, ledger.Refuse(ledger.CodeReferenceConflict,
			"reference "+p.Reference+" was used for a different posting ("+row.Type+" on "+row.AccountID+")",
			map[string]string{"reference": p.Reference, "transactionId": row.TransactionID.String()})
	case "ALREADY_REVERSED":
		return Posted{}, ledger.Refuse(ledger.CodeAlreadyReversed,
			"transaction "+who+" was reversed by "+row.TransactionID.String()+" under reference "+row.Reference,
			map[string]string{"reversal": row.TransactionID.String(), "reference": row.Reference})
	case "NOT_REVERSIBLE":
		return Posted{}, ledger.Refuse(ledger.CodeNotReversible, "transaction "+who+" is itself a reversal", nil)
	}
	return Posted{}, fmt.Errorf("account: ledger_post answered %q", row.Status)
}

func postedTxn(r dbsqlc.PostRow) Transaction {
	t := Transaction{
		TransactionID: r.TransactionID, AccountID: r.AccountID, Seq: r.Seq, Type: Type(r.Type),
		Amount: r.Amount, Fee: r.Fee, BalanceAfter: r.BalanceAfter, Reference: r.Reference,
		Description: r.Description, ValueDate: r.ValueDate, CreatedAt: r.CreatedAt,
	}
	if r.Reverses != uuid.Nil {
		rev := r.Reverses
		t.Reverses = &rev
	}
	return t
}

func target(p dbsqlc.PostParams) string {
	if p.Reverses != nil {
		return p.Reverses.String()
	}
	return ptr.Deref(p.AccountID)
}

func checkReference(v *field.Invalid, ref string) {
	if ref == "" || len(ref) > MaxReferenceLen {
		v.Add("reference", fmt.Sprintf("required, at most %d characters, e.g. '<processId>:CreateTransaction'", MaxReferenceLen))
	}
}

func newID(id uuid.UUID) (uuid.UUID, error) {
	if id != uuid.Nil {
		return id, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.Nil, fmt.Errorf("account: new transaction id: %w", err)
	}
	return id, nil
}

// valueDate is the date of t (today when zero) as a UTC midnight, the form
// pgx writes a date from.
func valueDate(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now().UTC()
	}
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// ReverseIfPosted reverses the transaction posted under postedReference
// (the debit step's), for compensations that may not know its id: no
// such transaction (the step never ran, or was refused) is success with
// reversed false. Delivered again, it returns the same reversal
// (Replayed).
func ReverseIfPosted(ctx context.Context, db ledger.DBTX, postedReference string, r Reversal) (p Posted, reversed bool, err error) {
	row, err := dbsqlc.New(db).GetTransactionByReference(ctx, postedReference)
	if errors.Is(err, pgx.ErrNoRows) {
		return Posted{}, false, nil
	}
	if err != nil {
		return Posted{}, false, fmt.Errorf("account: transaction of %s: %w", postedReference, err)
	}
	r.TransactionID = row.TransactionID
	p, err = Reverse(ctx, db, r)
	if err != nil {
		return Posted{}, false, err
	}
	return p, true, nil
}

// Outcome is one entry's outcome in PostMany: Posted, or Err (a
// *ledger.Refusal: INSUFFICIENT_FUNDS, ACCOUNT_NOT_FOUND, ...) for an entry
// refused on its own.
type Outcome struct {
	Posted
	Err error
}

// DebitMany posts a group's debits in one statement (ledger_post_many):
// what Debit does for each, each account locked once. An entry refused
// (an account short of money, an unknown account, a reference used by
// another posting) changes nothing and fails only itself, in its Outcome;
// the others are posted, and a reference posted before is replayed. An
// account's entries are taken in the order given, so one short of money
// pays the first it can. The returned error is for the statement itself
// (and the references must be distinct): the caller's transaction is then
// unusable, as with any failed statement. Like Debit, it holds the
// accounts' row locks until the caller's transaction commits.
func DebitMany(ctx context.Context, db ledger.DBTX, entries []Entry) ([]Outcome, error) {
	return postMany(ctx, db, TypeDebit, entries)
}

func postMany(ctx context.Context, db ledger.DBTX, kind Type, entries []Entry) ([]Outcome, error) {
	out := make([]Outcome, len(entries))
	p := dbsqlc.PostManyParams{Kind: string(kind)}
	seen := make(map[string]bool, len(entries))
	// which entry of entries each row of the statement is (invalid ones
	// are answered here and not sent)
	var sent []int
	for i, e := range entries {
		var v field.Invalid
		if !field.ValidID(e.AccountID) {
			v.Add("accountId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
		}
		if err := money.CheckAmount(e.Amount, e.Currency); err != nil {
			v.Add("amount", err.Error())
		}
		checkReference(&v, e.Reference)
		if seen[e.Reference] {
			v.Add("reference", "used by another entry of the group")
		}
		if err := ledger.InvalidArgument(string(kind), v.Fields); err != nil {
			out[i].Err = err
			continue
		}
		seen[e.Reference] = true
		id, err := newID(e.TransactionID)
		if err != nil {
			return nil, err
		}
		sent = append(sent, i)
		p.AccountIds = append(p.AccountIds, e.AccountID)
		p.Currencies = append(p.Currencies, e.Currency)
		p.Amounts = append(p.Amounts, e.Amount)
		p.ChargeFees = append(p.ChargeFees, e.ChargeFee)
		p.TransactionIds = append(p.TransactionIds, id)
		p.Refs = append(p.Refs, e.Reference)
		p.Descriptions = append(p.Descriptions, e.Description)
		p.ValueDates = append(p.ValueDates, valueDate(e.ValueDate))
	}
	if len(sent) == 0 {
		return out, nil
	}
	rows, err := dbsqlc.New(db).PostMany(ctx, p)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" &&
			(pgErr.ConstraintName == "account_transaction_reference_key" || pgErr.ConstraintName == "account_transaction_pkey") {
			// Another account's posting took one of the references at this
			// very moment: the group cannot tell whose, so it is the
			// statement's error.
			return nil, ledger.Refuse(ledger.CodeReferenceConflict, "a reference (or transaction id) of the group is used by another posting", nil)
		}
		return nil, fmt.Errorf("account: %d %ss: %w", len(sent), kind, err)
	}
	if len(rows) != len(sent) {
		return nil, fmt.Errorf("account: ledger_post_many answered %d rows for %d entries", len(rows), len(sent))
	}
	for _, r := range rows {
		if r.Ord < 1 || int(r.Ord) > len(sent) {
			return nil, fmt.Errorf("account: ledger_post_many answered entry %d of %d", r.Ord, len(sent))
		}
		i := sent[r.Ord-1]
		e := entries[i]
		one := dbsqlc.PostRow{
			Status: r.Status, TransactionID: r.TransactionID, AccountID: r.AccountID, Seq: r.Seq, Type: r.Type,
			Amount: r.Amount, Fee: r.Fee, BalanceAfter: r.BalanceAfter, Reverses: r.Reverses, Reference: r.Reference,
			Description: r.Description, ValueDate: r.ValueDate, CreatedAt: r.CreatedAt, Balance: r.Balance,
		}
		out[i].Posted, out[i].Err = outcome(one, dbsqlc.PostParams{
			Kind: string(kind), AccountID: &e.AccountID, Currency: &e.Currency, Reference: e.Reference,
		})
	}
	return out, nil
}
