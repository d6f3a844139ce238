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

// RateDecimals is the precision a rate is kept to.
const RateDecimals = 12

// maxRate bounds a rate below the column's sixteen integer digits
// (numeric(28,12)). It is a rate's bound, not an amount's: the amount cap
// is money.MaxAmount, whose sums must fit the amount columns.
var maxRate = decimal.New(1, 15)

// Rate says 1 Base = Rate Quote.
type Rate struct {
	Base  string          `json:"base"`
	Quote string          `json:"quote"`
	Rate  decimal.Decimal `json:"rate"`
	// Dealable false: quotes still use the rate, contracts at it are
	// refused (FX_UNAVAILABLE) — dealing suspended.
	Dealable  bool      `json:"dealable"`
	UpdatedAt time.Time `json:"updatedAt"`
	SetBy     string    `json:"setBy"`
}

// ValidateRate reports each bad field (base, quote, rate) as
// INVALID_ARGUMENT.
func ValidateRate(base, quote string, rate decimal.Decimal) error {
	var v field.Invalid
	if !money.Valid(base) {
		v.Add("base", fmt.Sprintf("%q is not an ISO 4217 currency code such as EUR", base))
	}
	if !money.Valid(quote) {
		v.Add("quote", fmt.Sprintf("%q is not an ISO 4217 currency code such as USD", quote))
	} else if quote == base {
		v.Add("quote", "must differ from base")
	}
	switch {
	case !money.Plausible(rate):
		v.Add("rate", fmt.Sprintf("not a plausible rate (exponent %d)", rate.Exponent()))
	case !rate.IsPositive():
		v.Add("rate", "must be greater than zero")
	case !rate.LessThan(maxRate):
		v.Add("rate", "must be below "+maxRate.String())
	case !rate.Equal(rate.Truncate(RateDecimals)):
		v.Add("rate", fmt.Sprintf("at most %d decimals", RateDecimals))
	}
	return ledger.InvalidArgument("rate", v.Fields)
}

// SetRate creates or replaces the rate of base in quote, dealable; setBy
// says who (an operator, a feed).
func SetRate(ctx context.Context, db ledger.DBTX, base, quote string, rate decimal.Decimal, setBy string) (Rate, error) {
	return Set(ctx, db, Rate{Base: base, Quote: quote, Rate: rate, Dealable: true, SetBy: setBy})
}

// Set creates or replaces r (its Base, Quote, Rate, Dealable and SetBy).
func Set(ctx context.Context, db ledger.DBTX, r Rate) (Rate, error) {
	base, quote, rate, setBy := r.Base, r.Quote, r.Rate, r.SetBy
	if err := ValidateRate(base, quote, rate); err != nil {
		return Rate{}, err
	}
	if setBy == "" {
		return Rate{}, ledger.Refuse(ledger.CodeInvalidArgument, "say who sets the rate", nil)
	}
	row, err := dbsqlc.New(db).UpsertRate(ctx, dbsqlc.UpsertRateParams{Base: base, Quote: quote, Rate: rate, SetBy: setBy, Dealable: r.Dealable})
	if err != nil {
		return Rate{}, fmt.Errorf("fx: set rate %s/%s: %w", base, quote, err)
	}
	return rateFromRow(row), nil
}

// Rates lists every rate, by pair.
func Rates(ctx context.Context, db ledger.DBTX) ([]Rate, error) {
	rows, err := dbsqlc.New(db).ListRates(ctx)
	if err != nil {
		return nil, fmt.Errorf("fx: list rates: %w", err)
	}
	out := make([]Rate, len(rows))
	for i, r := range rows {
		out[i] = rateFromRow(r)
	}
	return out, nil
}

func rateFromRow(r dbsqlc.FxRate) Rate {
	return Rate{Base: r.Base, Quote: r.Quote, Rate: r.Rate, Dealable: r.Dealable, UpdatedAt: r.UpdatedAt, SetBy: r.SetBy}
}
