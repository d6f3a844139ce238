package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Spec is what an account is created with; it never changes afterwards.
type Spec struct {
	AccountID      string          `json:"accountId"`
	TenantID       string          `json:"tenantId"`
	Currency       string          `json:"currency"`
	OpeningBalance decimal.Decimal `json:"openingBalance"`
	LimitBased     bool            `json:"limitBased"`
	// Fee is the flat fee per payment, in the account currency (0: none).
	Fee decimal.Decimal `json:"fee"`
}

// Account is a stored account.
type Account struct {
	Spec
	Balance   decimal.Decimal `json:"balance"`
	TxnSeq    int64           `json:"txnSeq"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// Validate reports every bad field of s (JSON names) as INVALID_ARGUMENT.
func (s Spec) Validate() error {
	var v ledger.Invalid
	if !ledger.ValidID(s.AccountID) {
		v.Add("accountId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if !ledger.ValidID(s.TenantID) {
		v.Add("tenantId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	digits, ok := money.MinorUnits(s.Currency)
	if !ok {
		v.Add("currency", fmt.Sprintf("%q is not an ISO 4217 currency code such as EUR", s.Currency))
	}
	check := func(field string, d decimal.Decimal) {
		switch {
		case !money.Plausible(d):
			v.Add(field, fmt.Sprintf("not a plausible amount (exponent %d)", d.Exponent()))
		case d.IsNegative():
			v.Add(field, "must not be negative")
		case !d.LessThan(money.MaxAmount):
			v.Add(field, "must be below "+money.MaxAmount.String())
		case ok && !d.Equal(d.Truncate(digits)):
			v.Add(field, fmt.Sprintf("%s has more decimals than %s's %d", d, s.Currency, digits))
		}
	}
	check("balance", s.OpeningBalance)
	check("fee", s.Fee)
	return v.Err("account")
}

// Equal reports whether two specs describe the same account (amounts by
// value: 100 equals 100.00).
func (s Spec) Equal(o Spec) bool {
	return s.AccountID == o.AccountID && s.TenantID == o.TenantID && s.Currency == o.Currency &&
		s.OpeningBalance.Equal(o.OpeningBalance) && s.LimitBased == o.LimitBased && s.Fee.Equal(o.Fee)
}

// Create stores a new account with its opening balance. Idempotent by id:
// the same spec again returns the stored account and created false; a
// different spec under an existing id is ACCOUNT_CONFLICT.
func Create(ctx context.Context, db ledger.DBTX, s Spec) (acct Account, created bool, err error) {
	if err := s.Validate(); err != nil {
		return Account{}, false, err
	}
	q := dbsqlc.New(db)
	row, err := q.InsertAccount(ctx, dbsqlc.InsertAccountParams{
		AccountID: s.AccountID, TenantID: s.TenantID, Currency: s.Currency,
		OpeningBalance: s.OpeningBalance, LimitBased: s.LimitBased, Fee: s.Fee,
	})
	if err == nil {
		return fromRow(row), true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Account{}, false, fmt.Errorf("account: create %s: %w", s.AccountID, err)
	}
	existing, err := Get(ctx, db, s.AccountID)
	if err != nil {
		return Account{}, false, err
	}
	if !existing.Spec.Equal(s) {
		return Account{}, false, ledger.Errorf(ledger.CodeAccountConflict,
			"account "+s.AccountID+" exists with a different tenant, currency, opening balance, fee or limit basis", nil)
	}
	return existing, false, nil
}

// Get returns an account (ACCOUNT_NOT_FOUND if there is none).
func Get(ctx context.Context, db ledger.DBTX, id string) (Account, error) {
	row, err := dbsqlc.New(db).GetAccount(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, notFound(id)
	}
	if err != nil {
		return Account{}, fmt.Errorf("account: get %s: %w", id, err)
	}
	return fromRow(row), nil
}

// Summary is what Phase A needs to know of a debtor account.
type Summary struct {
	AccountID  string          `json:"accountId"`
	TenantID   string          `json:"tenantId"`
	Currency   string          `json:"currency"`
	LimitBased bool            `json:"limitBased"`
	Fee        decimal.Decimal `json:"fee"`
}

// Lookup returns the summaries of the given accounts in one query, keyed
// by id; ids with no account are absent from the map.
func Lookup(ctx context.Context, db ledger.DBTX, ids []string) (map[string]Summary, error) {
	// A bulk file names a payroll account a thousand times: ask once.
	seen := make(map[string]bool, len(ids))
	unique := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	rows, err := dbsqlc.New(db).LookupAccounts(ctx, unique)
	if err != nil {
		return nil, fmt.Errorf("account: lookup %d accounts: %w", len(ids), err)
	}
	out := make(map[string]Summary, len(rows))
	for _, r := range rows {
		out[r.AccountID] = Summary{AccountID: r.AccountID, TenantID: r.TenantID, Currency: r.Currency, LimitBased: r.LimitBased, Fee: r.Fee}
	}
	return out, nil
}

func fromRow(r dbsqlc.Account) Account {
	return Account{
		Spec: Spec{
			AccountID: r.AccountID, TenantID: r.TenantID, Currency: r.Currency,
			OpeningBalance: r.OpeningBalance, LimitBased: r.LimitBased, Fee: r.Fee,
		},
		Balance: r.Balance, TxnSeq: r.TxnSeq, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func notFound(id string) error {
	return ledger.Errorf(ledger.CodeAccountNotFound, "no account "+id, map[string]string{"accountId": id})
}
