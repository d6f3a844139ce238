package outboxtest

import "testing"

// TestLedgerProblems: the scenario's rail check passes a good run (a
// throughput participant may arrive out of order) and catches each way
// of losing, repeating or reordering an instruction.
func TestLedgerProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		spoil func(l *Ledger)
		want  int
	}{
		{"a good run", func(*Ledger) {}, 0},
		{"a strict participant out of order", func(l *Ledger) { part(l, "s2", func(v *LedgerParticipant) { v.Reordered = 1 }) }, 1},
		{"a duplicate", func(l *Ledger) {
			l.Received++
			l.Duplicates++
			part(l, "t1", func(v *LedgerParticipant) { v.Duplicates = 1 })
		}, 2},
		{"a strict participant's last missing", func(l *Ledger) {
			l.Unique--
			l.Received--
			part(l, "s6", func(v *LedgerParticipant) { v.Unique--; v.Highest-- })
		}, 2},
		{"a throughput gap", func(l *Ledger) {
			l.Unique--
			l.Received--
			part(l, "t4", func(v *LedgerParticipant) { v.Unique--; v.Gaps = 1 })
		}, 3},
		{"two keys with one sequence", func(l *Ledger) { part(l, "t3", func(v *LedgerParticipant) { v.SequenceReused = 1 }) }, 1},
	} {
		l := Ledger{Unique: total, Received: total, Participants: map[string]LedgerParticipant{}}
		for _, p := range strict {
			l.Participants[p] = LedgerParticipant{Unique: perStrict, Highest: perStrict}
		}
		for _, p := range throughput {
			l.Participants[p] = LedgerParticipant{Unique: perThrough, Highest: perThrough, Reordered: 40}
		}
		tt.spoil(&l)
		if got := ledgerProblems(l); len(got) != tt.want {
			t.Errorf("%s: %d problems, want %d: %q", tt.name, len(got), tt.want, got)
		}
	}
}

func part(l *Ledger, p string, f func(*LedgerParticipant)) {
	v := l.Participants[p]
	f(&v)
	l.Participants[p] = v
}
