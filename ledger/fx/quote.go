package fx

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/fx/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Quote is a firm price for one conversion: the payment's CreditAmount in
// CreditCurrency costs DebitAmount in DebitCurrency (the account's). It is
// a value: the process keeps it in its data and hands the same Quote to
// the debit and to the contract booking, so both use one rate and one
// amount whatever the rates do meanwhile.
type Quote struct {
	DebitCurrency  string          `json:"debitCurrency"`
	DebitAmount    decimal.Decimal `json:"debitAmount"`
	CreditCurrency string          `json:"creditCurrency"`
	CreditAmount   decimal.Decimal `json:"creditAmount"`
	// The rate used, as it is stored: 1 RateBase = Rate RateQuote. The
	// pair is (DebitCurrency, CreditCurrency), or the inverse pair when
	// only that one has a rate.
	Rate      decimal.Decimal `json:"rate"`
	RateBase  string          `json:"rateBase"`
	RateQuote string          `json:"rateQuote"`
	QuotedAt  time.Time       `json:"quotedAt"`
}

// GetQuote prices creditAmount of creditCurrency (the payment) in
// debitCurrency (the account). The direct rate debit→credit is used when
// there is one (debit = credit / rate), else the inverse rate
// credit→debit (debit = credit × rate); never a cross through a third
// currency. No rate either way: FX_UNAVAILABLE. The debit amount is
// rounded half-even to the debit currency's minor units, exactly (no
// intermediate rounding of the quotient).
func GetQuote(ctx context.Context, db ledger.DBTX, debitCurrency, creditCurrency string, creditAmount decimal.Decimal) (Quote, error) {
	var v field.Invalid
	if !money.Valid(debitCurrency) {
		v.Add("debitCurrency", fmt.Sprintf("%q is not an ISO 4217 currency code", debitCurrency))
	}
	if err := money.CheckAmount(creditAmount, creditCurrency); err != nil {
		v.Add("creditAmount", err.Error())
	}
	if debitCurrency == creditCurrency {
		v.Add("creditCurrency", "the same as the debit currency: nothing to convert")
	}
	if err := ledger.InvalidArgument("quote", v.Fields); err != nil {
		return Quote{}, err
	}
	rows, err := dbsqlc.New(db).RatePair(ctx, dbsqlc.RatePairParams{DebitCurrency: debitCurrency, CreditCurrency: creditCurrency})
	if err != nil {
		return Quote{}, fmt.Errorf("fx: rate %s/%s: %w", debitCurrency, creditCurrency, err)
	}
	var use *dbsqlc.FxRate
	for i, r := range rows {
		if r.Base == debitCurrency || use == nil {
			use = &rows[i]
		}
	}
	if use == nil {
		return Quote{}, ledger.Refuse(ledger.CodeFXUnavailable,
			fmt.Sprintf("no rate for %s/%s nor %s/%s", debitCurrency, creditCurrency, creditCurrency, debitCurrency),
			map[string]string{"debitCurrency": debitCurrency, "creditCurrency": creditCurrency})
	}
	q := Quote{
		DebitCurrency: debitCurrency, CreditCurrency: creditCurrency, CreditAmount: creditAmount,
		Rate: use.Rate, RateBase: use.Base, RateQuote: use.Quote, QuotedAt: time.Now().UTC(),
	}
	q.DebitAmount, err = DebitAmount(q)
	if err != nil {
		return Quote{}, err
	}
	return q, nil
}

// DebitAmount computes what q's credit amount costs in its debit
// currency at its rate, rounded half-even to the debit currency's minor
// units. Book recomputes it to check a quote it is handed.
func DebitAmount(q Quote) (decimal.Decimal, error) {
	digits, ok := money.MinorUnits(q.DebitCurrency)
	if !ok || !money.Plausible(q.Rate) || !q.Rate.IsPositive() {
		return decimal.Decimal{}, ledger.Refuse(ledger.CodeInvalidQuote, "a quote needs a debit currency and a positive rate", nil)
	}
	var debit decimal.Decimal
	switch {
	case q.RateBase == q.DebitCurrency && q.RateQuote == q.CreditCurrency:
		debit = divHalfEven(q.CreditAmount, q.Rate, digits)
	case q.RateBase == q.CreditCurrency && q.RateQuote == q.DebitCurrency:
		debit = q.CreditAmount.Mul(q.Rate).RoundBank(digits)
	default:
		return decimal.Decimal{}, ledger.Refuse(ledger.CodeInvalidQuote,
			fmt.Sprintf("rate %s/%s does not price %s in %s", q.RateBase, q.RateQuote, q.CreditCurrency, q.DebitCurrency), nil)
	}
	if !debit.IsPositive() {
		return decimal.Decimal{}, ledger.Refuse(ledger.CodeInvalidArgument,
			fmt.Sprintf("%s %s is less than one minor unit of %s", q.CreditAmount, q.CreditCurrency, q.DebitCurrency), nil)
	}
	return debit, nil
}

// divHalfEven returns a / b rounded half-even to digits decimals, decided
// on the exact remainder (a / b rounded to 16 places first and then to
// digits could round a value just above or below a half the wrong way).
func divHalfEven(a, b decimal.Decimal, digits int32) decimal.Decimal {
	q, rem := a.QuoRem(b, digits) // a = q*b + rem, q truncated at digits
	unit := decimal.New(1, -digits)
	switch rem.Mul(decimal.NewFromInt(2)).Cmp(b.Mul(unit)) {
	case 1:
		return q.Add(unit)
	case 0:
		if !q.Shift(digits).Mod(decimal.NewFromInt(2)).IsZero() {
			return q.Add(unit)
		}
	}
	return q
}
