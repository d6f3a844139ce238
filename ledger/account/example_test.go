package account_test

import (
	"fmt"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
)

// A payment's debit with the account's fee, the same step delivered
// again, a debit the balance does not cover, and the compensation.
func Example() {
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	spec := account.Spec{AccountID: "ACC-1", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("100.00"), Fee: dec("0.50")}
	if _, created, err := account.Create(ctx, pool, spec); err != nil || !created {
		fmt.Println(created, err)
		return
	}
	// In a process step, db is the step's transaction.
	debit := account.Entry{AccountID: "ACC-1", Amount: dec("40.00"), Currency: "EUR", ChargeFee: true, Reference: "proc-1:CreateTransaction"}
	p, err := account.Debit(ctx, pool, debit)
	fmt.Println(p.Seq, p.Type, p.Amount, p.Fee, p.Balance, p.Replayed, err)

	p, err = account.Debit(ctx, pool, debit) // delivered twice
	fmt.Println(p.Seq, p.Balance, p.Replayed, err)

	_, err = account.Debit(ctx, pool, account.Entry{AccountID: "ACC-1", Amount: dec("60.00"), Currency: "EUR", Reference: "proc-2:CreateTransaction"})
	fmt.Println(ledger.CodeOf(err))

	r, err := account.Reverse(ctx, pool, account.Reversal{TransactionID: p.TransactionID, Reference: "proc-1:ReverseTransaction"})
	fmt.Println(r.Seq, r.Type, r.Amount, r.Balance, err)

	// One query for a whole file's debtor accounts, each in its tenant's ids.
	acc1 := account.Ref{TenantID: "acme", ExternalID: "ACC-1"}
	found, _ := account.Lookup(ctx, pool, []account.Ref{acc1, acc1, {TenantID: "acme", ExternalID: "ACC-9"}, {TenantID: "globex", ExternalID: "ACC-1"}})
	fmt.Println(len(found), found[acc1].Currency, found[acc1].LimitBased)
	// Output:
	// 1 DEBIT 40.5 0.5 59.5 false <nil>
	// 1 59.5 true <nil>
	// INSUFFICIENT_FUNDS
	// 2 REVERSAL 40.5 100 <nil>
	// 1 EUR false
}
