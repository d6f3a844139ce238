package limit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/paydispatch/paydispatch/internal/field"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/limit/internal/dbsqlc"
	"github.com/paydispatch/paydispatch/money"
)

// BookRequest asks to book an amount against an account's limits.
type BookRequest struct {
	AccountID string
	Amount    decimal.Decimal
	Currency  string // the account's
	// At picks the windows. Pass the same instant when the step is
	// delivered again (the payment's execution time, from the process
	// data), not the time of delivery.
	At time.Time
	// Reference names the writer, '<processId>:BookLimits'; required.
	Reference string
}

// Booking is what one booking put into one window.
type Booking struct {
	Reference   string          `json:"reference"`
	AccountID   string          `json:"accountId"`
	Period      Period          `json:"period"`
	WindowStart time.Time       `json:"windowStart"`
	Amount      decimal.Decimal `json:"amount"`
	ReversedAt  *time.Time      `json:"reversedAt,omitempty"`
}

// Booked is the outcome of Book.
type Booked struct {
	// Bookings has one entry per configured period (none: the account has
	// no limits, and nothing was booked).
	Bookings []Booking `json:"bookings"`
	// Replayed: the reference had been booked before; nothing changed.
	Replayed bool `json:"replayed"`
}

// Book adds the amount to the account's window of every configured
// period at r.At, all or nothing: if any window would go over its limit,
// nothing is booked and the error is LIMIT_EXCEEDED, naming the shortest
// such period with its limit, utilization and the amount. The windows a
// booking needs are created on the way. The same reference again returns
// the first booking (Replayed).
func Book(ctx context.Context, db ledger.DBTX, r BookRequest) (Booked, error) {
	var v field.Invalid
	if !field.ValidID(r.AccountID) {
		v.Add("accountId", "required: 1 to 64 letters, digits, '-', '_' or '.'")
	}
	if err := money.CheckAmount(r.Amount, r.Currency); err != nil {
		v.Add("amount", err.Error())
	}
	if r.Reference == "" || len(r.Reference) > 200 {
		v.Add("reference", "required, at most 200 characters, e.g. '<processId>:BookLimits'")
	}
	if r.At.IsZero() {
		v.Add("at", "required")
	}
	if err := ledger.InvalidArgument("limit booking", v.Fields); err != nil {
		return Booked{}, err
	}
	q := dbsqlc.New(db)
	periods, starts, ends := windowsAt(r.At)
	if err := q.EnsureWindows(ctx, dbsqlc.EnsureWindowsParams{AccountID: r.AccountID, Periods: periods, Starts: starts, Ends: ends}); err != nil {
		return Booked{}, fmt.Errorf("limit: book %s: windows: %w", r.Reference, err)
	}
	windows, err := q.LockWindows(ctx, dbsqlc.LockWindowsParams{AccountID: r.AccountID, Periods: periods, Starts: starts})
	if err != nil {
		return Booked{}, fmt.Errorf("limit: book %s: lock windows: %w", r.Reference, err)
	}
	// After the locks: a concurrent delivery of this step has committed.
	if prior, err := q.BookingsByReference(ctx, r.Reference); err != nil {
		return Booked{}, fmt.Errorf("limit: book %s: %w", r.Reference, err)
	} else if len(prior) > 0 {
		return replay(r, prior)
	}
	var exceeded []dbsqlc.LimitWindow
	for _, w := range windows {
		if w.Currency != r.Currency {
			return Booked{}, ledger.Refuse(ledger.CodeCurrencyMismatch,
				fmt.Sprintf("the limits of account %s are in %s, not %s", r.AccountID, w.Currency, r.Currency), nil)
		}
		if w.Utilized.Add(r.Amount).GreaterThan(w.LimitAmount) {
			exceeded = append(exceeded, w)
		}
	}
	if len(exceeded) > 0 {
		return Booked{}, limitExceeded(r, exceeded)
	}
	if len(windows) == 0 {
		return Booked{Bookings: []Booking{}}, nil
	}
	lockedPeriods := make([]string, len(windows))
	lockedStarts := make([]time.Time, len(windows))
	for i, w := range windows {
		lockedPeriods[i], lockedStarts[i] = w.Period, w.WindowStart
	}
	rows, err := q.BookWindows(ctx, dbsqlc.BookWindowsParams{
		AccountID: r.AccountID, Periods: lockedPeriods, Starts: lockedStarts, Amount: r.Amount, Reference: r.Reference,
	})
	if err != nil {
		return Booked{}, fmt.Errorf("limit: book %s: %w", r.Reference, err)
	}
	return Booked{Bookings: bookings(rows)}, nil
}

