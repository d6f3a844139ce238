package pacing

import (
	"testing"
	"time"

	"github.com/paydispatch/paydispatch/pacing/internal/dbsqlc"
)

// TestSpill: after a lowered limit, the windows holding more than it
// carry the rest into the next ones (empty windows between take up to
// the limit), and moved events begin in the window after the last carry
// was absorbed.
func TestSpill(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rows := func(counts map[int]int32) []dbsqlc.WindowsFromRow {
		var out []dbsqlc.WindowsFromRow
		for s := 0; s < 100; s++ {
			if n, ok := counts[s]; ok {
				out = append(out, dbsqlc.WindowsFromRow{WindowStart: at(s), SlotCount: n})
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		counts map[int]int32
		max    int
		want   time.Time
	}{
		{"nothing over the limit", map[int]int32{0: 8, 1: 8, 5: 3}, 8, time.Time{}},
		{"no windows", nil, 8, time.Time{}},
		{"30 a second for 6 s, lowered to 8", map[int]int32{0: 30, 1: 30, 2: 30, 3: 30, 4: 30, 5: 30}, 8, at(23)},
		{"carried through empty windows", map[int]int32{0: 20}, 8, at(3)},
		{"absorbed in a window with room", map[int]int32{0: 10, 1: 2}, 8, at(2)},
		{"a later run over the limit", map[int]int32{0: 5, 3: 12, 4: 12}, 10, at(6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := spill(rows(tc.counts), tc.max, time.Second); !got.Equal(tc.want) {
				t.Errorf("spill: %s, want %s", got, tc.want)
			}
		})
	}
}
