package ledger_test

import (
	"fmt"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
)

// Verify on a consistent ledger, then on one whose balance was edited by
// hand.
func ExampleVerify() {
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	_, _, _ = account.Create(ctx, pool, account.Spec{AccountID: "ACC-1", TenantID: "acme", Currency: "EUR", OpeningBalance: dec("100.00")})
	_, _ = account.Debit(ctx, pool, account.Entry{AccountID: "ACC-1", Amount: dec("30.00"), Currency: "EUR", Reference: "p1:CreateTransaction"})

	violations, _ := ledger.Verify(ctx, pool)
	fmt.Println(len(violations), "violations")

	_, _ = pool.Exec(ctx, `UPDATE account SET balance = 75 WHERE account_id = 'ACC-1'`)
	violations, _ = ledger.Verify(ctx, pool)
	for _, v := range violations {
		fmt.Println(v.Rule, v.Row)
	}
	// Output:
	// 0 violations
	// balance_equation account_id=ACC-1
}

// Refusals carry a code; callers decide on it, never on the message.
func ExampleCodeOf() {
	err := error(ledger.Refuse(ledger.CodeInsufficientFunds, "account ACC-1 has 5.00 available, 10.00 needed", nil))
	wrapped := fmt.Errorf("step CreateTransaction: %w", err)
	fmt.Println(ledger.CodeOf(wrapped))
	fmt.Println(ledger.CodeOf(wrapped) == ledger.CodeInsufficientFunds)
	// Output:
	// INSUFFICIENT_FUNDS
	// true
}
