package fx_test

import (
	"fmt"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/account"
	"github.com/paydispatch/paydispatch/ledger/fx"
)

// A JPY account pays 1,000.00 USD: the quote is taken once, the debit and
// the contract both use it, and the compensation unwinds the contract.
func Example() {
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	_, _, _ = account.Create(ctx, pool, account.Spec{AccountID: "JP-1", TenantID: "acme", Currency: "JPY", OpeningBalance: dec("1000000")})
	_, _ = fx.SetRate(ctx, pool, "USD", "JPY", dec("150.255"), "treasury") // only USD→JPY: the inverse pair is used

	q, err := fx.GetQuote(ctx, pool, "JPY", "USD", dec("1000.00"))
	fmt.Println(q.DebitAmount, q.DebitCurrency, "for", q.CreditAmount, q.CreditCurrency, "at", q.RateBase+"/"+q.RateQuote, q.Rate, err)

	// The process keeps q in its data and hands it to the next steps.
	_, _ = account.Debit(ctx, pool, account.Entry{AccountID: "JP-1", Amount: q.DebitAmount, Currency: q.DebitCurrency, Reference: "proc-1:CreateTransaction"})
	c, replayed, err := fx.Book(ctx, pool, fx.BookRequest{AccountID: "JP-1", Quote: q, Reference: "proc-1:BookFx"})
	fmt.Println(c.Status, c.DebitAmount, replayed, err)

	_, unwound, err := fx.UnwindIfBooked(ctx, pool, "proc-1:BookFx", "payment failed")
	fmt.Println(unwound, err)
	_, unwound, err = fx.UnwindIfBooked(ctx, pool, "proc-1:BookFx", "payment failed") // the compensation delivered again
	fmt.Println(unwound, err)
	_, err = fx.Unwind(ctx, pool, c.ContractID, "by hand")
	fmt.Println(ledger.CodeOf(err))
	// Output:
	// 150255 JPY for 1000 USD at USD/JPY 150.255 <nil>
	// BOOKED 150255 false <nil>
	// true <nil>
	// false <nil>
	// FX_ALREADY_UNWOUND
}
