package railsim

import (
	"testing"
	"time"
)

// TestSequenceBits takes numbers on both sides of a word's edges and
// below zero: each is new once, then taken.
func TestSequenceBits(t *testing.T) {
	t.Parallel()
	for _, seqs := range [][]int64{
		{0, 63, 64, 127, 128},
		{-1, -64, -65, 1 << 40, 1<<40 + 1},
		{5, 4, 3, 2, 1},
	} {
		p := &participant{taken: make(map[int64]uint64)}
		for _, s := range seqs {
			if p.take(s) {
				t.Fatalf("%v: %d reported taken before it was", seqs, s)
			}
		}
		for _, s := range seqs {
			if !p.take(s) {
				t.Fatalf("%v: %d not reported taken the second time", seqs, s)
			}
		}
		if p.take(1000) {
			t.Fatalf("%v: 1000 reported taken", seqs)
		}
	}
}

// TestLedgerKeepsRecords reads back what take stored: the reference,
// the arrival, the participant and value date, and a refusal's words.
func TestLedgerKeepsRecords(t *testing.T) {
	t.Parallel()
	l := newLedger("R-")
	at := time.Date(2026, 11, 29, 15, 55, 0, 123456789, time.UTC)
	accept := func() (string, string) { return "", "" }
	refuse := func() (string, string) { return "AC06", "account blocked" }
	l.take(send{key: "k1", participant: "p", seq: 1, valueDate: "2026-11-29"}, at, accept)
	l.take(send{key: "k2", participant: "q", seq: 1, valueDate: "2026-11-30"}, at.Add(time.Second), refuse)

	got, ok := l.lookup("k1")
	if !ok || !got.accepted || got.reference != "R-000000000001" || !got.receivedAt.Equal(at) ||
		got.participant != "p" || got.seq != 1 || got.valueDate != "2026-11-29" || got.code != "" {
		t.Fatalf("k1: %+v", got)
	}
	got, ok = l.lookup("k2")
	if !ok || got.accepted || got.reference != "" || got.code != "AC06" || got.message != "account blocked" ||
		got.participant != "q" || got.valueDate != "2026-11-30" {
		t.Fatalf("k2: %+v", got)
	}
	// A lifted refusal is accepted on its next send, its words gone.
	if !l.lift("k2") {
		t.Fatal("lift k2: false")
	}
	rec, dup := l.take(send{key: "k2", participant: "q", seq: 1, valueDate: "2026-11-30"}, at.Add(2*time.Second), refuse)
	if dup || !rec.accepted || rec.reference != "R-000000000002" || rec.code != "" || rec.message != "" {
		t.Fatalf("k2 after lift: %+v dup %v", rec, dup)
	}
	if n := len(l.refusals); n != 0 {
		t.Fatalf("refusals kept after the lift: %d", n)
	}
}

// TestKeyedRoundTrips: a canonical UUID key is held as its bytes and
// read back as the same text; any other key, even a UUID in another
// spelling, is held as sent, apart from its canonical twin.
func TestKeyedRoundTrips(t *testing.T) {
	t.Parallel()
	k := newKeyed()
	keys := []string{
		"0b1e6a4e-8c1f-4d2a-9f3e-5a6b7c8d9e0f",
		"0B1E6A4E-8C1F-4D2A-9F3E-5A6B7C8D9E0F",
		"{0b1e6a4e-8c1f-4d2a-9f3e-5a6b7c8d9e0f}",
		"urn:uuid:0b1e6a4e-8c1f-4d2a-9f3e-5a6b7c8d9e0f",
		"0b1e6a4e8c1f4d2a9f3e5a6b7c8d9e0f",
		"0b1e6a4e-8c1f-4d2a-9f3e-5a6b7c8d9e0g",
		"pay-1", "",
	}
	for i, key := range keys {
		k.put(key, entry{seq: int64(i + 1)})
	}
	if len(k.ids) != 1 || k.len() != len(keys) {
		t.Fatalf("%d held as UUIDs, %d in all; want 1 and %d", len(k.ids), k.len(), len(keys))
	}
	seen := map[string]int64{}
	k.each(func(key string, e entry) { seen[key] = e.seq })
	for i, key := range keys {
		if e, ok := k.get(key); !ok || e.seq != int64(i+1) || seen[key] != int64(i+1) {
			t.Errorf("%q: got %+v %v, listed with %d; want seq %d", key, e, ok, seen[key], i+1)
		}
	}
	k.remove(keys[0])
	k.remove(keys[1])
	if _, ok := k.get(keys[0]); ok || k.len() != len(keys)-2 {
		t.Fatalf("after two removals: %d held", k.len())
	}
}
