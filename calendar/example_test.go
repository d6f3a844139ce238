package calendar_test

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
)

// A payment requested for Christmas Day on a TARGET2 rail executes on the
// next business day: 26 December is closed too, then comes the weekend.
func Example() {
	ctx := context.Background()
	target2, err := calendar.Get(ctx, nil, calendar.NameTARGET2) // built in: no database needed
	if err != nil {
		fmt.Println(err)
		return
	}
	requested, _ := calendar.ParseDate("2026-12-25")
	execution, err := target2.NextOpen(requested)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(requested, requested.Weekday(), "->", execution, execution.Weekday())
	fmt.Println("TARGET2 closing days in 2026:", target2.ClosingDaysIn(2026))

	// The rail's cut-off, 16:00 in Frankfurt, on the execution date.
	frankfurt, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cut-off:", execution.At(16*time.Hour, frankfurt).UTC())
	// Output:
	// 2026-12-25 Friday -> 2026-12-28 Monday
	// TARGET2 closing days in 2026: [2026-01-01 2026-04-03 2026-04-06 2026-05-01 2026-12-25 2026-12-26]
	// cut-off: 2026-12-28 15:00:00 +0000 UTC
}

// An operator's calendar, stored and read back through a Cache.
func ExamplePut() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	_, err = calendar.Put(ctx, pool, calendar.Calendar{
		Name:        "SEPA_DE",
		Weekend:     []time.Weekday{time.Saturday, time.Sunday},
		ClosingDays: []calendar.Date{{Year: 2026, Month: time.December, Day: 24}, {Year: 2026, Month: time.December, Day: 31}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cache := calendar.NewCache(pool, calendar.CacheConfig{})
	c, err := cache.Get(ctx, "SEPA_DE")
	if err != nil {
		fmt.Println(err)
		return
	}
	next, _ := c.NextOpenAfter(calendar.Date{Year: 2026, Month: time.December, Day: 23})
	fmt.Println(c.Name, c.Weekend, c.ClosingDays, "after 2026-12-23:", next)

	_, err = calendar.Put(ctx, pool, calendar.Calendar{Name: "SEPA DE", Weekend: []time.Weekday{7}})
	fmt.Println(err)
	// Output:
	// SEPA_DE [Sunday Saturday] [2026-12-24 2026-12-31] after 2026-12-23: 2026-12-25
	// invalid calendar: name: want 1-100 letters, digits, '_', '.', ':' or '-'; weekend[0]: want a day of the week, 0 (Sunday) to 6 (Saturday)
}
