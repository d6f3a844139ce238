package pacing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paydispatch/paydispatch/pacing"
)

// A config of 100 events per 4 seconds, then slots for one event and for a
// bulk file's events at one instant. pool is a pgx pool on a database with
// paydispatch's schema (postgres.Migrate).
func Example() {
	var pool *pgxpool.Pool // postgres.Open(...).Pool
	if pool == nil {
		return // a sketch: open the database first
	}
	ctx := context.Background()
	l := pacing.New(pool)
	window, _ := pacing.ParseISODuration("PT4S")
	if _, err := l.PutConfig(ctx, pacing.Config{Name: "default", MaxPerWindow: 100, Window: window, Headroom: pacing.DefaultHeadroom}); err != nil {
		panic(err)
	}
	at := time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)
	slot, err := l.Assign(ctx, "default", "pay-0001", at) // the same id again: the same slot
	if err != nil {
		panic(err)
	}
	fmt.Println(slot.Status, !slot.ScheduledTime.Before(at))

	events := []pacing.Event{{ID: "pay-0002", RequestedTime: at}, {ID: "pay-0003", RequestedTime: at}}
	slots, err := l.AssignBulk(ctx, "default", events) // one round trip per instant and 5,000 events
	if err != nil {
		panic(err)
	}
	fmt.Println(len(slots))
}

func ExampleParseISODuration() {
	d, _ := pacing.ParseISODuration("PT1M30S")
	fmt.Println(d, pacing.FormatISODuration(500*time.Millisecond))
	// Output: 1m30s PT0.5S
}
