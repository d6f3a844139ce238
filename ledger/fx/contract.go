package fx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/fx/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Status is a contract's status.
type Status string

// The statuses.
const (
	StatusBooked  Status = "BOOKED"
	StatusUnwound Status = "UNWOUND"
)

// Contract is a booked conversion.
type Contract struct {
	ContractID uuid.UUID `json:"contractId"`
	Reference  string    `json:"reference"`
	AccountID  string    `json:"accountId"`
	Quote
	ValueDate    time.Time  `json:"valueDate"`
	Status       Status     `json:"status"`
	UnwindReason string     `json:"unwindReason,omitempty"`
	UnwoundAt    *time.Time `json:"unwoundAt,omitempty"`
	CreatedAt    time.Time  `json:"createdAt"`
}

// BookRequest asks to book a quote as a contract.
type BookRequest struct {
	AccountID string
	Quote     Quote
	// ValueDate defaults to today (UTC).
	ValueDate time.Time
	// Reference names the writer, '<processId>:BookFx'; required.
	Reference string
	// ContractID defaults to a new UUIDv7.
	ContractID uuid.UUID
}

// Book books the quote for the account, exactly as quoted (the rate and
// amounts the debit used). The quote is checked: its debit amount must
// follow from its credit amount and rate (else INVALID_QUOTE), and its
// debit currency must be the account's (CURRENCY_MISMATCH). The same
// reference again returns the first contract (replayed true).
func Book(ctx context.Context, db ledger.DBTX, r BookRequest) (c Contract, replayed bool, err error) {
	var v field.Invalid
	if !field.ValidID(r.AccountID) {
		v.Add("accountId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if r.Reference == "" || len(r.Reference) > 200 {
		v.Add("reference", "required, at most 200 characters, e.g. '<processId>:BookFx'")
	}
	if err := money.CheckAmount(r.Quote.CreditAmount, r.Quote.CreditCurrency); err != nil {
		v.Add("quote.creditAmount", err.Error())
	}
	if err := money.CheckAmount(r.Quote.DebitAmount, r.Quote.DebitCurrency); err != nil {
		v.Add("quote.debitAmount", err.Error())
	}
	if err := ledger.InvalidArgument("FX booking", v.Fields); err != nil {
		return Contract{}, false, err
	}
	want, err := DebitAmount(r.Quote)
	if err != nil {
		return Contract{}, false, err
	}
	if !want.Equal(r.Quote.DebitAmount) {
		return Contract{}, false, ledger.Refuse(ledger.CodeInvalidQuote,
			fmt.Sprintf("%s %s at %s/%s %s costs %s %s, not %s", r.Quote.CreditAmount, r.Quote.CreditCurrency,
				r.Quote.RateBase, r.Quote.RateQuote, r.Quote.Rate, want, r.Quote.DebitCurrency, r.Quote.DebitAmount), nil)
	}
	q := dbsqlc.New(db)
	cur, err := q.AccountCurrency(ctx, r.AccountID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contract{}, false, ledger.Refuse(ledger.CodeAccountNotFound, "no account "+r.AccountID, map[string]string{"accountId": r.AccountID})
	}
	if err != nil {
		return Contract{}, false, fmt.Errorf("fx: book %s: %w", r.Reference, err)
	}
	if cur != r.Quote.DebitCurrency {
		return Contract{}, false, ledger.Refuse(ledger.CodeCurrencyMismatch,
			fmt.Sprintf("account %s is kept in %s, the quote debits %s", r.AccountID, cur, r.Quote.DebitCurrency), nil)
	}
	// The desk must still deal at the rate quoted (a replay of a booked
	// contract is answered below whatever the rate does since).
	if prior, err := ContractByReference(ctx, db, r.Reference); err == nil {
		if prior.AccountID != r.AccountID || !sameQuote(prior.Quote, r.Quote) {
			return Contract{}, false, ledger.Refuse(ledger.CodeReferenceConflict,
				"reference "+r.Reference+" booked contract "+prior.ContractID.String()+" for another account or quote",
				map[string]string{"reference": r.Reference, "contractId": prior.ContractID.String()})
		}
		return prior, true, nil
	}
	dealable, err := q.RateDealable(ctx, dbsqlc.RateDealableParams{Base: r.Quote.RateBase, Quote: r.Quote.RateQuote})
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !dealable) {
		return Contract{}, false, ledger.Refuse(ledger.CodeFXUnavailable,
			fmt.Sprintf("no dealing at %s/%s now", r.Quote.RateBase, r.Quote.RateQuote),
			map[string]string{"debitCurrency": r.Quote.DebitCurrency, "creditCurrency": r.Quote.CreditCurrency})
	}
	if err != nil {
		return Contract{}, false, fmt.Errorf("fx: rate %s/%s: %w", r.Quote.RateBase, r.Quote.RateQuote, err)
	}
	id := r.ContractID
	if id == uuid.Nil {
		if id, err = uuid.NewV7(); err != nil {
			return Contract{}, false, fmt.Errorf("fx: new contract id: %w", err)
		}
	}
	row, err := q.InsertContract(ctx, dbsqlc.InsertContractParams{
		ContractID: id, Reference: r.Reference, AccountID: r.AccountID,
		DebitCurrency: r.Quote.DebitCurrency, DebitAmount: r.Quote.DebitAmount,
		CreditCurrency: r.Quote.CreditCurrency, CreditAmount: r.Quote.CreditAmount,
		Rate: r.Quote.Rate, RateBase: r.Quote.RateBase, RateQuote: r.Quote.RateQuote, ValueDate: valueDate(r.ValueDate),
	})
	if err == nil {
		return contractFromRow(row), false, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Contract{}, false, fmt.Errorf("fx: book %s: %w", r.Reference, err)
	}
	prior, err := ContractByReference(ctx, db, r.Reference)
	if err != nil {
		return Contract{}, false, err
	}
	if prior.AccountID != r.AccountID || !sameQuote(prior.Quote, r.Quote) {
		return Contract{}, false, ledger.Refuse(ledger.CodeReferenceConflict,
			"reference "+r.Reference+" booked contract "+prior.ContractID.String()+" for another account or quote",
			map[string]string{"reference": r.Reference, "contractId": prior.ContractID.String()})
	}
	return prior, true, nil
}

