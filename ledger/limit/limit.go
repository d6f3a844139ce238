package limit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/limit/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// Limit is an account's limit for one period, in the account currency.
type Limit struct {
	Period Period          `json:"period"`
	Amount decimal.Decimal `json:"amount"`
}

// Validate reports each bad limit as INVALID_ARGUMENT, fields named
// limits[i].period / limits[i].amount.
func Validate(currency string, limits []Limit) error {
	var v field.Invalid
	seen := map[Period]bool{}
	for i, l := range limits {
		field := fmt.Sprintf("limits[%d]", i)
		switch _, ok := ParsePeriod(string(l.Period)); {
		case !ok:
			v.Add(field+".period", fmt.Sprintf("%q is not one of MINUTE, HOUR, DAY, WEEK, MONTH", l.Period))
		case seen[l.Period]:
			v.Add(field+".period", fmt.Sprintf("%s is given twice", l.Period))
		}
		seen[l.Period] = true
		switch {
		case !money.Valid(currency):
			// The currency is reported on its own; check what can be.
			if !money.Plausible(l.Amount) || !l.Amount.IsPositive() {
				v.Add(field+".amount", "must be greater than zero")
			}
		default:
			if err := money.CheckAmount(l.Amount, currency); err != nil {
				v.Add(field+".amount", err.Error())
			}
		}
	}
	return ledger.InvalidArgument("limits", v.Fields)
}

// Set replaces the account's limits with limits (periods not given are
// removed). A changed limit applies at once to the windows still open at
// now, but never below what they have booked already: a lowered limit
// leaves such a window full, so utilization never exceeds the limit.
// Call it in a transaction: it is three statements.
func Set(ctx context.Context, db ledger.DBTX, accountID, currency string, limits []Limit, now time.Time) error {
	if err := Validate(currency, limits); err != nil {
		return err
	}
	periods := make([]string, len(limits))
	amounts := make([]decimal.Decimal, len(limits))
	for i, l := range limits {
		periods[i], amounts[i] = string(l.Period), l.Amount
	}
	q := dbsqlc.New(db)
	if err := q.DeleteLimitsExcept(ctx, dbsqlc.DeleteLimitsExceptParams{AccountID: accountID, Periods: periods}); err != nil {
		return fmt.Errorf("limit: set %s: %w", accountID, err)
	}
	if err := q.UpsertLimits(ctx, dbsqlc.UpsertLimitsParams{AccountID: accountID, Currency: currency, Periods: periods, Amounts: amounts}); err != nil {
		return fmt.Errorf("limit: set %s: %w", accountID, err)
	}
	if err := q.ApplyToOpenWindows(ctx, dbsqlc.ApplyToOpenWindowsParams{AccountID: accountID, Now: now}); err != nil {
		return fmt.Errorf("limit: set %s: open windows: %w", accountID, err)
	}
	return nil
}

// Configured returns the account's limits, shortest period first.
func Configured(ctx context.Context, db ledger.DBTX, accountID string) ([]Limit, error) {
	rows, err := dbsqlc.New(db).GetLimits(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("limit: limits of %s: %w", accountID, err)
	}
	out := make([]Limit, len(rows))
	for i, r := range rows {
		out[i] = Limit{Period: Period(r.Period), Amount: r.Amount}
	}
	sortByPeriod(out, func(l Limit) Period { return l.Period })
	return out, nil
}

// Usage is one limit with its window at an instant.
type Usage struct {
	Period Period `json:"period"`
	// Limit is the configured amount; WindowLimit what the window holds
	// (the same, or its utilization after a limit was lowered).
	Limit       decimal.Decimal `json:"limit"`
	WindowStart time.Time       `json:"windowStart"`
	WindowEnd   time.Time       `json:"windowEnd"`
	WindowLimit decimal.Decimal `json:"windowLimit"`
	Utilized    decimal.Decimal `json:"utilized"`
	Available   decimal.Decimal `json:"available"`
}

// Current returns each configured limit of the account with the
// utilization of its window containing at (zero when no booking opened
// it yet), shortest period first.
func Current(ctx context.Context, db ledger.DBTX, accountID string, at time.Time) ([]Usage, error) {
	periods, starts, _ := windowsAt(at)
	rows, err := dbsqlc.New(db).CurrentUsage(ctx, dbsqlc.CurrentUsageParams{AccountID: accountID, Periods: periods, Starts: starts})
	if err != nil {
		return nil, fmt.Errorf("limit: usage of %s: %w", accountID, err)
	}
	out := make([]Usage, len(rows))
	for i, r := range rows {
		p := Period(r.Period)
		start, end := p.Window(at)
		u := Usage{Period: p, Limit: r.Amount, WindowStart: start, WindowEnd: end, WindowLimit: r.Amount, Utilized: decimal.Zero}
		if r.WindowLimit != nil && r.Utilized != nil {
			u.WindowLimit, u.Utilized = *r.WindowLimit, *r.Utilized
		}
		u.Available = decimal.Max(u.WindowLimit.Sub(u.Utilized), decimal.Zero)
		out[i] = u
	}
	sortByPeriod(out, func(u Usage) Period { return u.Period })
	return out, nil
}

func sortByPeriod[T any](xs []T, period func(T) Period) {
	slices.SortStableFunc(xs, func(a, b T) int { return rank(period(a)) - rank(period(b)) })
}
