package limit_test

import (
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/ledger"
	"github.com/paydispatch/paydispatch/ledger/limit"
)

// A DAY and a MONTH limit; a booking that would exceed the day is refused
// whole, and a reversal frees exactly what was booked.
func Example() {
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	when := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)
	_ = limit.Set(ctx, pool, "CORP-1", "EUR", []limit.Limit{
		{Period: limit.Day, Amount: dec("1000")},
		{Period: limit.Month, Amount: dec("20000")},
	}, when)

	b, err := limit.Book(ctx, pool, limit.BookRequest{AccountID: "CORP-1", Amount: dec("600"), Currency: "EUR", At: when, Reference: "proc-1:BookLimits"})
	fmt.Println(len(b.Bookings), err)

	_, err = limit.Book(ctx, pool, limit.BookRequest{AccountID: "CORP-1", Amount: dec("500"), Currency: "EUR", At: when, Reference: "proc-2:BookLimits"})
	var le *ledger.Refusal
	if ok := asRefusal(err, &le); ok {
		fmt.Println(le.Code, le.Details["period"], le.Details["limit"], le.Details["utilized"], le.Details["amount"])
	}

	r, _ := limit.Reverse(ctx, pool, "proc-1:BookLimits")
	fmt.Println(len(r.Windows), r.AlreadyReversed)
	r, _ = limit.Reverse(ctx, pool, "proc-1:BookLimits")
	fmt.Println(len(r.Windows), r.AlreadyReversed)

	use, _ := limit.Current(ctx, pool, "CORP-1", when)
	for _, u := range use {
		fmt.Println(u.Period, u.WindowStart.Format(time.DateOnly), u.Utilized, u.Available)
	}
	// Output:
	// 2 <nil>
	// LIMIT_EXCEEDED DAY 1000 600 500
	// 2 false
	// 0 true
	// DAY 2026-11-22 0 1000
	// MONTH 2026-11-01 0 20000
}

func ExamplePeriod_Window() {
	start, end := limit.Week.Window(time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)) // a Sunday
	fmt.Println(start.Format(time.DateOnly), start.Weekday(), end.Format(time.DateOnly))
	// Output: 2026-11-16 Monday 2026-11-23
}
