package routing_test

import (
	"fmt"
	"time"

	"github.com/paydispatch/paydispatch/calendar"
	"github.com/paydispatch/paydispatch/routing"
)

// A SEPA rail open 07:00 to its 16:00 cut-off, Berlin time, on TARGET2's
// business days: a payment requested for Christmas Eve afternoon is past
// that day's cut-off, so a ROLL takes it to the next business day, which
// skips the two Christmas holidays and the weekend.
func ExampleRail_DayFor() {
	rail := routing.Rail{Name: "SEPA", Type: routing.TypeSEPAJSON, TimeZone: "Europe/Berlin",
		Opens: 7 * time.Hour, Cutoff: 16 * time.Hour, Calendar: "TARGET2", Active: true}
	target2, _ := calendar.BuiltIn("TARGET2")
	berlin, _ := time.LoadLocation("Europe/Berlin")

	requested := time.Date(2026, 12, 24, 16, 30, 0, 0, berlin)
	day, _ := rail.DayFor(requested, &target2)
	fmt.Println("execution date:", day.Date, "cut-off:", day.Cutoff.Format("15:04 MST"))
	fmt.Println("past the cut-off:", day.Late(day.Start(requested)))

	next, _ := rail.NextDay(day, &target2)
	fmt.Println("rolled to:", next.Date, next.Date.Weekday(), "opening", next.Opens.Format("15:04 MST"))
	// Output:
	// execution date: 2026-12-24 cut-off: 16:00 CET
	// past the cut-off: true
	// rolled to: 2026-12-28 Monday opening 07:00 CET
}
