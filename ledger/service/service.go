package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
	"github.com/paydispatch/paydispatch/ledger/limit"
)

// RecentTransactions is how many transactions an account view shows.
const RecentTransactions = 20

// DB is a pool: the service begins its own transactions.
type DB interface {
	ledger.DBTX
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Service serves the account and FX-rate endpoints.
type Service struct {
	db  DB
	now func() time.Time
}

// New returns a Service on db.
func New(db DB) *Service { return &Service{db: db, now: time.Now} }

// NewAccount is an account with its limits, as created over HTTP.
type NewAccount struct {
	account.Spec
	Limits []limit.Limit `json:"limits"`
}

// AccountView is an account as shown: balance, limits with the
// utilization of their current windows, latest transactions first.
type AccountView struct {
	account.Account
	Limits             []limit.Usage         `json:"limits"`
	RecentTransactions []account.Transaction `json:"recentTransactions"`
}

// Validate reports every bad field of a new account (JSON names).
func Validate(n NewAccount) error {
	var fields []field.Error
	for _, err := range []error{n.Spec.Validate(), limit.Validate(n.Currency, n.Limits)} {
		var bad *field.Invalid
		if errors.As(err, &bad) {
			fields = append(fields, bad.Fields...)
		}
	}
	return ledger.InvalidArgument("account", fields)
}

// CreateAccount creates the account and its limits in one transaction.
// n.AccountID is the tenant's id for it: the account is its tenant's,
// under the key account.Key(tenant, id), and another tenant may use the
// same id for its own. The same account and limits again: the existing
// account, created false. A different spec or different limits under the
// tenant's id: ACCOUNT_CONFLICT, and nothing changes.
func (s *Service) CreateAccount(ctx context.Context, n NewAccount) (AccountView, bool, error) {
	if err := Validate(n); err != nil {
		return AccountView{}, false, err
	}
	spec := n.Spec
	spec.ExternalID, spec.AccountID = n.AccountID, account.Key(n.TenantID, n.AccountID)
	var created bool
	err := pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{}, func(tx pgx.Tx) error {
		acct, isNew, err := account.Create(ctx, tx, spec)
		if err != nil {
			return err
		}
		if created = isNew; created {
			return limit.Set(ctx, tx, acct.AccountID, n.Currency, n.Limits, s.now())
		}
		have, err := limit.Configured(ctx, tx, acct.AccountID)
		if err != nil {
			return err
		}
		if !sameLimits(have, n.Limits) {
			return ledger.Refuse(ledger.CodeAccountConflict, "account "+n.AccountID+" exists with different limits", nil)
		}
		return nil
	})
	if err != nil {
		return AccountView{}, false, err
	}
	v, err := s.Account(ctx, n.TenantID, n.AccountID)
	return v, created, err
}

func sameLimits(have, want []limit.Limit) bool {
	if len(have) != len(want) {
		return false
	}
	amounts := make(map[limit.Period]decimal.Decimal, len(have))
	for _, l := range have {
		amounts[l.Period] = l.Amount
	}
	for _, l := range want {
		a, ok := amounts[l.Period]
		if !ok || !a.Equal(l.Amount) {
			return false
		}
	}
	return true
}

// Account returns the view of the tenant's account with the id it chose
// (ACCOUNT_NOT_FOUND if none); an empty tenant finds the id in any tenant
// (ACCOUNT_AMBIGUOUS when several use it). Its reads run in one
// repeatable-read transaction, so the balance and the transactions shown
// agree.
func (s *Service) Account(ctx context.Context, tenantID, id string) (AccountView, error) {
	var v AccountView
	err := pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		a, err := account.Find(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		limits, err := limit.Current(ctx, tx, a.AccountID, s.now())
		if err != nil {
			return err
		}
		txns, err := account.Transactions(ctx, tx, a.AccountID, RecentTransactions)
		if err != nil {
			return err
		}
		v = AccountView{Account: a, Limits: limits, RecentTransactions: txns}
		return nil
	})
	if err != nil {
		return AccountView{}, fmt.Errorf("service: account %s: %w", id, err)
	}
	return v, nil
}

// SetRate creates or replaces a rate.
func (s *Service) SetRate(ctx context.Context, r fx.Rate) (fx.Rate, error) {
	return fx.Set(ctx, s.db, r)
}

// SetRateTx is SetRate inside the caller's transaction: the rate commits
// with the caller's other writes (an admin change's audit entry), or not
// at all.
func (s *Service) SetRateTx(ctx context.Context, tx pgx.Tx, r fx.Rate) (fx.Rate, error) {
	return fx.Set(ctx, tx, r)
}

// Rates lists the rates.
func (s *Service) Rates(ctx context.Context) ([]fx.Rate, error) { return fx.Rates(ctx, s.db) }