// replay answers a reference booked before: the same booking, or
// REFERENCE_CONFLICT when it was another account or amount, or reversed.
func replay(r BookRequest, prior []dbsqlc.LimitBooking) (Booked, error) {
	for _, b := range prior {
		if b.AccountID != r.AccountID || !b.Amount.Equal(r.Amount) {
			return Booked{}, ledger.Refuse(ledger.CodeReferenceConflict,
				fmt.Sprintf("reference %s booked %s on account %s", r.Reference, b.Amount, b.AccountID), map[string]string{"reference": r.Reference})
		}
		if b.ReversedAt != nil {
			return Booked{}, ledger.Refuse(ledger.CodeReferenceConflict,
				"reference "+r.Reference+" was booked and reversed", map[string]string{"reference": r.Reference})
		}
	}
	return Booked{Bookings: bookings(prior), Replayed: true}, nil
}

func limitExceeded(r BookRequest, exceeded []dbsqlc.LimitWindow) error {
	sortByPeriod(exceeded, func(w dbsqlc.LimitWindow) Period { return Period(w.Period) })
	first := exceeded[0]
	names := make([]string, len(exceeded))
	for i, w := range exceeded {
		names[i] = w.Period
	}
	return ledger.Refuse(ledger.CodeLimitExceeded,
		fmt.Sprintf("%s limit of account %s: %s %s used of %s, %s more would exceed it (periods over: %s); nothing was booked",
			first.Period, r.AccountID, first.Utilized, r.Currency, first.LimitAmount, r.Amount, strings.Join(names, ", ")),
		map[string]string{
			"accountId": r.AccountID, "period": first.Period, "limit": first.LimitAmount.String(),
			"utilized": first.Utilized.String(), "amount": r.Amount.String(),
			"windowStart": first.WindowStart.UTC().Format(time.RFC3339), "periods": strings.Join(names, ","),
		})
}

// Reversal is the outcome of Reverse.
type Reversal struct {
	// Windows lists what was taken out of which window (empty when there
	// was nothing to reverse).
	Windows []Booking `json:"windows"`
	// AlreadyReversed: the reference's booking had been reversed before.
	AlreadyReversed bool `json:"alreadyReversed"`
}

// Reverse takes a booking out of exactly the windows it went into, however
// long ago (a booking at 23:59:59 is reversed from that day's window, not
// from the day the reversal runs in). Once: a second call changes nothing
// (AlreadyReversed), and a reference never booked is nothing to reverse,
// so a compensation can always call it.
func Reverse(ctx context.Context, db ledger.DBTX, reference string) (Reversal, error) {
	q := dbsqlc.New(db)
	if _, err := q.LockBookedWindows(ctx, reference); err != nil {
		return Reversal{}, fmt.Errorf("limit: reverse %s: lock windows: %w", reference, err)
	}
	prior, err := q.BookingsByReference(ctx, reference)
	if err != nil {
		return Reversal{}, fmt.Errorf("limit: reverse %s: %w", reference, err)
	}
	if _, err := q.ReverseBookings(ctx, reference); err != nil {
		return Reversal{}, fmt.Errorf("limit: reverse %s: %w", reference, err)
	}
	out := Reversal{Windows: []Booking{}}
	for _, b := range prior {
		if b.ReversedAt != nil {
			out.AlreadyReversed = true
			continue
		}
		out.Windows = append(out.Windows, booking(b))
	}
	return out, nil
}

func bookings(rows []dbsqlc.LimitBooking) []Booking {
	out := make([]Booking, len(rows))
	for i, b := range rows {
		out[i] = booking(b)
	}
	sortByPeriod(out, func(b Booking) Period { return b.Period })
	return out
}

func booking(b dbsqlc.LimitBooking) Booking {
	return Booking{Reference: b.Reference, AccountID: b.AccountID, Period: Period(b.Period),
		WindowStart: b.WindowStart.UTC(), Amount: b.Amount, ReversedAt: b.ReversedAt}
}
