package bench

import (
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/pacing"
)

func TestCountRedriveWindows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		perWindow   map[int64]int
		first, last int64
		want        redriveWindows
	}{
		{
			name: "at the limit", perWindow: map[int64]int{100: 50, 101: 50, 102: 50}, first: 100, last: 102,
			want: redriveWindows{span: 3, most: 50, full: 3},
		},
		{
			// A window with no execution between the first and the last
			// is in the span, empty and below the limit.
			name: "an empty window inside", perWindow: map[int64]int{100: 50, 102: 50}, first: 100, last: 102,
			want: redriveWindows{span: 3, most: 50, full: 2, empty: 1, rest: 1},
		},
		{
			name: "one over, a short last", perWindow: map[int64]int{7: 50, 8: 51, 9: 12}, first: 7, last: 9,
			want: redriveWindows{span: 3, most: 51, full: 1, over: 1, rest: 1},
		},
		{
			name: "a single execution", perWindow: map[int64]int{42: 1}, first: 42, last: 42,
			want: redriveWindows{span: 1, most: 1, rest: 1},
		},
		{
			// No execution: the report's first and last stay 0.
			name: "none", perWindow: map[int64]int{}, first: 0, last: 0,
			want: redriveWindows{span: 1, empty: 1, rest: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := countRedriveWindows(tc.perWindow, tc.first, tc.last, 50); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCountPacingWindows(t *testing.T) {
	t.Parallel()
	w := func(counter, slots int) pacing.WindowCount {
		return pacing.WindowCount{Start: time.Unix(0, 0), Counter: counter, Slots: slots}
	}
	for _, tc := range []struct {
		name   string
		ws     []pacing.WindowCount
		events int
		want   pacingWindows
		ok     bool
	}{
		{"kept", []pacing.WindowCount{w(100, 100), w(100, 100), w(30, 30)}, 230, pacingWindows{used: 3, slots: 230}, true},
		{"none", nil, 0, pacingWindows{}, true},
		{"no window for events", nil, 5, pacingWindows{}, false},
		{"a window over", []pacing.WindowCount{w(101, 101), w(99, 99)}, 200, pacingWindows{used: 2, slots: 200, over: 1}, false},
		{"a counter off its slots", []pacing.WindowCount{w(100, 99), w(0, 0)}, 99, pacingWindows{used: 1, slots: 99, mismatched: 1}, false},
		{"a slot missing", []pacing.WindowCount{w(100, 100)}, 101, pacingWindows{used: 1, slots: 100}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := countPacingWindows(tc.ws, 100)
			if c != tc.want || c.ok(tc.events) != tc.ok {
				t.Errorf("got %+v (ok %v), want %+v (ok %v)", c, c.ok(tc.events), tc.want, tc.ok)
			}
		})
	}
}
