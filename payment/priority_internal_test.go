package payment

import (
	"fmt"
	"testing"
	"time"
)

// TestPriorityOrder: levers give slots by the time each payment began
// to wait, moved an hour earlier for HIGH and later for LOW, then by
// when it was stored: a HIGH payment overtakes the NORMAL ones that began
// to wait less than an hour before it, never older ones, and a LOW one
// is overtaken only by those that began less than an hour after it.
func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	for _, tc := range []struct {
		name string
		in   []moving
		want string
	}{
		{"arrival order", []moving{
			{key: "a", place: at(0), stored: at(0)}, {key: "b", place: at(0), stored: at(1)}, {key: "c", place: at(0), stored: at(1)},
		}, "[a b c]"},
		{"HIGH sent at 15:55 before a supplier run sent at 15:00", []moving{
			{key: "supplier", place: PriorityNormal.place(at(0)), stored: at(0)},
			{key: "salary", place: PriorityHigh.place(at(55)), stored: at(55)},
		}, "[salary supplier]"},
		{"HIGH sent more than an hour later waits", []moving{
			{key: "old", place: PriorityNormal.place(at(0)), stored: at(0)},
			{key: "high", place: PriorityHigh.place(at(61)), stored: at(61)},
		}, "[old high]"},
		{"NORMAL before LOW of the same instant", []moving{
			{key: "low", place: PriorityLow.place(at(0)), stored: at(0)},
			{key: "normal", place: PriorityNormal.place(at(30)), stored: at(30)},
		}, "[normal low]"},
		{"LOW that waited more than an hour goes first", []moving{
			{key: "low", place: PriorityLow.place(at(0)), stored: at(0)},
			{key: "normal", place: PriorityNormal.place(at(61)), stored: at(61)},
		}, "[low normal]"},
		{"equal places keep their order", []moving{
			{key: "x", place: at(5), stored: at(0)}, {key: "y", place: at(5), stored: at(0)}, {key: "z", place: at(5), stored: at(0)},
		}, "[x y z]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			priorityOrder(tc.in)
			var got []string
			for _, m := range tc.in {
				got = append(got, m.key)
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("%v, want %s", got, tc.want)
			}
		})
	}
}
