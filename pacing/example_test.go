package pacing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/internal/testkit/pgtest"
	"github.com/paydispatch/paydispatch/pacing"
)

// A config of 100 events per 4 seconds, then slots for one event and for a
// bulk file's events at one instant. An event id given again gets its slot
// back.
func Example() {
	ctx := context.Background()
	pool, drop, err := pgtest.Open() // a database with the pacer's tables
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	l := pacing.New(pacing.Config{Pool: pool})
	window, _ := pacing.ParseISODuration("PT4S")
	if _, err := l.PutConfig(ctx, pacing.Limit{Name: "default", MaxPerWindow: 100, Window: window, Headroom: pacing.DefaultHeadroom}); err != nil {
		panic(err)
	}
	at := time.Date(2030, 11, 22, 16, 0, 0, 0, time.UTC)
	slot, err := l.Assign(ctx, "default", "pay-0001", at)
	if err != nil {
		panic(err)
	}
	inWindow := !slot.ScheduledTime.Before(at) && slot.ScheduledTime.Before(at.Add(window))
	fmt.Println(slot.Status, slot.WindowStart.UTC().Format(time.TimeOnly), inWindow)

	again, _ := l.Assign(ctx, "default", "pay-0001", at)
	fmt.Println(again.Status, again.ScheduledTime.Equal(slot.ScheduledTime))

	events := []pacing.Event{{ID: "pay-0002", RequestedTime: at}, {ID: "pay-0003", RequestedTime: at}}
	slots, err := l.AssignBulk(ctx, "default", events) // one round trip per instant and 5,000 events
	if err != nil {
		panic(err)
	}
	for _, s := range slots {
		fmt.Println(s.EventID, s.Status, s.WindowStart.UTC().Format(time.TimeOnly))
	}
	// Output:
	// NEW 16:00:00 true
	// EXISTING true
	// pay-0002 NEW 16:00:00
	// pay-0003 NEW 16:00:00
}

func ExampleParseISODuration() {
	d, _ := pacing.ParseISODuration("PT1M30S")
	fmt.Println(d, pacing.FormatISODuration(500*time.Millisecond))
	// Output: 1m30s PT0.5S
}