func sameQuote(a, b Quote) bool {
	return a.DebitCurrency == b.DebitCurrency && a.DebitAmount.Equal(b.DebitAmount) &&
		a.CreditCurrency == b.CreditCurrency && a.CreditAmount.Equal(b.CreditAmount) &&
		a.Rate.Equal(b.Rate) && a.RateBase == b.RateBase && a.RateQuote == b.RateQuote
}

// GetContract returns a contract (FX_CONTRACT_NOT_FOUND if none).
func GetContract(ctx context.Context, db ledger.DBTX, id uuid.UUID) (Contract, error) {
	row, err := dbsqlc.New(db).GetContract(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contract{}, ledger.Refuse(ledger.CodeFXContractNotFound, "no FX contract "+id.String(), nil)
	}
	if err != nil {
		return Contract{}, fmt.Errorf("fx: contract %s: %w", id, err)
	}
	return contractFromRow(row), nil
}

// ContractByReference returns the contract a step booked
// (FX_CONTRACT_NOT_FOUND if none).
func ContractByReference(ctx context.Context, db ledger.DBTX, reference string) (Contract, error) {
	row, err := dbsqlc.New(db).GetContractByReference(ctx, reference)
	if errors.Is(err, pgx.ErrNoRows) {
		return Contract{}, ledger.Refuse(ledger.CodeFXContractNotFound, "no FX contract for reference "+reference, nil)
	}
	if err != nil {
		return Contract{}, fmt.Errorf("fx: contract of %s: %w", reference, err)
	}
	return contractFromRow(row), nil
}

// Unwind unwinds a booked contract, recording why and when. A contract
// already unwound is FX_ALREADY_UNWOUND: an operator's second unwind is a
// mistake worth saying. Compensations use UnwindIfBooked.
func Unwind(ctx context.Context, db ledger.DBTX, id uuid.UUID, reason string) (Contract, error) {
	if reason == "" {
		return Contract{}, ledger.Refuse(ledger.CodeInvalidArgument, "an unwind needs a reason", nil)
	}
	row, err := dbsqlc.New(db).UnwindContract(ctx, dbsqlc.UnwindContractParams{ContractID: id, UnwindReason: &reason})
	if err == nil {
		return contractFromRow(row), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Contract{}, fmt.Errorf("fx: unwind %s: %w", id, err)
	}
	c, err := GetContract(ctx, db, id)
	if err != nil {
		return Contract{}, err
	}
	return Contract{}, ledger.Refuse(ledger.CodeFXAlreadyUnwound,
		fmt.Sprintf("contract %s was unwound at %s (%s)", id, c.UnwoundAt.UTC().Format(time.RFC3339), c.UnwindReason),
		map[string]string{"contractId": id.String()})
}

// UnwindIfBooked unwinds the contract booked under reference if it is
// still booked, for compensations: a contract already unwound, or none at
// all (the booking step never ran), is success with unwound false. c is
// the contract, nil when there is none.
func UnwindIfBooked(ctx context.Context, db ledger.DBTX, reference, reason string) (c *Contract, unwound bool, err error) {
	if reason == "" {
		return nil, false, ledger.Refuse(ledger.CodeInvalidArgument, "an unwind needs a reason", nil)
	}
	row, err := dbsqlc.New(db).UnwindContractByReference(ctx, dbsqlc.UnwindContractByReferenceParams{Reference: reference, UnwindReason: &reason})
	if err == nil {
		k := contractFromRow(row)
		return &k, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, fmt.Errorf("fx: unwind %s: %w", reference, err)
	}
	k, err := ContractByReference(ctx, db, reference)
	if errors.Is(err, ledger.ErrFXContractNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &k, false, nil
}

func contractFromRow(r dbsqlc.FxContract) Contract {
	c := Contract{
		ContractID: r.ContractID, Reference: r.Reference, AccountID: r.AccountID,
		Quote: Quote{
			DebitCurrency: r.DebitCurrency, DebitAmount: r.DebitAmount, CreditCurrency: r.CreditCurrency,
			CreditAmount: r.CreditAmount, Rate: r.Rate, RateBase: r.RateBase, RateQuote: r.RateQuote, QuotedAt: r.CreatedAt,
		},
		ValueDate: r.ValueDate, Status: Status(r.Status), UnwoundAt: r.UnwoundAt, CreatedAt: r.CreatedAt,
	}
	if r.UnwindReason != nil {
		c.UnwindReason = *r.UnwindReason
	}
	return c
}

// valueDate is the date of t (today when zero) as a UTC midnight.
func valueDate(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now().UTC()
	}
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
