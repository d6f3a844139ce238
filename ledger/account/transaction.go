package account

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account/internal/dbsqlc"
)

// Type is a transaction's type.
type Type string

// The types: a REVERSAL moves the amount of the transaction it reverses
// the other way.
const (
	TypeDebit    Type = "DEBIT"
	TypeCredit   Type = "CREDIT"
	TypeReversal Type = "REVERSAL"
)

// Transaction is one posting on an account.
type Transaction struct {
	TransactionID uuid.UUID `json:"transactionId"`
	AccountID     string    `json:"accountId"`
	// Seq is the account's 1, 2, 3, ...: BalanceAfter follows from the
	// transaction with Seq - 1 (or the opening balance) and Amount.
	Seq  int64 `json:"seq"`
	Type Type  `json:"type"`
	// Amount is what moved, the fee included.
	Amount       decimal.Decimal `json:"amount"`
	Fee          decimal.Decimal `json:"fee"`
	BalanceAfter decimal.Decimal `json:"balanceAfter"`
	// Reverses is the reversed transaction (REVERSAL only).
	Reverses    *uuid.UUID `json:"reverses,omitempty"`
	Reference   string     `json:"reference"`
	Description string     `json:"description,omitempty"`
	ValueDate   time.Time  `json:"valueDate"`
	CreatedAt   time.Time  `json:"createdAt"`
}

// Transactions returns an account's latest transactions, newest first, at
// most limit of them.
func Transactions(ctx context.Context, db ledger.DBTX, accountID string, limit int) ([]Transaction, error) {
	rows, err := dbsqlc.New(db).RecentTransactions(ctx, dbsqlc.RecentTransactionsParams{AccountID: accountID, MaxRows: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("account: transactions of %s: %w", accountID, err)
	}
	out := make([]Transaction, len(rows))
	for i, r := range rows {
		out[i] = txnFromRow(r)
	}
	return out, nil
}

// GetTransaction returns one transaction (TRANSACTION_NOT_FOUND if none).
func GetTransaction(ctx context.Context, db ledger.DBTX, id uuid.UUID) (Transaction, error) {
	row, err := dbsqlc.New(db).GetTransaction(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Transaction{}, ledger.Refuse(ledger.CodeTransactionNotFound, "no transaction "+id.String(), nil)
	}
	if err != nil {
		return Transaction{}, fmt.Errorf("account: transaction %s: %w", id, err)
	}
	return txnFromRow(row), nil
}

func txnFromRow(r dbsqlc.AccountTransaction) Transaction {
	t := Transaction{
		TransactionID: r.TransactionID, AccountID: r.AccountID, Seq: r.Seq, Type: Type(r.Type),
		Amount: r.Amount, Fee: r.Fee, BalanceAfter: r.BalanceAfter, Reverses: r.Reverses,
		Reference: r.Reference, ValueDate: r.ValueDate, CreatedAt: r.CreatedAt,
	}
	if r.Description != nil {
		t.Description = *r.Description
	}
	return t
}
